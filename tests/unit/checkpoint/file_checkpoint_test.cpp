// FileCheckpoint: file format, damage detection, atomic replacement and the invariant 6 guard.

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "unit/checkpoint/checkpoint_test_util.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;

CheckpointRecord pg_record(std::string offset, std::uint64_t events = 42) {
  CheckpointRecord r;
  r.source_type = "postgres";
  r.source_id = "orders_slot";
  r.offset = std::move(offset);
  r.committed_events = events;
  r.saved_at_ms = 1700000000123;
  return r;
}

CheckpointRecord mysql_record(std::string offset) {
  CheckpointRecord r;
  r.source_type = "mysql";
  r.source_id = "orders_slot";
  r.offset = std::move(offset);
  r.committed_events = 7;
  r.saved_at_ms = 1700000000456;
  return r;
}

std::string sha256_hex(const std::string& data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

/// A file with a valid header around an arbitrary body, to reach the checks behind the checksum.
std::string with_valid_header(const std::string& body) {
  return "cppcdc-checkpoint 1 sha256=" + sha256_hex(body) +
         " length=" + std::to_string(body.size()) + "\n" + body;
}

class FileCheckpointTest : public ::testing::Test {
 protected:
  std::unique_ptr<FileCheckpoint> open(const std::string& source_id = "orders_slot") {
    auto opened = FileCheckpoint::open(dir_.path() / "state", source_id);
    if (!opened) {
      ADD_FAILURE() << opened.error().report();
      return nullptr;
    }
    return std::move(*opened);
  }

  std::vector<std::string> dir_entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_.path() / "state")) {
      // The writer lock file belongs to the open instance, not to what a save leaves behind.
      if (entry.path().extension() == ".lock") continue;
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  /// Expects load() of `checkpoint` to fail as damage, naming the file.
  void expect_damaged(FileCheckpoint& checkpoint, const std::string& what) {
    const auto loaded = checkpoint.load();
    ASSERT_FALSE(loaded) << what << ": load returned "
                         << (loaded->has_value() ? "a record" : "nullopt");
    EXPECT_EQ(loaded.error().kind(), ErrorKind::kTerminal) << what;
    const std::string report = loaded.error().report();
    EXPECT_NE(report.find(checkpoint.path().string()), std::string::npos) << what << ": " << report;
    EXPECT_NE(report.find("restore the file from a backup"), std::string::npos) << report;
  }

  TempDir dir_;
};

// --- format and round trip --------------------------------------------------------------------

TEST_F(FileCheckpointTest, RoundTripReturnsTheSavedRecord) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  EXPECT_EQ(checkpoint->name(), "local_fs");
  const auto record = pg_record("0/16B2E48");
  ASSERT_TRUE(checkpoint->save(record));

  checkpoint.reset();  // one writer at a time: the instance holds the directory's lock
  auto reopened = open();
  ASSERT_TRUE(reopened);
  const auto loaded = reopened->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, record);
}

TEST_F(FileCheckpointTest, RoundTripKeepsExtremeValuesAndUnusualText) {
  CheckpointRecord record;
  record.source_type = "custom \"quoted\" \\ type";
  record.source_id = "id with\nnewline, tab\t and \xc3\xa9";
  record.offset = "{\"json\": [1, 2]}";
  record.committed_events = std::numeric_limits<std::uint64_t>::max();
  record.saved_at_ms = std::numeric_limits<std::int64_t>::min();
  record.partial_tx_events = std::numeric_limits<std::uint64_t>::max();
  record.partial_tx_id = 4294967296;
  record.source_state = R"({"snapshot": {"cursor": ["a\"b", null]}})";
  auto checkpoint = open(record.source_id);
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(record));
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, record);
}

