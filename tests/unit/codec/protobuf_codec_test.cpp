// The Protobuf codec through its public API (cppcdc/protobuf.hpp): the message-index array,
// round trips of golden and generated events, the golden file, what the decoder refuses, keys,
// Debian's python3-protobuf reading our bytes with classes Debian's protoc generated from the same
// .proto files (tests/protobuf_reader.py: no cppcdc code), and the Confluent framing against
// the schema registry DOUBLE (tests/integration/schema_registry_double.py).

#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "avro_expect.hpp"
#include "cppcdc/protobuf.hpp"
#include "schema_registry_double.hpp"
#include "unit/codec/generated_events.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using test::as_int;
using test::expect_same;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string encoded(Encoder& encoder, const Event& e, std::string_view destination = {}) {
  ByteBuffer out;
  auto st = encoder.encode_to(destination, e, out);
  EXPECT_TRUE(st) << st.error().report();
  return std::string(out.view());
}

std::string encoded_key(Encoder& encoder, const Event& e, std::string_view destination = {}) {
  ByteBuffer out;
  auto keyed = encoder.encode_key_to(destination, e, out);
  EXPECT_TRUE(keyed) << keyed.error().report();
  EXPECT_TRUE(keyed && *keyed);
  return std::string(out.view());
}

std::vector<Event> generated(int n, std::uint32_t seed) {
  test::EventGenerator gen(seed);
  std::vector<Event> out;
  for (int i = 0; i < n; ++i) out.push_back(gen.next());
  out.push_back(test::full_event());
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int c : b) out.push_back(static_cast<char>(c));
  return out;
}

const std::string kProtoDir = std::string(CPPCDC_SOURCE_DIR) + "/src/codec/protobuf";

// ---- the message-index array -----------------------------------------------------------------

TEST(ProtobufCodec, TheMessagesAndTheirIndexPathsComeFromTheDescriptors) {
  EXPECT_EQ(protobuf_event_message_name(), "cppcdc.v1.Event");
  EXPECT_EQ(protobuf_key_message_name(), "cppcdc.v1.EventKey");
  // Event is declared after Source, Snapshot, Transaction and PrimaryKey.
  EXPECT_EQ(protobuf_event_message_index(), std::vector<int>{4});
  EXPECT_EQ(protobuf_key_message_index(), std::vector<int>{0});
  EXPECT_EQ(protobuf_event_schema(), read_file(kProtoDir + "/event.proto"));
  EXPECT_EQ(protobuf_key_schema(), read_file(kProtoDir + "/event_key.proto"));
}

TEST(ProtobufCodec, MessageIndexesAreZigZagVarintsWithALoneZeroForTheFirstMessage) {
  const std::vector<std::pair<std::vector<int>, std::string>> cases = {
      {{0}, bytes({0x00})},
      {{}, bytes({0x00})},
      {{4}, bytes({0x02, 0x08})},
      {{1, 2}, bytes({0x04, 0x02, 0x04})},
      {{0, 0}, bytes({0x04, 0x00, 0x00})},
      {{70}, bytes({0x02, 0x8C, 0x01})},
  };
  for (const auto& [path, want] : cases) {
    std::string out = "x";
    append_protobuf_message_index(path, out);
    EXPECT_EQ(out, "x" + want);
    const std::string input = want + "rest";
    auto back = read_protobuf_message_index(input);
    ASSERT_TRUE(back) << back.error().report();
    EXPECT_EQ(back->first, path.empty() ? std::vector<int>{0} : path);
    EXPECT_EQ(back->second, "rest");
  }
  // [0] written out in full (length 1, index 0), as some writers do, reads as [0] too.
  auto full = read_protobuf_message_index(bytes({0x02, 0x00}));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->first, std::vector<int>{0});
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "ends inside"},
      {bytes({0x80}), "ends inside"},
      {bytes({0x01, 0x00}), "claims -1 indexes"},
      {bytes({0x06, 0x02}), "claims 3 indexes, and 1 bytes follow"},
      {bytes({0x02, 0x03}), "negative index (-2)"},
      {bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), "longer than 5 bytes"},
      {bytes({0xFF, 0xFF, 0xFF, 0xFF, 0x7F}), "does not fit 32 bits"},
  };
  for (const auto& [input, why] : bad) {
    auto r = read_protobuf_message_index(input);
    ASSERT_FALSE(r) << why;
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
    EXPECT_CONTAINS(r.error().report(), why);
  }
}

