#pragma once
// How the PostgreSQL source reads the WAL on its reader thread: one interface, two transports.
//   - streaming: START_REPLICATION over a replication connection (the CopyBoth stream), with
//     standby status updates and keepalives (streaming_reader.cpp);
//   - sql_peek: pg_logical_slot_peek_binary_changes() over SQL, advancing the slot with
//     pg_replication_slot_advance() (peek_reader.cpp).
// Either feeds pgoutput messages to the source's assembler and pushes whole transactions into
// the core's reader hand-off (core/reader_handoff.hpp). The interface is called around the
// loop, never per event.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/reader_handoff.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/result.hpp"
#include "source/postgres/assembler.hpp"
#include "source/postgres/pg_conn.hpp"

namespace cppcdc::pg::detail {

/// What a reader shares with the source it reads for.
struct ReaderShared {
  ReaderShared(const PostgresSourceConfig& c, cppcdc::detail::ReaderHandoff& h)
      : config(c), handoff(h) {}

  const PostgresSourceConfig& config;
  cppcdc::detail::ReaderHandoff& handoff;
  /// Everything up to here is checkpointed (Source::confirm); the streaming reader reports it
  /// to the server, the peek reader advances the slot to it.
  std::atomic<std::uint64_t> confirmed{0};
  /// The source asks for a fresh position soon (an incremental snapshot's chunk waits).
  std::atomic<bool> ping_now{false};
  /// A position every transaction committed before has been pushed: it may be checkpointed
  /// once the queue drains (Source::idle_offset). Guarded by handoff.locked().
  std::uint64_t idle_lsn = 0;
  /// request_progress() waits for a keepalive: signal the consumer when it comes. Guarded by
  /// handoff.locked().
  bool progress_wanted = false;

  /// Reports the reader's end to poll() (an error is logged at debug level too).
  void finish(std::optional<Error> error);
};

class WalReader {
 public:
  virtual ~WalReader() = default;
  /// Prepares to read from `from` (zero: from the slot's confirmed position): the streaming
  /// reader sends START_REPLICATION, the peek reader opens its connection. Called before the
  /// reader thread starts, or on it (after a blocking snapshot).
  virtual Status start(Lsn from) = 0;
  /// The reader thread's loop, until a stop (shared.handoff.stopping()) or an error; ends with
  /// shared.finish().
  virtual void run(TransactionAssembler& assembler) = 0;
  /// After the reader thread has ended: leaves the server politely (the streaming reader
  /// reports its position and ends the copy). Idempotent.
  virtual void close() = 0;
};

/// START_REPLICATION on `repl` (a replication connection; null: one is opened at start()).
std::unique_ptr<WalReader> make_streaming_reader(ReaderShared& shared, ConnPtr repl);

/// Peeks on a connection of its own; `sql` (the source's SQL connection, the reader thread's
/// while it runs) reads the flush position and advances the slot. `slot_confirmed`: the slot's
/// confirmed_flush_lsn at start.
std::unique_ptr<WalReader> make_peek_reader(ReaderShared& shared, PGconn* sql,
                                            Lsn slot_confirmed);

/// Transactions handed over while a spilled transaction is read back: events per push.
inline constexpr std::size_t kSpillPiece = 1000;

}  // namespace cppcdc::pg::detail