TEST_F(FileCheckpointTest, EncodeWritesChecksummedHeaderThenOneJsonLine) {
  const std::string bytes = FileCheckpoint::encode(pg_record("0/16B2E48"));
  const auto newline = bytes.find('\n');
  ASSERT_NE(newline, std::string::npos);
  const std::string header = bytes.substr(0, newline);
  const std::string body = bytes.substr(newline + 1);
  EXPECT_EQ(header, "cppcdc-checkpoint 1 sha256=" + sha256_hex(body) +
                        " length=" + std::to_string(body.size()));
  EXPECT_EQ(body,
            "{\"source_type\":\"postgres\",\"source_id\":\"orders_slot\",\"offset\":\"0/16B2E48\","
            "\"committed_events\":42,\"partial_tx_events\":0,\"partial_tx_id\":0,"
            "\"saved_at_ms\":1700000000123}\n");
}

TEST_F(FileCheckpointTest, AbsentFileLoadsAsNullopt) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  EXPECT_FALSE(loaded->has_value());
}

TEST_F(FileCheckpointTest, OpenCreatesMissingDirectories) {
  const fs::path nested = dir_.path() / "a" / "b" / "c";
  auto opened = FileCheckpoint::open(nested, "slot");
  ASSERT_TRUE(opened) << opened.error().report();
  EXPECT_TRUE(fs::is_directory(nested));
  EXPECT_EQ((*opened)->path(), nested / "checkpoint-slot.ckpt");
}

// Files holding state are the owner's alone unless the user asks otherwise (umask aside).
TEST_F(FileCheckpointTest, RecordAndLockFilesAreCreatedReadableByTheOwnerOnly) {
  const mode_t previous = ::umask(0);
  {
    auto checkpoint = open();
    ASSERT_TRUE(checkpoint);
    ASSERT_TRUE(checkpoint->save(pg_record("0/10")));
    EXPECT_EQ(fs::status(checkpoint->path()).permissions(),
              fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(fs::status(checkpoint->lock_path()).permissions(),
              fs::perms::owner_read | fs::perms::owner_write);
  }
  auto other = FileCheckpoint::open(dir_.path() / "shared", "slot", 0640);
  ::umask(previous);
  ASSERT_TRUE(other) << other.error().report();
  ASSERT_TRUE((*other)->save(pg_record("0/10")));
  EXPECT_EQ(fs::status((*other)->path()).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

// A run that fails before its first checkpoint leaves no empty state directory behind; one that
// saved keeps everything.
TEST_F(FileCheckpointTest, ADirectoryCreatedAndNeverWrittenIsRemovedAgain) {
  const fs::path nested = dir_.path() / "state" / "pipeline";
  {
    auto opened = FileCheckpoint::open(nested, "slot");
    ASSERT_TRUE(opened) << opened.error().report();
    EXPECT_TRUE(fs::is_directory(nested));
  }
  EXPECT_FALSE(fs::exists(dir_.path() / "state"));
  {
    auto opened = FileCheckpoint::open(nested, "slot");
    ASSERT_TRUE(opened) << opened.error().report();
    ASSERT_TRUE((*opened)->save(pg_record("0/10")));
  }
  EXPECT_TRUE(fs::exists(nested / "checkpoint-slot.ckpt"));
  // An existing directory and lock file are never removed, saved or not.
  {
    auto opened = FileCheckpoint::open(nested, "other");
    ASSERT_TRUE(opened) << opened.error().report();
  }
  EXPECT_TRUE(fs::exists(nested / "checkpoint-slot.lock"));
  EXPECT_FALSE(fs::exists(nested / "checkpoint-other.lock"));
}

TEST_F(FileCheckpointTest, OpenRefusesAPathThatIsNotADirectory) {
  const fs::path file = dir_.path() / "plain_file";
  write_bytes(file, "x");
  const auto opened = FileCheckpoint::open(file, "slot");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kConfiguration);
  EXPECT_NE(opened.error().report().find(file.string()), std::string::npos);

  const auto below_file = FileCheckpoint::open(file / "sub", "slot");
  ASSERT_FALSE(below_file);
  EXPECT_EQ(below_file.error().kind(), ErrorKind::kConfiguration);
  EXPECT_NE(below_file.error().report().find(file.string()), std::string::npos);
}

TEST_F(FileCheckpointTest, FileNameKeepsSafeCharactersAndReplacesOthers) {
  auto opened = FileCheckpoint::open(dir_.path(), "Slot_1.a-b/../c d\xc3\xa9");
  ASSERT_TRUE(opened) << opened.error().report();
  EXPECT_EQ((*opened)->path().filename(), "checkpoint-Slot_1.a-b_.._c_d__.ckpt");
  EXPECT_EQ((*opened)->path().parent_path(), dir_.path());
}

// --- damage is an error, never a fresh start --------------------------------------------------

TEST_F(FileCheckpointTest, FlippedBodyByteIsACorruptFileErrorNamingTheFile) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(pg_record("0/16B2E48")));
  const std::string good = read_bytes(checkpoint->path());
  const auto body_start = good.find('\n') + 1;
  for (std::size_t i = body_start; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    write_bytes(checkpoint->path(), bad);
    expect_damaged(*checkpoint, "flipped byte " + std::to_string(i));
    const auto loaded = checkpoint->load();
    if (!loaded) {
      EXPECT_NE(loaded.error().report().find("corrupt"), std::string::npos)
          << loaded.error().report();
    }
  }
}