// ---- bare ------------------------------------------------------------------------------------

TEST(ProtobufCodec, RoundTripsGeneratedEvents) {
  auto encoder = make_protobuf_encoder();
  auto decoder = make_protobuf_decoder();
  EXPECT_EQ(encoder->content_type(), "application/x-protobuf");
  EXPECT_FALSE(encoder->json_text());
  for (const Event& e : generated(3000, 13)) {
    const std::string record = encoded(*encoder, e);
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report() << "\n" << e.to_json();
    ASSERT_EQ(*back, e) << e.to_json() << "\n" << back->to_json();
    EXPECT_EQ(back->before_is_key_only(), e.before_is_key_only());
  }
}

TEST(ProtobufCodec, MatchesTheGoldenFile) {
  const fs::path golden = fs::path(CPPCDC_GOLDEN_DIR) / "codec" / "protobuf_event.bin";
  auto encoder = make_protobuf_encoder();
  const std::string record = encoded(*encoder, test::full_event());
  if (std::getenv("CPPCDC_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary) << record;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " (CPPCDC_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(record, read_file(golden))
      << "the Protobuf bytes changed: check that event.proto's field numbers still hold";
  auto back = make_protobuf_decoder()->decode(read_file(golden));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, test::full_event());
}

TEST(ProtobufCodec, RefusesDamagedBytesAndNeverReadsAPrefixAsTheEvent) {
  auto encoder = make_protobuf_encoder();
  auto decoder = make_protobuf_decoder();
  const Event e = test::full_event();
  const std::string record = encoded(*encoder, e);
  // Protobuf has no end marker: a prefix that stops between two fields is a message of the
  // fields before it. Such a prefix cannot give back the event; every other one is refused.
  int refused = 0;
  for (std::size_t n = 0; n < record.size(); ++n) {
    auto r = decoder->decode(record.substr(0, n));
    if (r) {
      EXPECT_NE(*r, e) << "a prefix of " << n << " bytes";
      continue;
    }
    ++refused;
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData) << r.error().report();
  }
  EXPECT_GT(refused, static_cast<int>(record.size()) * 9 / 10);
  const auto refusal = [&](const std::string& bytes) {
    auto r = decoder->decode(bytes);
    EXPECT_FALSE(r) << "decoded";
    if (r) return std::string();
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData) << r.error().report();
    return r.error().report();
  };
  // A field cut short, a tag with the undefined wire type 7, and an op that is not UTF-8.
  EXPECT_CONTAINS(refusal(record.substr(0, 5)), "not a cppcdc.v1.Event message");
  EXPECT_CONTAINS(refusal(bytes({0x0F, 0x01})), "not a cppcdc.v1.Event message");
  EXPECT_CONTAINS(refusal(bytes({0x1A, 0x02, 0xC3, 0x28})), "not a cppcdc.v1.Event message");
  // Fields that parse but make no event: no op, an unknown one, a version above 16 bits, an
  // image that is not JSON, and a key-only before-image that lists unavailable columns.
  EXPECT_CONTAINS(refusal(""), "unknown op ''");
  EXPECT_CONTAINS(refusal(bytes({0x1A, 0x03, 'h', 'o', 'p'})), "unknown op 'hop'");
  EXPECT_CONTAINS(refusal(record + bytes({0x58, 0x80, 0x80, 0x04})),
                  "'envelope_version' is out of range: 65536");
  EXPECT_CONTAINS(refusal(record + bytes({0x0A, 0x01, '{'})), "before");
  Event key_only = e;
  key_only.before = BeforeKeyOnly{{{"id", "42", false}}};
  // Field 14 (before_unavailable_columns) with one name, appended.
  EXPECT_CONTAINS(refusal(encoded(*encoder, key_only) + bytes({0x72, 0x01, 'x'})),
                  "key-only before image");
}

