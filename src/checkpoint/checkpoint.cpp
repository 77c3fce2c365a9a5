// The invariant 6 guard shared by all checkpoint backends, and the in-memory backend.

#include "cppcdc/checkpoint.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/text_util.hpp"
#include "cppcdc/pg_lsn.hpp"

namespace cppcdc {
namespace {

constexpr std::string_view kPostgres = "postgres";
constexpr std::string_view kMysql = "mysql";
constexpr std::string_view kMariadb = "mariadb";
constexpr std::string_view kSqlServer = "sqlserver";

Error regression_error(const CheckpointRecord& previous, const CheckpointRecord& next,
                       std::string_view why) {
  std::string message = "refusing to replace the checkpoint of ";
  message += next.source_type;
  message += " source '";
  message += next.source_id;
  message += "' at position '";
  message += previous.offset;
  message += "' with position '";
  message += next.offset;
  message += "': ";
  message += why;
  message += "; this is a bug in the connector; the previous record is kept";
  return Error::checkpoint(ErrorKind::kTerminal, std::move(message));
}


// --- PostgreSQL ---------------------------------------------------------------------------
// The LSN of a pgoutput stream is not monotonic across transactions (commit order differs from
// WAL order when transactions interleave), so going back is legitimate. Zero, however, is never
// a position a stream can be at; it can only come from a decoding defect.
Status check_postgres(const CheckpointRecord& previous, const CheckpointRecord& next) {
  const auto lsn = pg::Lsn::parse(next.offset);
  if (!lsn) {
    return fail(regression_error(previous, next, "the new position is not a PostgreSQL LSN"));
  }
  if (lsn->is_zero()) {
    return fail(regression_error(previous, next,
                                 "the new position is the zero LSN, which no replication stream "
                                 "can reach"));
  }
  return ok();
}

// --- MySQL / MariaDB ----------------------------------------------------------------------
// A binlog coordinate "<basename>.<sequence>:<position>", e.g. "mysql-bin.000012:4567".
struct BinlogCoordinate {
  std::string_view basename;
  std::uint64_t sequence = 0;
  std::uint64_t position = 0;
};

// Anything else (a MySQL GTID set "uuid:1-5,uuid:7", a single "uuid:23", a tagged GTID, a
// MariaDB GTID list "0-1-100") yields nullopt: GTID-based offsets are not ordered by this guard.
std::optional<BinlogCoordinate> parse_binlog_coordinate(std::string_view offset) {
  if (offset.find(',') != std::string_view::npos) return std::nullopt;
  const auto colon = offset.find(':');
  if (colon == std::string_view::npos || colon != offset.rfind(':')) return std::nullopt;
  const std::string_view file = offset.substr(0, colon);
  const auto position = detail::parse_decimal(offset.substr(colon + 1));
  if (!position) return std::nullopt;
  const auto dot = file.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  const auto sequence = detail::parse_decimal(file.substr(dot + 1));
  if (!sequence) return std::nullopt;
  return BinlogCoordinate{file.substr(0, dot), *sequence, *position};
}

Status check_mysql(const CheckpointRecord& previous, const CheckpointRecord& next) {
  const auto before = parse_binlog_coordinate(previous.offset);
  const auto after = parse_binlog_coordinate(next.offset);
  if (!before || !after) return ok();
  // Sequence numbers of differently named binlogs (log_bin changed) share no scale.
  if (before->basename != after->basename) return ok();
  if (after->sequence < before->sequence) {
    return fail(regression_error(previous, next, "the binlog file sequence moves backwards"));
  }
  if (after->sequence == before->sequence && after->position < before->position) {
    return fail(regression_error(previous, next,
                                 "the position within the same binlog file moves backwards"));
  }
  return ok();
}

// --- SQL Server ---------------------------------------------------------------------------
// An offset is "<commit lsn>" or "<commit lsn>:<seqval>:<op>"; only the commit LSN is ordered,
// because a bare commit LSN and the long form of the same commit are both valid resume points.
// The LSN is hex ("0000002A000001F00003" or "0x0000002A000001F00003"). Returns the digits in
// lower case without leading zeros, so that (length, text) orders the values numerically, or
// nullopt when the text is not hex.
std::optional<std::string> normalized_commit_lsn(std::string_view offset) {
  std::string_view lsn = offset.substr(0, offset.find(':'));
  if (lsn.size() >= 2 && lsn[0] == '0' && (lsn[1] == 'x' || lsn[1] == 'X')) lsn.remove_prefix(2);
  if (lsn.empty()) return std::nullopt;
  std::string digits;
  digits.reserve(lsn.size());
  for (const char c : lsn) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
    if (digits.empty() && c == '0') continue;
    digits.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return digits;
}

Status check_sqlserver(const CheckpointRecord& previous, const CheckpointRecord& next) {
  const auto before = normalized_commit_lsn(previous.offset);
  const auto after = normalized_commit_lsn(next.offset);
  if (!before || !after) return ok();
  const bool backwards =
      after->size() != before->size() ? after->size() < before->size() : *after < *before;
  if (backwards) return fail(regression_error(previous, next, "the commit LSN moves backwards"));
  return ok();
}

}  // namespace

Status check_monotonic(const std::optional<CheckpointRecord>& previous,
                       const CheckpointRecord& next) {
  // Positions are only comparable within one source identity; a renamed slot or a different
  // source type starts a new, unrelated sequence.
  if (!previous || previous->source_type != next.source_type ||
      previous->source_id != next.source_id) {
    return ok();
  }
  const std::string_view type = next.source_type;
  if (type == kPostgres) return check_postgres(*previous, next);
  if (type == kMysql || type == kMariadb) return check_mysql(*previous, next);
  if (type == kSqlServer) return check_sqlserver(*previous, next);
  // Unknown source types are not second-guessed.
  return ok();
}

Result<std::optional<CheckpointRecord>> InMemoryCheckpoint::load() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return record_;
}

Status InMemoryCheckpoint::save(const CheckpointRecord& record) {
  const std::lock_guard<std::mutex> lock(mutex_);
  CPPCDC_TRY(check_monotonic(record_, record));
  record_ = record;
  return ok();
}

}  // namespace cppcdc
