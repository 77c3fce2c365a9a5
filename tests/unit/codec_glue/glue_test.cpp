// AWS Glue framing for the avro codec (cppcdc/glue.hpp) against the IN-MEMORY Glue registry
// (InMemoryGlueSchemaRegistry, a fake: no Glue server can run here). The 18-byte header byte
// for byte, the compression byte's two values, the UUID's byte order, malformed frames refused
// as invalid data, round trips of generated events to equal events (with and without zlib),
// keys and keyless events, idempotent registration and the cache, golden bytes, and the frames
// read by Python's struct/uuid/zlib and Debian's python3-avro (glue_decode.py), independently
// of cppcdc's reader.

#include "cppcdc/glue.hpp"

#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "avro_expect.hpp"
#include "cppcdc/avro.hpp"
#include "cppcdc/schema_registry.hpp"
#include "unit/codec/generated_events.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr const char* kUuidText = "0f1e2d3c-4b5a-4697-8877-66554433221a";

GlueSchemaVersionId uuid_of(const char* text) {
  auto id = GlueSchemaVersionId::parse(text);
  EXPECT_TRUE(id) << text;
  return id ? *id : GlueSchemaVersionId{};
}

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
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

struct Rig {
  std::shared_ptr<InMemoryGlueSchemaRegistry> fake = std::make_shared<InMemoryGlueSchemaRegistry>();
  std::unique_ptr<GlueAvroEncoder> encoder;
  std::unique_ptr<GlueAvroDecoder> decoder;

  explicit Rig(GlueAvroConfig config = GlueAvroConfig("cdc-events")) {
    auto e = GlueAvroEncoder::create(fake, std::move(config));
    EXPECT_TRUE(e) << e.error().report();
    if (e) encoder = std::move(*e);
    decoder = std::make_unique<GlueAvroDecoder>(fake);
  }

  std::string value(const Event& e) {
    ByteBuffer out;
    auto st = encoder->encode_to("orders-topic", e, out);
    EXPECT_TRUE(st) << st.error().report();
    return std::string(out.view());
  }
};

// ---- the frame ------------------------------------------------------------------------------

TEST(GlueFrame, TheHeaderIsVersion3TheCompressionByteAndTheUuidInTextOrder) {
  const GlueSchemaVersionId id = uuid_of(kUuidText);
  EXPECT_EQ(id.to_string(), kUuidText);
  const std::string uuid_bytes = bytes_of({0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x46, 0x97, 0x88,
                                           0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x1a});
  const auto none = glue_header(GlueCompression::kNone, id);
  EXPECT_EQ(std::string(none.data(), none.size()), bytes_of({0x03, 0x00}) + uuid_bytes);
  const auto zlib = glue_header(GlueCompression::kZlib, id);
  EXPECT_EQ(std::string(zlib.data(), zlib.size()), bytes_of({0x03, 0x05}) + uuid_bytes);
  EXPECT_EQ(kGlueHeaderSize, 18u);

  ByteBuffer out;
  append_glue_frame(GlueCompression::kNone, id, "datum", out);
  auto frame = split_glue_frame(out.view());
  ASSERT_TRUE(frame) << frame.error().report();
  EXPECT_EQ(frame->compression, GlueCompression::kNone);
  EXPECT_EQ(frame->schema_version_id, id);
  EXPECT_EQ(frame->payload, "datum");
  // Upper case parses to the same id; text that is not a UUID is refused.
  EXPECT_EQ(uuid_of("0F1E2D3C-4B5A-4697-8877-66554433221A"), id);
  for (const char* bad :
       {"", "0f1e2d3c4b5a4697887766554433221a", "0f1e2d3c-4b5a-4697-8877-66554433221",
        "0f1e2d3c-4b5a-4697-8877_66554433221a", "0g1e2d3c-4b5a-4697-8877-66554433221a"}) {
    EXPECT_FALSE(GlueSchemaVersionId::parse(bad)) << bad;
  }
}