TEST(ProtobufCodec, TextThatIsNotUtf8CannotBeWrittenAndTheErrorNamesTheField) {
  auto encoder = make_protobuf_encoder();
  for (const auto& [field, set] : std::vector<std::pair<std::string, std::function<void(Event&)>>>{
           {"table", [](Event& e) { e.table = "t\xFF"; }},
           {"schema", [](Event& e) { e.schema = "\xC0\xAF"; }},
           {"source.offset", [](Event& e) { e.source.offset = "\xED\xA0\x80"; }},
           {"primary_key", [](Event& e) { e.primary_key = std::vector<std::string>{"\x80"}; }},
           {"unavailable_columns", [](Event& e) { e.unavailable_columns = {"\xF4\x90\x80\x80"}; }},
       }) {
    Event e = test::full_event();
    set(e);
    ByteBuffer out;
    out.raw("prefix|");
    auto st = encoder->encode(e, out);
    ASSERT_FALSE(st) << field;
    EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
    EXPECT_CONTAINS(st.error().report(), "the event's " + field + " is not valid UTF-8");
    EXPECT_EQ(out.view(), "prefix|") << "nothing is written for a refused event";
  }
  // Four-byte sequences and the largest code point are fine.
  Event e = test::full_event();
  e.table = "\xF0\x9D\x84\x9E \xF4\x8F\xBF\xBF";
  auto back = make_protobuf_decoder()->decode(encoded(*encoder, e));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(back->table, e.table);
}

TEST(ProtobufCodec, KeysHaveTheThreeOutcomes) {
  auto encoder = make_protobuf_encoder();
  Event e = test::full_event();
  ByteBuffer out;
  out.raw("prefix|");
  auto keyed = encoder->encode_key(e, out);
  ASSERT_TRUE(keyed);
  ASSERT_TRUE(*keyed);
  EXPECT_EQ(out.view().substr(0, 7), "prefix|");
  auto key = decode_protobuf_key(out.view().substr(7));
  ASSERT_TRUE(key) << key.error().report();
  EXPECT_EQ(*key, R"({"id":"42"})");

  std::vector<Event> keyless(4, e);
  keyless[0].op = Operation::kTruncate;
  keyless[0].after.reset();
  keyless[0].before = BeforeImage{};
  keyless[1].primary_key.reset();
  keyless[2].primary_key = std::vector<std::string>{"id", "missing"};
  keyless[3].primary_key = std::vector<std::string>{};
  for (const Event& k : keyless) {
    out.clear();
    out.raw("prefix|");
    auto r = encoder->encode_key(k, out);
    ASSERT_TRUE(r);
    EXPECT_FALSE(*r);
    EXPECT_EQ(out.view(), "prefix|") << "no key is no bytes, never an empty key";
  }
  // A key value that is not UTF-8 is an error, not "no key".
  Event bad = e;
  bad.after->front().text = "4\xFF";
  out.clear();
  auto refused = encoder->encode_key(bad, out);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidData);
  EXPECT_TRUE(out.empty());
  // A key record without its field is refused.
  auto empty = decode_protobuf_key("");
  ASSERT_FALSE(empty);
  EXPECT_CONTAINS(empty.error().report(), "holds no key");
}

// ---- read by python3-protobuf ----------------------------------------------------------------

// Runs tests/protobuf_reader.py over `records`; one parsed JSON object per record.
std::vector<json::object> python_read(const std::vector<std::string>& records, bool framed,
                                      bool key) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("protobuf-py-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string command = "/usr/bin/python3 " + std::string(CPPCDC_SOURCE_DIR) +
                        "/tests/protobuf_reader.py " + kProtoDir + (framed ? " --framed" : "") +
                        (key ? " --key" : "");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const fs::path file = dir / (std::to_string(i) + ".bin");
    std::ofstream(file, std::ios::binary) << records[i];
    command += " " + file.string();
  }
  std::vector<json::object> out;
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return out;
  std::string text;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << "python3-protobuf could not read our bytes (apt-get install "
                          "python3-protobuf protobuf-compiler)";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) out.push_back(json::parse(line).as_object());
  fs::remove_all(dir);
  return out;
}

TEST(ProtobufCodec, PythonProtobufReadsOurBytesFieldByField) {
  auto encoder = make_protobuf_encoder();
  const std::vector<Event> events = generated(300, 29);
  std::vector<std::string> records;
  for (const Event& e : events) records.push_back(encoded(*encoder, e));
  const auto decoded = python_read(records, false, false);
  ASSERT_EQ(decoded.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i) + ": " + events[i].to_json());
    expect_same(decoded[i].at("datum").as_object(), events[i]);
    EXPECT_TRUE(decoded[i].at("same_bytes").as_bool())
        << "python3-protobuf writes the message with other bytes";
  }
  const auto keys = python_read({encoded_key(*encoder, test::full_event())}, false, true);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].at("datum").at("key").as_string(), R"({"id":"42"})");
  EXPECT_TRUE(keys[0].at("same_bytes").as_bool());
}

