// The sql_peek transport: pg_logical_slot_peek_binary_changes() over SQL, for servers where
// a replication connection is not available. Each peek reads from the slot's confirmed
// position again, so transactions handed over before are skipped up to a high-water mark; the
// slot is advanced (pg_replication_slot_advance) to what is confirmed before each peek. A
// peek that runs over statement_timeout is retried with half the window.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <variant>

#include "source/postgres/pgoutput.hpp"
#include "source/postgres/slot.hpp"
#include "source/postgres/wal_reader.hpp"

namespace cppcdc::pg::detail {
namespace {

class PeekReader final : public WalReader {
 public:
  PeekReader(ReaderShared& shared, PGconn* sql, Lsn slot_confirmed)
      : shared_(shared), config_(shared.config), sql_(sql), slot_confirmed_(slot_confirmed) {}

  // A connection of its own for the peeks (its results stream row by row while catalog
  // look-ups use the source's SQL connection), and the start-up repair: a checkpoint ahead of
  // the slot's confirmed_flush_lsn (cppcdc stopped between saving a checkpoint and advancing
  // the slot) moves the slot there, since a peek cannot be told where to start.
  Status start(Lsn start_lsn) override {
    auto peek = connect(config_.dsn, false);
    if (!peek) return fail(peek.error());
    peek_ = std::move(*peek);
    auto timeout = exec(peek_.get(), "select set_config('statement_timeout', $1, false)",
                        "setting statement_timeout for the peek connection",
                        {std::to_string(config_.peek_statement_timeout_ms)});
    if (!timeout) return fail(timeout.error());
    if (!start_lsn.is_zero() && start_lsn > slot_confirmed_) {
      CPPCDC_TRY(advance_slot(sql_, config_.slot_name, start_lsn));
      spdlog::info("advanced replication slot {} from {} to the checkpoint at {}",
                   config_.slot_name, slot_confirmed_.to_string(), start_lsn.to_string());
      slot_confirmed_ = start_lsn;
    }
    high_water_ = std::max(start_lsn, slot_confirmed_);
    advanced_ = high_water_.value();
    shared_.confirmed.store(high_water_.value());
    window_ = config_.peek_max_changes;
    spdlog::info("peeking slot {} from {} (publication {}, sql_peek transport)",
                 config_.slot_name, high_water_.to_string(), config_.publication_name);
    return ok();
  }