TEST(GlueFrame, ZlibPayloadsAreRfc1950StreamsThatInflateBack) {
  const GlueSchemaVersionId id = uuid_of(kUuidText);
  const std::string datum(5000, 'x');
  ByteBuffer out;
  append_glue_frame(GlueCompression::kZlib, id, datum, out);
  EXPECT_LT(out.size(), 200u) << "5000 equal bytes must compress";
  auto frame = split_glue_frame(out.view());
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->compression, GlueCompression::kZlib);
  // zlib's own uncompress (not cppcdc's reader) gets the datum back.
  std::string back(datum.size(), '\0');
  uLongf size = back.size();
  ASSERT_EQ(
      uncompress(reinterpret_cast<Bytef*>(back.data()), &size,
                 reinterpret_cast<const Bytef*>(frame->payload.data()), frame->payload.size()),
      Z_OK);
  EXPECT_EQ(back, datum);
  auto inflated = glue_payload(*frame);
  ASSERT_TRUE(inflated) << inflated.error().report();
  EXPECT_EQ(*inflated, datum);
}

TEST(GlueFrame, MalformedFramesAreInvalidDataAndNeverRetryable) {
  const GlueSchemaVersionId id = uuid_of(kUuidText);
  ByteBuffer good;
  append_glue_frame(GlueCompression::kNone, id, "", good);
  const std::string header(good.view());
  ASSERT_EQ(header.size(), 18u);
  auto refused = [](std::string_view record, const std::string& needle) {
    auto r = split_glue_frame(record);
    ASSERT_FALSE(r) << "accepted " << record.size() << " bytes";
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
    EXPECT_FALSE(r.error().retryable());
    EXPECT_CONTAINS(r.error().report(), needle);
  };
  for (std::size_t n = 0; n < 18; ++n) refused(header.substr(0, n), "at least 18 bytes");
  EXPECT_TRUE(split_glue_frame(header)) << "an empty payload is a frame (the datum then fails)";
  for (int version : {0, 1, 2, 4, 0xff}) {
    std::string r = header;
    r[0] = static_cast<char>(version);
    refused(r, "header version byte 3");
  }
  std::string confluent = header;
  confluent[0] = 0;
  refused(confluent, "Confluent");
  for (int c = 0; c < 256; ++c) {
    std::string r = header;
    r[1] = static_cast<char>(c);
    if (c == 0 || c == 5) {
      EXPECT_TRUE(split_glue_frame(r)) << c;
    } else {
      refused(r, "compression byte is " + std::to_string(c));
    }
  }
  // zlib-marked payloads that are not complete zlib streams.
  ByteBuffer z;
  append_glue_frame(GlueCompression::kZlib, id, std::string(300, 'y'), z);
  const std::string zr(z.view());
  for (std::size_t n = 18; n < zr.size(); ++n) {
    auto frame = split_glue_frame(zr.substr(0, n));
    ASSERT_TRUE(frame);
    auto p = glue_payload(*frame);
    ASSERT_FALSE(p) << n;
    EXPECT_EQ(p.error().kind(), ErrorKind::kInvalidData);
  }
  auto trailing = glue_payload(*split_glue_frame(zr + "!"));
  ASSERT_FALSE(trailing);
  EXPECT_CONTAINS(trailing.error().report(), "1 bytes follow");
  std::string plain = header + "not zlib at all";
  plain[1] = 5;
  auto garbage = glue_payload(*split_glue_frame(plain));
  ASSERT_FALSE(garbage);
  EXPECT_CONTAINS(garbage.error().report(), "does not inflate");
  auto big = glue_payload(*split_glue_frame(zr), 299);
  ASSERT_FALSE(big);
  EXPECT_CONTAINS(big.error().report(), "more than 299 bytes");
}