// ---- the Confluent framing, against the registry double --------------------------------------

ProtobufCodecOptions registry_options(const RegistryDouble& registry, bool auto_register) {
  ProtobufCodecOptions o;
  o.registry_config.url = registry.url();
  o.registry_config.auto_register = auto_register;
  o.registry_config.retry = RegistryRetryPolicy::none();
  auto client = make_schema_registry_client(o.registry_config);
  EXPECT_TRUE(client);
  o.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  return o;
}

// Through the "apicurio" client (against the Apicurio DOUBLE): the global ids, then the
// same message indexes, and our decoder reads the records back.
TEST(ProtobufCodec, ApicurioGlobalIdsFrameTheRecordsAndOurDecoderReadsThemBack) {
  RegistryDouble registry({}, RegistryDouble::kApicurio);
  ASSERT_TRUE(registry.up());
  ProtobufCodecOptions options;
  options.registry_config.type = SchemaRegistryType::kApicurio;
  options.registry_config.url = registry.url();
  options.registry_config.retry = RegistryRetryPolicy::none();
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client) << client.error().report();
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  auto encoder = make_protobuf_encoder(options);
  const Event e = test::full_event();
  const std::string topic = "shop.public.orders";
  const std::string value = encoded(*encoder, e, topic);
  const std::string key = encoded_key(*encoder, e, topic);
  // Global ids 101 and 102 (0x65, 0x66), message indexes [4] and [0].
  EXPECT_EQ(value, bytes({0, 0, 0, 0, 0x65, 0x02, 0x08}) + encoded(*make_protobuf_encoder(), e));
  EXPECT_EQ(key, bytes({0, 0, 0, 0, 0x66, 0x00}) + encoded_key(*make_protobuf_encoder(), e));
  auto back = make_protobuf_decoder(options)->decode(value);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  auto back_key = decode_protobuf_key(key, options);
  ASSERT_TRUE(back_key) << back_key.error().report();
  EXPECT_EQ(*back_key, R"({"id":"42"})");
  std::size_t registered = 0;
  for (const auto& r : registry.requests()) {
    registered += r.find("POST /apis/registry/v3/groups/default/artifacts?") == 0;
  }
  EXPECT_EQ(registered, 2u) << "one registration per subject";
}