TEST_F(FileCheckpointTest, TruncatedFileAtEveryLengthIsAnErrorNeverNulloptOrARecord) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(pg_record("0/16B2E48")));
  const std::string good = read_bytes(checkpoint->path());
  ASSERT_GT(good.size(), 100U);
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    write_bytes(checkpoint->path(), good.substr(0, cut));
    expect_damaged(*checkpoint, "cut at " + std::to_string(cut));
    EXPECT_FALSE(FileCheckpoint::decode(good.substr(0, cut), "mem")) << "cut at " << cut;
  }
}

TEST_F(FileCheckpointTest, EmptyFileIsAnError) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  write_bytes(checkpoint->path(), "");
  expect_damaged(*checkpoint, "empty file");
}

TEST_F(FileCheckpointTest, FileWithoutHeaderIsAnError) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  write_bytes(checkpoint->path(),
              "{\"source_type\":\"postgres\",\"source_id\":\"orders_slot\",\"offset\":\"0/1\","
              "\"committed_events\":1,\"saved_at_ms\":1}\n");
  expect_damaged(*checkpoint, "no header");
  const auto decoded = FileCheckpoint::decode(read_bytes(checkpoint->path()), "x.ckpt");
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().report().find("not a cppcdc checkpoint file"), std::string::npos);
}

TEST_F(FileCheckpointTest, UnknownFormatVersionIsAnError) {
  std::string bytes = FileCheckpoint::encode(pg_record("0/16B2E48"));
  bytes.replace(bytes.find(" 1 "), 3, " 2 ");
  const auto decoded = FileCheckpoint::decode(bytes, "/var/lib/cppcdc/checkpoint-x.ckpt");
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().kind(), ErrorKind::kTerminal);
  const std::string report = decoded.error().report();
  EXPECT_NE(report.find("/var/lib/cppcdc/checkpoint-x.ckpt"), std::string::npos) << report;
  EXPECT_NE(report.find("unknown format version 2"), std::string::npos) << report;
}

TEST_F(FileCheckpointTest, MalformedHeaderFieldsAreErrors) {
  const std::string good = FileCheckpoint::encode(pg_record("0/16B2E48"));
  const auto header_end = good.find('\n');
  const std::string body = good.substr(header_end + 1);
  const std::string digest = sha256_hex(body);
  const std::string length = std::to_string(body.size());
  const std::vector<std::string> headers = {
      "cppcdc-checkpoint",
      "cppcdc-checkpoint x sha256=" + digest + " length=" + length,
      "cppcdc-checkpoint 1 sha256=" + digest,
      "cppcdc-checkpoint 1 length=" + length + " sha256=" + digest,
      "cppcdc-checkpoint 1 sha256=" + digest.substr(1) + " length=" + length,
      "cppcdc-checkpoint 1 sha256=" + std::string(64, 'A') + " length=" + length,
      "cppcdc-checkpoint 1 sha256=" + digest + " length=-" + length,
      "cppcdc-checkpoint 1 sha256=" + digest + " length=" + length + " extra",
      "cppcdc-checkpoint  1 sha256=" + digest + " length=" + length,
      "CPPCDC-CHECKPOINT 1 sha256=" + digest + " length=" + length,
  };
  for (const auto& header : headers) {
    const auto decoded = FileCheckpoint::decode(header + "\n" + body, "f.ckpt");
    EXPECT_FALSE(decoded) << header;
    if (!decoded) {
      EXPECT_EQ(decoded.error().kind(), ErrorKind::kTerminal);
    }
  }
}