TEST(GlueFrame, DetectWireFormatTellsConfluentGlueAndBare) {
  const GlueSchemaVersionId id = uuid_of(kUuidText);
  ByteBuffer glue_none, glue_zlib, confluent;
  append_glue_frame(GlueCompression::kNone, id, "abc", glue_none);
  append_glue_frame(GlueCompression::kZlib, id, "abc", glue_zlib);
  append_confluent_header(7, confluent);
  confluent.raw("abc");
  EXPECT_EQ(detect_wire_format(glue_none.view()), WireFormat::kGlue);
  EXPECT_EQ(detect_wire_format(glue_zlib.view()), WireFormat::kGlue);
  EXPECT_EQ(detect_wire_format(confluent.view()), WireFormat::kConfluent);
  EXPECT_EQ(detect_wire_format(std::string_view(confluent.view()).substr(0, 5)),
            WireFormat::kConfluent);
  EXPECT_EQ(detect_wire_format(std::string_view(confluent.view()).substr(0, 4)), WireFormat::kBare);
  EXPECT_EQ(detect_wire_format(std::string_view(glue_none.view()).substr(0, 17)),
            WireFormat::kBare);
  std::string odd(glue_none.view());
  odd[1] = 1;
  EXPECT_EQ(detect_wire_format(odd), WireFormat::kBare);
  EXPECT_EQ(detect_wire_format(""), WireFormat::kBare);
  // The avro codec's bare datum with a before-image starts with 0x02 (union branch 1).
  ByteBuffer bare;
  ASSERT_TRUE(make_avro_encoder()->encode(test::full_event(), bare));
  EXPECT_EQ(detect_wire_format(bare.view()), WireFormat::kBare);
  EXPECT_EQ(to_string(WireFormat::kGlue), "glue");
  EXPECT_EQ(to_string(WireFormat::kConfluent), "confluent");
  EXPECT_EQ(to_string(WireFormat::kBare), "bare");
}

// ---- the codec ------------------------------------------------------------------------------

TEST(GlueAvro, GeneratedEventsRoundTripToEqualEventsWithAndWithoutZlib) {
  for (GlueCompression c : {GlueCompression::kNone, GlueCompression::kZlib}) {
    Rig s(GlueAvroConfig("cdc-events").with_compression(c));
    auto bare = make_avro_encoder();
    for (const Event& e : generated(2000, 29)) {
      const std::string record = s.value(e);
      ASSERT_GE(record.size(), 18u);
      EXPECT_EQ(static_cast<unsigned char>(record[1]), c == GlueCompression::kZlib ? 5 : 0);
      auto back = s.decoder->decode(record);
      ASSERT_TRUE(back) << back.error().report() << "\n" << e.to_json();
      ASSERT_EQ(*back, e) << e.to_json() << "\n" << back->to_json();
      // The payload is the avro codec's bare datum, not a datum of a copy of its writer.
      ByteBuffer datum;
      ASSERT_TRUE(bare->encode(e, datum));
      auto frame = split_glue_frame(record);
      ASSERT_TRUE(frame);
      auto payload = glue_payload(*frame);
      ASSERT_TRUE(payload);
      ASSERT_EQ(*payload, datum.view());
    }
    EXPECT_EQ(s.fake->registrations(), 1u) << "one registration per encoder and schema";
  }
}