TEST(ProtobufCodec, ConfluentFramingCarriesTheRegistrysIdsAndTheMessageIndexes) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const ProtobufCodecOptions options = registry_options(registry, true);
  // Another schema first, so that our ids are not simply 1 and 2.
  ASSERT_TRUE(options.registry->register_schema("unrelated-value", SchemaType::kAvro,
                                                R"({"type":"string"})"));
  auto encoder = make_protobuf_encoder(options);
  EXPECT_EQ(encoder->content_type(), "application/vnd.confluent.protobuf");
  const Event e = test::full_event();
  const std::string topic = "shop.public.orders";
  const std::string value = encoded(*encoder, e, topic);
  const std::string key = encoded_key(*encoder, e, topic);

  auto value_id = options.registry->lookup_schema(topic + "-value", SchemaType::kProtobuf,
                                                  std::string(protobuf_event_schema()));
  auto key_id = options.registry->lookup_schema(topic + "-key", SchemaType::kProtobuf,
                                                std::string(protobuf_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  EXPECT_EQ(*value_id, 2);
  EXPECT_EQ(*key_id, 3);
  // Magic byte, id, message indexes [4] (02 08) and [0] (00), then the bare message.
  const std::string bare_value = encoded(*make_protobuf_encoder(), e);
  EXPECT_EQ(value, bytes({0, 0, 0, 0, 2, 0x02, 0x08}) + bare_value);
  EXPECT_EQ(key, bytes({0, 0, 0, 0, 3, 0x00}) + encoded_key(*make_protobuf_encoder(), e));

  // The registry keeps the .proto without its comments (as Confluent reformats schemas); the
  // decoder compares structure, not text.
  auto stored = options.registry->schema_by_id(*value_id);
  ASSERT_TRUE(stored) << stored.error().report();
  EXPECT_EQ(stored->type, SchemaType::kProtobuf);
  EXPECT_NE(stored->schema, protobuf_event_schema());
  EXPECT_EQ(stored->schema.find("//"), std::string::npos);
  auto decoder = make_protobuf_decoder(options);
  auto back = decoder->decode(value);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  auto back_key = decode_protobuf_key(key, options);
  ASSERT_TRUE(back_key) << back_key.error().report();
  EXPECT_EQ(*back_key, R"({"id":"42"})");

  // python3-protobuf: the framing stripped by hand, the indexes checked against the path of
  // its own descriptor.
  const auto py = python_read({value}, true, false);
  ASSERT_EQ(py.size(), 1u);
  EXPECT_EQ(as_int(py[0].at("schema_id")), *value_id);
  EXPECT_EQ(py[0].at("indexes"), json::array({4}));
  expect_same(py[0].at("datum").as_object(), e);
  const auto py_key = python_read({key}, true, true);
  ASSERT_EQ(py_key.size(), 1u);
  EXPECT_EQ(as_int(py_key[0].at("schema_id")), *key_id);
  EXPECT_EQ(py_key[0].at("indexes"), json::array({0}));

  // Ids are resolved once per destination: later records ask the registry nothing.
  const auto asked = registry.requests().size();
  for (const Event& g : generated(200, 41)) {
    const std::string record = encoded(*encoder, g, topic);
    auto r = decoder->decode(record);
    ASSERT_TRUE(r) << r.error().report();
    ASSERT_EQ(*r, g);
  }
  EXPECT_EQ(registry.requests().size(), asked);
}

TEST(ProtobufCodec, AFramingDecoderRefusesWhatIsNotOneOfItsRecordsNamingWhy) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const ProtobufCodecOptions options = registry_options(registry, true);
  auto encoder = make_protobuf_encoder(options);
  auto decoder = make_protobuf_decoder(options);
  const Event e = test::full_event();
  const std::string value = encoded(*encoder, e, "t");
  const std::string payload = encoded(*make_protobuf_encoder(), e);
  const std::string id(value.substr(1, 4));
  const auto refusal = [&](const std::string& record, ErrorKind kind) {
    auto r = decoder->decode(record);
    EXPECT_FALSE(r);
    if (r) return std::string();
    EXPECT_EQ(r.error().kind(), kind) << r.error().report();
    return r.error().report();
  };
  // Short input and a wrong magic byte.
  EXPECT_CONTAINS(refusal(value.substr(0, 3), ErrorKind::kInvalidData), "too short");
  EXPECT_CONTAINS(refusal(value.substr(0, 5), ErrorKind::kInvalidData), "ends inside");
  EXPECT_CONTAINS(refusal("\x01" + value.substr(1), ErrorKind::kInvalidData), "magic");
  EXPECT_FALSE(decoder->decode(payload)) << "bare bytes are never read as a frame";
  // Message indexes that are not Event's: [0] (what a single-message writer would put), [4,0]
  // (a nested message), and a broken array.
  EXPECT_CONTAINS(
      refusal(std::string(1, '\0') + id + bytes({0x00}) + payload, ErrorKind::kInvalidData),
      "message-index path [0] is not cppcdc.v1.Event's, [4]");
  EXPECT_CONTAINS(refusal(std::string(1, '\0') + id + bytes({0x04, 0x08, 0x00}) + payload,
                          ErrorKind::kInvalidData),
                  "path [4,0]");
  EXPECT_CONTAINS(refusal(std::string(1, '\0') + id + bytes({0x09}), ErrorKind::kInvalidData),
                  "message-index array");
  // An id the registry does not have: terminal (no retry can help).
  std::string unknown;
  append_confluent_header(77, unknown);
  unknown += bytes({0x02, 0x08}) + payload;
  EXPECT_CONTAINS(refusal(unknown, ErrorKind::kTerminal), "schema id 77");
  // Ids of other schemas: an Avro one, and a .proto that is not event.proto.
  auto avro =
      options.registry->register_schema("other-value", SchemaType::kAvro, R"({"type":"string"})");
  ASSERT_TRUE(avro) << avro.error().report();
  std::string framed_avro;
  append_confluent_header(*avro, framed_avro);
  EXPECT_CONTAINS(refusal(framed_avro + bytes({0x02, 0x08}) + payload, ErrorKind::kTerminal),
                  "holds a schema of type AVRO, not PROTOBUF");
  std::string other_proto(protobuf_event_schema());
  other_proto.replace(other_proto.find("int64 ts = 5;"), 13, "int32 ts = 5;");
  auto other = options.registry->register_schema("other-proto", SchemaType::kProtobuf, other_proto);
  ASSERT_TRUE(other) << other.error().report();
  std::string framed_other;
  append_confluent_header(*other, framed_other);
  EXPECT_CONTAINS(refusal(framed_other + bytes({0x02, 0x08}) + payload, ErrorKind::kTerminal),
                  "is not cppcdc/v1/event.proto as this build writes it");
  // The same for keys.
  std::string key_as_value;
  append_confluent_header(*other, key_as_value);
  key_as_value += bytes({0x00}) + "\x0a\x02{}";
  auto k = decode_protobuf_key(key_as_value, options);
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(k.error().report(), "is not cppcdc/v1/event_key.proto");
}