TEST_F(FileCheckpointTest, TrailingBytesAfterTheBodyAreAnError) {
  const std::string bytes = FileCheckpoint::encode(pg_record("0/16B2E48")) + "x";
  const auto decoded = FileCheckpoint::decode(bytes, "f.ckpt");
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().kind(), ErrorKind::kTerminal);
}

TEST_F(FileCheckpointTest, BadJsonBehindAValidChecksumIsAnError) {
  for (const std::string body : {"not json\n", "[1,2,3]\n", "{\"source_type\":\n", "{}"}) {
    const auto decoded = FileCheckpoint::decode(with_valid_header(body), "f.ckpt");
    ASSERT_FALSE(decoded) << body;
    EXPECT_EQ(decoded.error().kind(), ErrorKind::kTerminal);
    EXPECT_NE(decoded.error().report().find("f.ckpt"), std::string::npos);
  }
}

/// A well-formed body (without the optional keys) in which `key` is left out (nullopt) or holds
/// the raw JSON `raw_value`.
std::string body_where(const std::string& key, const std::optional<std::string>& raw_value) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"source_type", "\"p\""},  {"source_id", "\"s\""}, {"offset", "\"0/1\""},
      {"committed_events", "1"}, {"saved_at_ms", "1"},
  };
  std::string body = "{";
  bool key_written = false;
  for (const auto& [name, value] : fields) {
    if (name == key && !raw_value) continue;
    if (body.size() > 1) body += ",";
    key_written = key_written || name == key;
    body += "\"" + name + "\":" + (name == key ? *raw_value : value);
  }
  if (!key_written && raw_value) body += ",\"" + key + "\":" + *raw_value;
  return body + "}\n";
}

TEST_F(FileCheckpointTest, WellFormedBodyBehindAValidChecksumDecodes) {
  const auto decoded =
      FileCheckpoint::decode(with_valid_header(body_where("", std::nullopt)), "f.ckpt");
  ASSERT_TRUE(decoded) << decoded.error().report();
  EXPECT_EQ(decoded->source_type, "p");
  EXPECT_EQ(decoded->offset, "0/1");
  EXPECT_EQ(decoded->committed_events, 1U);
  EXPECT_EQ(decoded->saved_at_ms, 1);
  // A body without the partial-transaction keys is on a transaction boundary.
  EXPECT_EQ(decoded->partial_tx_events, 0U);
  EXPECT_EQ(decoded->partial_tx_id, 0U);
}

TEST_F(FileCheckpointTest, PartialTransactionProgressSurvivesARestart) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  auto record = pg_record("0/16B2E48");
  record.partial_tx_events = 3;
  record.partial_tx_id = 103;
  ASSERT_TRUE(checkpoint->save(record));
  checkpoint.reset();  // one writer at a time: the instance holds the directory's lock
  auto reopened = open();
  ASSERT_TRUE(reopened);
  const auto loaded = reopened->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ(**loaded, record);
}