TEST(GlueAvro, KeysUseTheKeySchemaNamedSchemaNameDashKeyAndKeylessEventsHaveNone) {
  Rig s(GlueAvroConfig("cdc-events").with_compression(GlueCompression::kZlib));
  // A keyless event first: no key, nothing appended, and no key schema registered for it.
  Event keyless = test::full_event();
  keyless.primary_key.reset();
  ByteBuffer out;
  out.raw("prefix");
  auto none = s.encoder->encode_key_to("t", keyless, out);
  ASSERT_TRUE(none) << none.error().report();
  EXPECT_FALSE(*none);
  EXPECT_EQ(out.view(), "prefix");
  EXPECT_TRUE(s.fake->schemas().empty());
  EXPECT_FALSE(s.encoder->key_schema_version());

  ByteBuffer key;
  auto keyed = s.encoder->encode_key_to("t", test::full_event(), key);
  ASSERT_TRUE(keyed) << keyed.error().report();
  EXPECT_TRUE(*keyed);
  ASSERT_TRUE(s.encoder->key_schema_version());
  EXPECT_EQ((s.fake->schemas()), (std::map<std::string, std::size_t>{{"cdc-events-key", 1}}));
  auto frame = split_glue_frame(key.view());
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->schema_version_id, *s.encoder->key_schema_version());
  auto text = s.decoder->decode_key(key.view());
  ASSERT_TRUE(text) << text.error().report();
  ByteBuffer json_key;
  ASSERT_TRUE(append_json_key(test::full_event(), json_key));
  EXPECT_EQ(*text, json_key.view());
  EXPECT_EQ(*text, R"({"id":"42"})");

  (void)s.value(test::full_event());
  EXPECT_EQ((s.fake->schemas()),
            (std::map<std::string, std::size_t>{{"cdc-events", 1}, {"cdc-events-key", 1}}));
  // A key record read as an event (and the reverse) is refused, naming the version.
  auto crossed = s.decoder->decode(key.view());
  ASSERT_FALSE(crossed);
  EXPECT_EQ(crossed.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(crossed.error().report(), frame->schema_version_id.to_string());
  auto crossed_key = s.decoder->decode_key(s.value(test::full_event()));
  ASSERT_FALSE(crossed_key);
  EXPECT_EQ(crossed_key.error().kind(), ErrorKind::kTerminal);

  // An explicit key schema name.
  Rig named(GlueAvroConfig("cdc-events").with_key_schema_name("cdc-keys"));
  ASSERT_TRUE(named.encoder->resolve());
  EXPECT_EQ((named.fake->schemas()),
            (std::map<std::string, std::size_t>{{"cdc-events", 1}, {"cdc-keys", 1}}));
}

TEST(GlueAvro, RegistrationIsIdempotentAndTheCacheAsksTheRegistryOnce) {
  auto fake = std::make_shared<InMemoryGlueSchemaRegistry>();
  auto cached = std::make_shared<CachedGlueSchemaRegistry>(fake);
  auto a = GlueAvroEncoder::create(cached, GlueAvroConfig("cdc-events"));
  auto b = GlueAvroEncoder::create(cached, GlueAvroConfig("cdc-events"));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*a)->resolve());
  ASSERT_TRUE((*b)->resolve());
  EXPECT_EQ((*a)->value_schema_version(), (*b)->value_schema_version());
  EXPECT_NE((*a)->value_schema_version(), (*a)->key_schema_version());
  EXPECT_EQ(fake->registrations(), 2u) << "value and key once each, through the cache";
  // Without the cache the registry itself answers with the same UUID (idempotent).
  auto c = GlueAvroEncoder::create(fake, GlueAvroConfig("cdc-events"));
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->resolve());
  EXPECT_EQ((*c)->value_schema_version(), (*a)->value_schema_version());
  EXPECT_EQ(fake->registrations(), 4u);
  EXPECT_EQ((fake->schemas()),
            (std::map<std::string, std::size_t>{{"cdc-events", 1}, {"cdc-events-key", 1}}));
  // Decoders through the cache fetch each version once.
  ByteBuffer record;
  ASSERT_TRUE((*a)->encode(test::full_event(), record));
  GlueAvroDecoder d1(cached), d2(cached);
  ASSERT_TRUE(d1.decode(record.view()));
  ASSERT_TRUE(d2.decode(record.view()));
  EXPECT_EQ(fake->fetches(), 0u) << "the cache learned the definition when it registered it";
  auto fresh = std::make_shared<CachedGlueSchemaRegistry>(fake);
  GlueAvroDecoder d3(fresh), d4(fresh);
  ASSERT_TRUE(d3.decode(record.view()));
  ASSERT_TRUE(d4.decode(record.view()));
  EXPECT_EQ(fake->fetches(), 1u);
}