  void run(TransactionAssembler& assembler) override {
    assembler_ = &assembler;
    std::vector<Event> ready;
    std::vector<std::size_t> ready_bytes;  // the assembler's measure of each of `ready`
    while (!shared_.handoff.stopping()) {
      shared_.handoff.release_recycled();
      // The slot follows what is checkpointed (confirm() stores it), before each peek.
      const std::uint64_t confirmed = shared_.confirmed.load();
      if (confirmed > advanced_) {
        if (auto st = advance_slot(sql_, config_.slot_name, Lsn(confirmed)); !st) return shared_.finish(st.error());
        advanced_ = confirmed;
      }
      // Everything committed before this position is in the peek unless the window cuts it.
      auto flush = exec(sql_, "select pg_current_wal_flush_lsn()",
                        "reading the server's WAL flush position");
      if (!flush) return shared_.finish(flush.error());
      auto flush_lsn = get_lsn(flush->get(), 0, 0, "pg_current_wal_flush_lsn()");
      if (!flush_lsn) return shared_.finish(flush_lsn.error());
      const Lsn flushed = *flush_lsn;

      std::uint64_t rows = 0, fresh = 0;
      auto st = peek_once(ready, ready_bytes, rows, fresh);
      if (shared_.handoff.stopping()) break;
      if (!st) {
        if (st.error().message().find("SQLSTATE 57014") == std::string::npos) {
          return shared_.finish(st.error());
        }
        // statement_timeout: what was fed of an unfinished transaction is dropped (it comes
        // again whole), and the next peek asks for half as much. Not an idle slot.
        assembler_->reset_transaction();
        skipping_ = false;
        if (window_ <= 1) {
          return shared_.finish(Error::source(
              ErrorKind::kTerminal,
              "a peek of replication slot " + config_.slot_name +
                  " that asks for a single transaction still runs over "
                  "peek_statement_timeout_ms (" +
                  std::to_string(config_.peek_statement_timeout_ms) +
                  " ms): that transaction is too big, or the slot's restart_lsn is far behind "
                  "its confirmed position (every peek decodes from restart_lsn, which an old "
                  "open transaction holds back); raise the setting or use the "
                  "streaming_replication transport")
                  .for_setting(SettingOwner::kSource, "peek_statement_timeout_ms"));
        }
        window_ = std::max<std::uint32_t>(1, window_ / 2);
        spdlog::warn("a peek of slot {} ran over statement_timeout ({} ms); asking for {} "
                     "changes per peek from now on",
                     config_.slot_name, config_.peek_statement_timeout_ms, window_);
        continue;
      }
      if (rows < window_ && !assembler_->in_transaction()) {
        // The peek was not cut short: nothing committed before `flushed` is still to come.
        shared_.handoff.locked([&](auto&) {
          if (flushed > high_water_) high_water_ = flushed;
          shared_.idle_lsn = std::max(shared_.idle_lsn, high_water_.value());
        });
      }
      if (fresh > 0) {
        window_ = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(config_.peek_max_changes, std::uint64_t{window_} * 2));
        // Let the consumer take what was found before peeking again: a peek re-reads
        // everything the slot has not been advanced past.
        shared_.handoff.wait_drained(std::chrono::milliseconds(config_.peek_interval_ms));
      } else {
        shared_.handoff.nap(static_cast<int>(config_.peek_interval_ms));
      }
    }
    shared_.finish(std::nullopt);
  }

  void close() override { peek_.reset(); }

 private:
  // One peek, fed row by row (single-row mode) into the assembler. `rows`: rows returned;
  // `fresh`: rows that were new (not already handed over by an earlier peek).
  Status peek_once(std::vector<Event>& ready, std::vector<std::size_t>& ready_bytes,
                   std::uint64_t& rows, std::uint64_t& fresh) {
    PGconn* conn = peek_.get();
    std::string sql =
        "select lsn, data from pg_logical_slot_peek_binary_changes($1, NULL, $2::int, "
        "'proto_version', '1', 'publication_names', $3";
    if (config_.capture_logical_messages) sql += ", 'messages', 'true'";
    sql += ")";
    const std::string window = std::to_string(window_);
    const std::string pubs = quote_ident(config_.publication_name);
    const char* values[3] = {config_.slot_name.c_str(), window.c_str(), pubs.c_str()};
    if (PQsendQueryParams(conn, sql.c_str(), 3, nullptr, values, nullptr, nullptr, 1) != 1) {
      return fail(error_from_conn(conn, "peeking replication slot " + config_.slot_name));
    }
    PQsetSingleRowMode(conn);
    std::optional<Error> error;
    bool cancelled = false;
    for (;;) {
      while (PQisBusy(conn)) {
        if (shared_.handoff.stopping() && !cancelled) {
          // close(): cancel the peek rather than wait for it.
          if (PGcancel* c = PQgetCancel(conn)) {
            char buf[256];
            PQcancel(c, buf, sizeof buf);
            PQfreeCancel(c);
          }
          cancelled = true;
        }
        if (auto readable = shared_.handoff.wait_readable(PQsocket(conn), 1000); !readable) {
          return fail(readable.error());
        }
        if (PQconsumeInput(conn) == 0) {
          return fail(error_from_conn(conn, "reading a peek of slot " + config_.slot_name));
        }
      }
      PgResultPtr res(PQgetResult(conn));
      if (!res) break;
      const auto status = PQresultStatus(res.get());
      if (status == PGRES_SINGLE_TUPLE) {
        if (error || cancelled) continue;  // drain the rest
        ++rows;
        auto st = peek_row(res.get(), ready, ready_bytes, fresh);
        if (!st) {
          error = st.error();
          continue;
        }
        if (!ready.empty() && !shared_.handoff.push(ready, &ready_bytes)) error = Error::internal("stopped");
        while (!error && assembler_->spilled_ready() && !shared_.handoff.stopping()) {
          auto drained = assembler_->drain_spilled(ready, kSpillPiece);
          if (!drained) error = drained.error();
          if (!error && !shared_.handoff.push(ready, &ready_bytes)) error = Error::internal("stopped");
        }
      } else if (status != PGRES_TUPLES_OK && !error) {
        error = error_from_result(res.get(), conn, "peeking replication slot " +
                                                               config_.slot_name);
      }
    }
    if (error) return fail(*error);
    return ok();
  }

