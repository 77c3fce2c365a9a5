// The warning about a captured table without a primary key: once per table and process, as
// the server sends the table's relation message again after every reconnect (each reconnect
// has a new TransactionAssembler). A trial saw it 18 times. Driven by decoded messages.

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "source/postgres/assembler.hpp"

namespace cppcdc::pg {
namespace {

class NoKey final : public CatalogLookup {
 public:
  Result<RelationDetails> describe(const RelationMsg& rel) override {
    RelationDetails d;
    for (std::size_t i = 0; i < rel.columns.size(); ++i) {
      d.type_names.push_back("integer");
      d.not_null.push_back(false);
    }
    return d;  // no primary key
  }
};

RelationMsg keyless(const std::string& name) {
  RelationMsg r;
  r.relation_id = 11;
  r.namespace_name = "public";
  r.relation_name = name;
  r.replica_identity = 'f';
  r.columns = {RelationColumn{false, "v", 23, -1}};
  return r;
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(KeylessTableWarning, IsLoggedOncePerTableAndProcessAcrossReconnects) {
  std::ostringstream logged;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged);
  sink->set_pattern("%l %v");
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("keyless", sink);
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
  NoKey catalog;
  for (const char* table : {"nokey_a", "nokey_a", "nokey_a", "nokey_b", "nokey_b"}) {
    // A new assembler per relation message: a reconnect's.
    TransactionAssembler assembler(
        "postgres", [](const std::string&, const std::string&) { return true; }, catalog);
    std::vector<Event> out;
    ASSERT_TRUE(assembler.feed(keyless(table), Lsn(1), out));
  }
  spdlog::set_default_logger(previous);
  const std::string text = logged.str();
  EXPECT_EQ(count(text, "warning table public.nokey_a has no primary key to report"), 1u) << text;
  EXPECT_EQ(count(text, "warning table public.nokey_b has no primary key to report"), 1u) << text;
  EXPECT_EQ(count(text, "debug table public.nokey_a has no primary key to report"), 2u) << text;
}

}  // namespace
}  // namespace cppcdc::pg