TEST(GlueAvro, RegistryFailuresKeepTheirKindAndAreNotCached) {
  Rig s;
  s.fake->fail_next(1, Error::transient("ThrottlingException: rate exceeded"));
  ByteBuffer out;
  auto first = s.encoder->encode(test::full_event(), out);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().kind(), ErrorKind::kTransient);
  EXPECT_CONTAINS(first.error().report(), "Glue schema \"cdc-events\"");
  EXPECT_TRUE(out.empty()) << "nothing of a failed record is written";
  ASSERT_TRUE(s.encoder->encode(test::full_event(), out)) << "the next record registers again";

  s.fake->fail_next(1, Error::terminal("AccessDeniedException"));
  GlueAvroDecoder d(s.fake);
  auto denied = d.decode(out.view());
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().kind(), ErrorKind::kTerminal);
  ASSERT_TRUE(d.decode(out.view()));
}

TEST(GlueAvro, TheDecoderResolvesTheWriterSchemaByUuidAndRefusesAnotherSchema) {
  Rig s;
  const std::string record = s.value(test::full_event());
  // A version the registry does not hold: terminal, naming the UUID.
  std::string unknown = record;
  unknown[17] = static_cast<char>(unknown[17] ^ 0x01);
  auto missing = s.decoder->decode(unknown);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), ErrorKind::kTerminal);
  auto frame = split_glue_frame(unknown);
  ASSERT_TRUE(frame);
  EXPECT_CONTAINS(missing.error().report(), frame->schema_version_id.to_string());
  // A version holding some other schema: terminal too, never a positional misread.
  s.fake->put("cdc-events", frame->schema_version_id,
              R"({"type":"record","name":"Other","fields":[{"name":"x","type":"long"}]})");
  auto other = s.decoder->decode(unknown);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(other.error().report(), "is neither io.cppcdc.Event nor io.cppcdc.EventKey");
  // The same envelope schema written with other whitespace and key order is the same schema.
  json::value reordered = json::parse(avro_event_schema());
  s.fake->put("cdc-events", uuid_of(kUuidText), json::serialize(reordered));
  std::string respelled = record;
  const auto header = glue_header(GlueCompression::kNone, uuid_of(kUuidText));
  respelled.replace(0, 18, header.data(), header.size());
  auto back = s.decoder->decode(respelled);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, test::full_event());
  // Malformed frames and payloads are invalid data.
  for (std::size_t n = 0; n < record.size(); ++n) {
    auto r = s.decoder->decode(record.substr(0, n));
    ASSERT_FALSE(r) << n;
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData) << n << ": " << r.error().report();
  }
}

TEST(GlueAvro, ConfigsAreCheckedForGluesNameRules) {
  auto fake = std::make_shared<InMemoryGlueSchemaRegistry>();
  struct Case {
    GlueAvroConfig config;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {GlueAvroConfig(""), "schema_name: required"},
      {GlueAvroConfig("cdc events"), "holds ' '"},
      {GlueAvroConfig(std::string(256, 'a')), "at most 255 characters"},
      {GlueAvroConfig(std::string(252, 'a')), "key_schema_name: at most 255"},
      {GlueAvroConfig("cdc").with_key_schema_name("cdc"), "equals schema_name"},
      {GlueAvroConfig("cdc").with_key_schema_name("k/y"), "holds '/'"},
  };
  for (const auto& c : cases) {
    auto e = GlueAvroEncoder::create(fake, c.config);
    ASSERT_FALSE(e) << c.needle;
    EXPECT_EQ(e.error().kind(), ErrorKind::kConfiguration);
    EXPECT_CONTAINS(e.error().report(), c.needle);
  }
  EXPECT_TRUE(GlueAvroEncoder::create(fake, GlueAvroConfig("a.b-c_d$e#f")));
  EXPECT_FALSE(GlueAvroEncoder::create(nullptr, GlueAvroConfig("cdc")));
  EXPECT_EQ(GlueAvroConfig("cdc-events").effective_key_schema_name(), "cdc-events-key");
  EXPECT_EQ(*parse_glue_compression("zlib"), GlueCompression::kZlib);
  EXPECT_EQ(*parse_glue_compression("none"), GlueCompression::kNone);
  EXPECT_FALSE(parse_glue_compression("gzip"));
}