TEST_F(FileCheckpointTest, MissingOrIllTypedKeysAreErrorsNamingTheKey) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      {"source_type", std::nullopt}, {"source_id", std::nullopt},
      {"offset", std::nullopt},      {"committed_events", std::nullopt},
      {"saved_at_ms", std::nullopt}, {"source_type", "1"},
      {"source_id", "null"},         {"offset", "5"},
      {"offset", "[\"0/1\"]"},       {"committed_events", "-1"},
      {"committed_events", "\"1\""}, {"committed_events", "1.5"},
      {"saved_at_ms", "1e3"},        {"saved_at_ms", "18446744073709551615"},
      {"partial_tx_events", "-3"},   {"partial_tx_events", "\"3\""},
      {"partial_tx_id", "null"},     {"partial_tx_id", "2.5"},
  };
  for (const auto& [key, raw_value] : cases) {
    const std::string body = body_where(key, raw_value);
    const auto decoded = FileCheckpoint::decode(with_valid_header(body), "f.ckpt");
    ASSERT_FALSE(decoded) << body;
    EXPECT_EQ(decoded.error().kind(), ErrorKind::kTerminal);
    EXPECT_NE(decoded.error().report().find("'" + key + "'"), std::string::npos)
        << decoded.error().report();
  }
}

TEST_F(FileCheckpointTest, UnreadableCheckpointPathIsAnErrorNotNullopt) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  fs::create_directory(checkpoint->path());
  const auto loaded = checkpoint->load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().report().find(checkpoint->path().string()), std::string::npos);
}

// --- saving -----------------------------------------------------------------------------------

TEST_F(FileCheckpointTest, SaveLeavesNoTemporaryFileBehind) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(checkpoint->save(pg_record("0/" + std::to_string(i * 100))));
  }
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"checkpoint-orders_slot.ckpt"});
}

TEST_F(FileCheckpointTest, SaveReplacesAStaleTemporaryFileFromAnEarlierCrash) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  write_bytes(checkpoint->path().string() + ".tmp", std::string(10000, 'z'));
  const auto record = pg_record("0/16B2E48");
  ASSERT_TRUE(checkpoint->save(record));
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"checkpoint-orders_slot.ckpt"});
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ(**loaded, record);
}

TEST_F(FileCheckpointTest, SaveOverACorruptFileIsRefusedAndLeavesItUntouched) {
  {
    auto writer = open();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->save(pg_record("0/16B2E48")));
  }
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  std::string bytes = read_bytes(checkpoint->path());
  bytes[bytes.size() - 5] = static_cast<char>(bytes[bytes.size() - 5] ^ 0x40);
  write_bytes(checkpoint->path(), bytes);

  const auto status = checkpoint->save(pg_record("0/16B2F00"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  EXPECT_NE(status.error().report().find(checkpoint->path().string()), std::string::npos)
      << status.error().report();
  EXPECT_EQ(read_bytes(checkpoint->path()), bytes);
}

TEST_F(FileCheckpointTest, SaveAfterALoadThatFoundDamageIsRefused) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(pg_record("0/16B2E48")));
  const std::string good = read_bytes(checkpoint->path());
  write_bytes(checkpoint->path(), good.substr(0, good.size() / 2));
  ASSERT_FALSE(checkpoint->load());
  EXPECT_FALSE(checkpoint->save(pg_record("0/16B2F00")));
  EXPECT_EQ(read_bytes(checkpoint->path()), good.substr(0, good.size() / 2));
}

TEST_F(FileCheckpointTest, SaveAfterTheFileWasMovedAwayStartsFresh) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(pg_record("0/16B2E48")));
  fs::rename(checkpoint->path(), dir_.path() / "moved-away.ckpt");
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded);
  EXPECT_FALSE(loaded->has_value());
  EXPECT_TRUE(checkpoint->save(pg_record("0/0")));
}

