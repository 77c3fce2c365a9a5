#pragma once
// One PostgreSQL database of the shared test server and the real `cppcdc run` capturing its
// table public.t into the shared broker: the set-up the end-to-end codec tests have in common
// (Avro, Protobuf, JSON Schema, debezium_json). Each test writes its own [sink] lines and reads
// the topic back with its own independent reader.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "wait_until.hpp"

namespace cppcdc::kafka_it {

class PgCapture {
 public:
  /// A fresh database "<name>_<test>", in it public.t made by `create_table`; a topic tag
  /// unique to this run (the pipeline's source_name, so the topic is "<tag>.public.t"), a
  /// slot and an empty work directory, both named after `name` and this process.
  PgCapture(const std::string& name, std::string bootstrap, const std::string& create_table)
      : bootstrap_(std::move(bootstrap)),
        db_(it::test_database(name)),
        tag_(unique_topic(name)),
        slot_(name + "_" + std::to_string(::getpid())),
        dir_(std::filesystem::temp_directory_path() /
             ("cppcdc-" + name + "-" + std::to_string(::getpid()))) {
    it::fresh_database(db_);
    pg_.emplace(it::dsn_for(db_));
    pg_->query(create_table);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  /// Stops the run if it still goes and drops the slot; the work directory stays when the
  /// test failed, for its log.
  ~PgCapture() {
    stop();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  PgCapture(const PgCapture&) = delete;
  PgCapture& operator=(const PgCapture&) = delete;

  /// (Re)writes cdc.toml: the source, a [sink] of type kafka on the broker with
  /// create_topics = true followed by `sink_lines` (the codec, and tables below [sink]), and
  /// [state.offset] in the work directory.
  void write_config(const std::string& sink_lines) const {
    std::ofstream(dir_ / "cdc.toml")
        << "[source]\ndsn = \"" << it::dsn_for(db_) << "\"\ntables = [\"public.t\"]\nslot_name = \""
        << slot_ << "\"\nsource_name = \"" << tag_ << "\"\n\n[sink]\n"
        << "type = \"kafka\"\nbootstrap_servers = \"" << bootstrap_ << "\"\ncreate_topics = true\n"
        << sink_lines << "\n\n[state.offset]\ndir = \"" << (dir_ / "state").string() << "\"\n";
  }

  /// Starts `cppcdc run` and waits until it streams; a fatal failure of the test when it does
  /// not within 30 s (call it under ASSERT_NO_FATAL_FAILURE).
  void start() {
    stopped_ = false;
    it::start_cppcdc_process(child_, dir_, it::admin_dsn(), slot_);
  }

  /// Ends the run with SIGTERM (when one goes) and drops the database's slots. Idempotent.
  void stop() {
    it::stop_cppcdc_process(child_, SIGTERM);
    if (!stopped_) it::drop_slots(db_);
    stopped_ = true;
  }

  /// Polls `read(records, failed)` until the topic exists, a read succeeded and at least
  /// `count` records came back, for up to 90 s; then stops the run. False when they did
  /// not come; `records` holds the last read.
  template <class Record, class Read>
  bool await(std::size_t count, std::vector<Record>& records, Read read) {
    const bool arrived = test::wait_until(
        [&] {
          if (partition_count(bootstrap_, topic()) <= 0) return false;
          bool failed = false;
          records = read(failed);
          return !failed && records.size() >= count;
        },
        std::chrono::seconds(90));
    stop();
    return arrived;
  }

  it::PgSession& pg() { return *pg_; }
  const std::string& database() const { return db_; }
  const std::string& tag() const { return tag_; }
  std::string topic() const { return tag_ + ".public.t"; }
  std::string config() const { return (dir_ / "cdc.toml").string(); }
  /// The end of the run's log, for a failure message.
  std::string log() const { return it::log_tail(dir_ / "cppcdc.log"); }

 private:
  std::string bootstrap_;
  std::string db_;
  std::string tag_;
  std::string slot_;
  std::filesystem::path dir_;
  std::optional<it::PgSession> pg_;
  pid_t child_ = -1;
  bool stopped_ = false;
};

}  // namespace cppcdc::kafka_it