TEST(ProtobufCodec, WithoutAutoRegisterAMissingSchemaIsAnErrorNamingTheSubjectNeverNoKey) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const ProtobufCodecOptions options = registry_options(registry, false);
  auto encoder = make_protobuf_encoder(options);
  ByteBuffer out;
  auto value = encoder->encode_to("shop.public.orders", test::full_event(), out);
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(value.error().report(), "shop.public.orders-value");
  auto key = encoder->encode_key_to("shop.public.orders", test::full_event(), out);
  ASSERT_FALSE(key) << "a key that cannot be encoded is an error, not \"no key\"";
  EXPECT_CONTAINS(key.error().report(), "shop.public.orders-key");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(registry.writes(), 0u) << "auto_register = false never writes";

  // Registered by someone else (with comments stripped, as a registry may keep it), it is
  // found by lookup and used.
  RegistryDouble fresh;
  ASSERT_TRUE(fresh.up());
  const ProtobufCodecOptions lookup_only = registry_options(fresh, false);
  auto writer = make_schema_registry_client(registry_options(fresh, true).registry_config);
  ASSERT_TRUE(writer);
  auto id = (*writer)->register_schema("shop.public.orders-value", SchemaType::kProtobuf,
                                       std::string(protobuf_event_schema()));
  ASSERT_TRUE(id) << id.error().report();
  const auto writes = fresh.writes();
  const std::string record =
      encoded(*make_protobuf_encoder(lookup_only), test::full_event(), "shop.public.orders");
  EXPECT_EQ(split_confluent_frame(record)->first, *id);
  EXPECT_EQ(fresh.writes(), writes);
}

TEST(ProtobufCodec, SubjectsFollowTheStrategyWithTheMessagesFullNames) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  ProtobufCodecOptions options = registry_options(registry, true);
  ByteBuffer out;
  auto r = make_protobuf_encoder(options)->encode(test::full_event(), out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(r.error().report(), "record_name");

  options.registry_config.subject_name_strategy = SubjectNameStrategy::kRecordName;
  auto encoder = make_protobuf_encoder(options);
  ASSERT_TRUE(encoder->encode(test::full_event(), out));
  (void)encoded_key(*encoder, test::full_event());
  options.registry_config.subject_name_strategy = SubjectNameStrategy::kTopicRecordName;
  auto per_topic = make_protobuf_encoder(options);
  (void)encoded(*per_topic, test::full_event(), "shop.t");
  (void)encoded_key(*per_topic, test::full_event(), "shop.t");
  auto subjects = options.registry->subjects();
  ASSERT_TRUE(subjects) << subjects.error().report();
  EXPECT_EQ(*subjects,
            (std::vector<std::string>{"cppcdc.v1.Event", "cppcdc.v1.EventKey",
                                      "shop.t-cppcdc.v1.Event", "shop.t-cppcdc.v1.EventKey"}));
  auto id = options.registry->lookup_schema("cppcdc.v1.Event", SchemaType::kProtobuf,
                                            std::string(protobuf_event_schema()));
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(split_confluent_frame(out.view())->first, *id);
}

}  // namespace
}  // namespace cppcdc