TEST_F(FileCheckpointTest, SaveThatCannotWriteIsATransientErrorNamingTheFile) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  const auto first = pg_record("0/16B2E48");
  ASSERT_TRUE(checkpoint->save(first));
  const fs::path tmp = checkpoint->path().string() + ".tmp";
  fs::create_directory(tmp);  // the temporary file cannot be created over a directory
  const auto status = checkpoint->save(pg_record("0/16B2F00"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(status.error().report().find(tmp.string()), std::string::npos)
      << status.error().report();
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ(**loaded, first);
}

TEST_F(FileCheckpointTest, SaveRefusesARecordThatWouldNotReadBack) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  auto record = pg_record("0/16B2E48");
  record.source_type = "bad \xff utf8";
  const auto status = checkpoint->save(record);
  ASSERT_FALSE(status);
  EXPECT_FALSE(fs::exists(checkpoint->path()));
  EXPECT_EQ(dir_entries(), std::vector<std::string>{});
}

TEST_F(FileCheckpointTest, ConcurrentSavesAndLoadsAlwaysSeeAWholeRecord) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&checkpoint, t] {
      for (int i = 0; i < 25; ++i) {
        CheckpointRecord r;
        r.source_type = "custom";
        r.source_id = "orders_slot";
        r.offset = std::to_string(t) + ":" + std::to_string(i);
        EXPECT_TRUE(checkpoint->save(r));
        const auto loaded = checkpoint->load();
        EXPECT_TRUE(loaded && loaded->has_value());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"checkpoint-orders_slot.ckpt"});
}

// --- invariant 6 through the file backend -----------------------------------------------------

TEST_F(FileCheckpointTest, Invariant6PostgresZeroLsnIsRefusedAndPreviousRecordStaysOnDisk) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  const auto first = pg_record("0/16B2E48", 100);
  ASSERT_TRUE(checkpoint->save(first));
  const std::string on_disk = read_bytes(checkpoint->path());

  const auto status = checkpoint->save(pg_record("0/0", 150));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  const std::string report = status.error().report();
  EXPECT_NE(report.find("0/16B2E48"), std::string::npos) << report;
  EXPECT_NE(report.find("'0/0'"), std::string::npos) << report;

  EXPECT_EQ(read_bytes(checkpoint->path()), on_disk);
  checkpoint.reset();  // one writer at a time: the instance holds the directory's lock
  auto reopened = open();
  ASSERT_TRUE(reopened);
  const auto loaded = reopened->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ(**loaded, first);
}

TEST_F(FileCheckpointTest, Invariant6PostgresBackwardsLsnIsAccepted) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(pg_record("0/16B2E48", 100)));
  const auto back = pg_record("0/16B2000", 101);
  ASSERT_TRUE(checkpoint->save(back));
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ(**loaded, back);
}

TEST_F(FileCheckpointTest, Invariant6MysqlRegressionIsRefusedAgainstARecordFromAnotherProcess) {
  {
    auto writer = open();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->save(mysql_record("mysql-bin.000012:4567")));
  }
  // A fresh instance has nothing cached and must compare against the file.
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  const auto status = checkpoint->save(mysql_record("mysql-bin.000012:100"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  EXPECT_TRUE(checkpoint->save(mysql_record("mysql-bin.000013:4")));
  EXPECT_FALSE(checkpoint->save(mysql_record("mysql-bin.000012:99999")));
  const auto loaded = checkpoint->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ((*loaded)->offset, "mysql-bin.000013:4");
}

TEST_F(FileCheckpointTest, Invariant6SqlServerCommitLsnIsCompared) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  CheckpointRecord r;
  r.source_type = "sqlserver";
  r.source_id = "orders_slot";
  r.offset = "0000002A000001F00003:0000002A000001F00002:2";
  ASSERT_TRUE(checkpoint->save(r));
  r.offset = "0000002A000001F00003";
  EXPECT_TRUE(checkpoint->save(r));
  r.offset = "0000002A000001E00009";
  EXPECT_FALSE(checkpoint->save(r));
}

TEST_F(FileCheckpointTest, Invariant6RecordOfAnotherSourceIdIsNotCompared) {
  auto checkpoint = open();
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE(checkpoint->save(mysql_record("mysql-bin.000012:4567")));
  auto renamed = mysql_record("mysql-bin.000001:4");
  renamed.source_id = "renamed_slot";
  EXPECT_TRUE(checkpoint->save(renamed));
}

}  // namespace
}  // namespace cppcdc
