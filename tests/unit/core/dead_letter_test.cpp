// The dead-letter file (cppcdc/dead_letter.hpp): one JSON line per record with the event, the
// error, the stage or sink and the time; durable after flush(); created 0600; a torn last
// line cut off on open; an empty file it created removed at close.

#include "cppcdc/dead_letter.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace cppcdc;

namespace {

class DeadLetterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cppcdc-dead-letter-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

Event sample(int id) {
  return EventBuilder("customers", Operation::kUpdate)
      .schema("public")
      .source({"postgres", "0/" + std::to_string(0x100 + id), 1700000000000})
      .primary_key({"id"})
      .after({ColumnValue{"id", std::to_string(id), false},
              ColumnValue{"email", std::string("a\"b\n@example.com"), false}})
      .build();
}

}  // namespace

TEST_F(DeadLetterTest, ARecordHoldsTheEventTheErrorTheStageAndTheTime) {
  const fs::path path = dir_ / "sub" / "dead.jsonl";
  auto writer = DeadLetterWriter::open(path).value();
  const Error error = Error::invalid_data("not a ciphertext").context("transform stage \"pii\"");
  ASSERT_TRUE(writer->append(sample(1), error, DeadLetterOrigin::stage("pii")));
  EXPECT_EQ(writer->pending(), 1u);
  EXPECT_EQ(read(path), "") << "append() only buffers";
  ASSERT_TRUE(writer->flush());
  EXPECT_EQ(writer->records(), 1u);
  ASSERT_TRUE(writer->write(sample(2), Error::transient("503"), DeadLetterOrigin::sink("hook")));
  ASSERT_TRUE(writer->close());

  std::istringstream lines(read(path));
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  const auto record = boost::json::parse(line).as_object();
  EXPECT_EQ(record.at("stage").as_string(), "pii");
  EXPECT_FALSE(record.contains("sink"));
  EXPECT_EQ(record.at("error_kind").as_string(), "invalid_data");
  EXPECT_EQ(record.at("error").as_string(), error.report());
  const std::string time(record.at("time").as_string().c_str());
  EXPECT_EQ(time.size(), 24u) << time;  // 2026-01-01T12:00:00.123Z
  EXPECT_EQ(time.back(), 'Z');
  auto event = Event::from_json(boost::json::serialize(record.at("event")));
  ASSERT_TRUE(event) << event.error().report();
  EXPECT_EQ(event->to_json(), sample(1).to_json());

  ASSERT_TRUE(std::getline(lines, line));
  const auto second = boost::json::parse(line).as_object();
  EXPECT_EQ(second.at("sink").as_string(), "hook");
  EXPECT_EQ(second.at("error_kind").as_string(), "transient");
  EXPECT_FALSE(std::getline(lines, line));
}

TEST_F(DeadLetterTest, TheFileIsCreatedReadableByTheOwnerOnlyOrWithTheModeAsked) {
  const mode_t old_mask = ::umask(0);
  {
    auto writer = DeadLetterWriter::open(dir_ / "a.jsonl").value();
    ASSERT_TRUE(writer->write(sample(1), Error::internal("x"), DeadLetterOrigin::stage("s")));
    auto wide = DeadLetterWriter::open(dir_ / "b.jsonl", DeadLetterOptions{0640}).value();
    ASSERT_TRUE(wide->write(sample(1), Error::internal("x"), DeadLetterOrigin::stage("s")));
  }
  ::umask(old_mask);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "a.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ / "b.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(DeadLetterTest, ATornLastLineIsCutOffAndRecordsAreAppended) {
  fs::create_directories(dir_);
  const fs::path path = dir_ / "dead.jsonl";
  std::ofstream(path) << "{\"complete\":1}\n{\"torn";
  auto writer = DeadLetterWriter::open(path).value();
  EXPECT_EQ(read(path), "{\"complete\":1}\n");
  ASSERT_TRUE(writer->write(sample(3), Error::internal("x"), DeadLetterOrigin::stage("s")));
  ASSERT_TRUE(writer->close());
  const std::string text = read(path);
  EXPECT_EQ(text.rfind("{\"complete\":1}\n{\"time\":", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(DeadLetterTest, AFileCreatedAndNeverWrittenIsRemovedAtClose) {
  const fs::path path = dir_ / "new" / "dead.jsonl";
  auto writer = DeadLetterWriter::open(path).value();
  EXPECT_TRUE(fs::exists(path));
  ASSERT_TRUE(writer->close());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(dir_ / "new"));
  const auto appended =
      writer->append(sample(1), Error::internal("x"), DeadLetterOrigin::stage("s"));
  ASSERT_FALSE(appended);
  EXPECT_EQ(appended.error().kind(), ErrorKind::kInvalidState);
}

TEST_F(DeadLetterTest, AnUnwritablePlaceIsAConfigurationErrorNamingTheFile) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  const auto opened = DeadLetterWriter::open(dir_ / "file" / "dead.jsonl");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kConfiguration);
  EXPECT_NE(opened.error().report().find((dir_ / "file" / "dead.jsonl").string()),
            std::string::npos)
      << opened.error().report();
}