  Status peek_row(const PGresult* res, std::vector<Event>& ready,
                  std::vector<std::size_t>& ready_bytes, std::uint64_t& fresh) {
    if (PQgetisnull(res, 0, 0) || PQgetisnull(res, 0, 1) || PQgetlength(res, 0, 0) != 8) {
      return fail(Error::invalid_data("a peek of slot " + config_.slot_name +
                                      " returned a row without an LSN or data"));
    }
    std::uint64_t lsn = 0;
    const auto* p = reinterpret_cast<const std::uint8_t*>(PQgetvalue(res, 0, 0));
    for (int i = 0; i < 8; ++i) lsn = (lsn << 8) | p[i];
    const Lsn position(lsn);
    std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(PQgetvalue(res, 0, 1)),
                                        static_cast<std::size_t>(PQgetlength(res, 0, 1)));
    auto message = decode_pgoutput(bytes);
    if (!message) {
      return fail(message.error().context("decoding the pgoutput message peeked at " +
                                          position.to_string()));
    }
    // A peek starts again at the slot's confirmed position, so it returns transactions already
    // handed over until the slot is advanced past them: skip whole transactions whose commit
    // lies before the high-water mark, and non-transactional messages at or before it.
    if (skipping_) {
      if (std::holds_alternative<CommitMsg>(*message)) skipping_ = false;
      if (const auto* r = std::get_if<RelationMsg>(&*message)) {
        // This peek's pgoutput will not describe the relation again, and after a restart
        // the assembler has not seen it yet: take it in, silently (it was announced when the
        // transaction was first handed over).
        return assembler_->observe_relation(*r);
      }
      return ok();
    }
    if (const auto* b = std::get_if<BeginMsg>(&*message); b && b->final_lsn < high_water_) {
      skipping_ = true;
      return ok();
    }
    if (const auto* m = std::get_if<LogicalMessageMsg>(&*message);
        m && !m->transactional && !(m->lsn > high_water_)) {
      return ok();
    }
    ++fresh;
    const auto* commit = std::get_if<CommitMsg>(&*message);
    const auto* loose = std::get_if<LogicalMessageMsg>(&*message);
    const Lsn mark = commit ? commit->end_lsn : (loose && !loose->transactional ? loose->lsn : Lsn());
    auto st = assembler_->feed(std::move(*message), position, ready, &ready_bytes);
    if (!st) return fail(st.error().context("at WAL position " + position.to_string()));
    if (mark > high_water_) shared_.handoff.locked([&](auto&) { high_water_ = mark; });
    return ok();
  }

  ReaderShared& shared_;
  const PostgresSourceConfig& config_;
  PGconn* sql_;  // the source's; the reader thread's while it runs
  Lsn slot_confirmed_;
  ConnPtr peek_;
  TransactionAssembler* assembler_ = nullptr;  // run()'s
  Lsn high_water_;              // everything before it was handed over (handoff.locked())
  std::uint64_t advanced_ = 0;  // where the slot was last advanced to
  std::uint32_t window_ = 0;    // upto_nchanges of the next peek
  bool skipping_ = false;       // inside a transaction handed over before
};

}  // namespace

std::unique_ptr<WalReader> make_peek_reader(ReaderShared& shared, PGconn* sql,
                                            Lsn slot_confirmed) {
  return std::make_unique<PeekReader>(shared, sql, slot_confirmed);
}

}  // namespace cppcdc::pg::detail