// The full event's value and key in Glue's framing, against golden files. The value's payload
// is also exactly the bare avro golden file. With zlib the compressed bytes are zlib's
// business, so the golden check is the header and what the payload inflates to.
TEST(GlueAvro, MatchesTheGoldenFiles) {
  Rig s;
  const std::string value = s.value(test::full_event());
  ByteBuffer key;
  ASSERT_TRUE(*s.encoder->encode_key_to("t", test::full_event(), key));
  const fs::path dir = fs::path(CPPCDC_GOLDEN_DIR) / "codec";
  const fs::path value_file = dir / "glue_avro_event.bin";
  const fs::path key_file = dir / "glue_avro_key.bin";
  if (std::getenv("CPPCDC_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(value_file, std::ios::binary) << value;
    std::ofstream(key_file, std::ios::binary) << key.view();
  }
  ASSERT_TRUE(fs::exists(value_file)) << value_file << " (CPPCDC_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(value, read_file(value_file)) << "the Glue value bytes changed";
  EXPECT_EQ(key.view(), read_file(key_file)) << "the Glue key bytes changed";
  EXPECT_EQ(value.substr(18), read_file(dir / "avro_event.bin"));
  // The in-memory registry's UUIDs are derived from name and definition, so they are golden
  // too; a changed envelope schema changes them (and needs a new golden file anyway).
  EXPECT_EQ(s.encoder->value_schema_version()->to_string(), "183f0706-8501-8052-935b-2f1ca573db25");
  Rig z(GlueAvroConfig("cdc-events").with_compression(GlueCompression::kZlib));
  const std::string zvalue = z.value(test::full_event());
  EXPECT_EQ(zvalue.substr(2, 16), value.substr(2, 16));
  EXPECT_EQ(zvalue.substr(0, 2), bytes_of({3, 5}));
  auto inflated = glue_payload(*split_glue_frame(zvalue));
  ASSERT_TRUE(inflated);
  EXPECT_EQ(*inflated, read_file(dir / "avro_event.bin"));
  auto back = GlueAvroDecoder(s.fake).decode(read_file(value_file));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, test::full_event());
}

// Python reads our frames with its own struct/uuid/zlib and python3-avro, field by field.
std::vector<json::object> python_decode(const std::vector<std::string>& records,
                                        const std::string& schema_file) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("glue-py-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string command = "/usr/bin/python3 " + std::string(CPPCDC_SOURCE_DIR) +
                        "/tests/unit/codec_glue/glue_decode.py " + schema_file;
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
  EXPECT_EQ(::pclose(pipe), 0) << "Python could not read our Glue frames (python3-avro?)";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) out.push_back(json::parse(line).as_object());
  fs::remove_all(dir);
  return out;
}

TEST(GlueAvro, PythonReadsTheFramesIndependentlyFieldByField) {
  for (GlueCompression c : {GlueCompression::kNone, GlueCompression::kZlib}) {
    Rig s(GlueAvroConfig("cdc-events").with_compression(c));
    const std::vector<Event> events = generated(150, 5);
    std::vector<std::string> records;
    for (const Event& e : events) records.push_back(s.value(e));
    const auto decoded =
        python_decode(records, std::string(CPPCDC_SOURCE_DIR) + "/src/codec/avro/event.avsc");
    ASSERT_EQ(decoded.size(), events.size());
    const std::string uuid = s.encoder->value_schema_version()->to_string();
    for (std::size_t i = 0; i < events.size(); ++i) {
      SCOPED_TRACE(events[i].to_json());
      EXPECT_EQ(decoded[i].at("version").as_int64(), 3);
      EXPECT_EQ(decoded[i].at("compression").as_int64(), c == GlueCompression::kZlib ? 5 : 0);
      EXPECT_EQ(decoded[i].at("uuid").as_string(), uuid);
      test::expect_same(decoded[i].at("datum").as_object(), events[i]);
    }
  }
}

}  // namespace
}  // namespace cppcdc
