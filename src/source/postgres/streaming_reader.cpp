// The streaming transport: START_REPLICATION over a replication connection. The reader
// thread reads CopyBoth frames, decodes them, feeds the assembler and pushes whole
// transactions; it answers keepalives, reports the confirmed position in standby status
// updates, asks for keepalives while idle (their position lets a quiet pipeline release WAL)
// and gives up on a connection that stays silent past wal_receiver_timeout_ms.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "source/postgres/pgoutput.hpp"
#include "source/postgres/slot.hpp"
#include "source/postgres/wal_reader.hpp"

namespace cppcdc::pg::detail {

void ReaderShared::finish(std::optional<Error> error) {
  if (error) spdlog::debug("reader stopped: {}", error->report());
  handoff.finish(std::move(error));
}

namespace {

PgTimestamp pg_now() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return us - 946684800000000LL;
}

class StreamingReader final : public WalReader {
 public:
  StreamingReader(ReaderShared& shared, ConnPtr repl)
      : shared_(shared), config_(shared.config), repl_(std::move(repl)) {}

  Status start(Lsn start_lsn) override {
    if (!repl_) {  // the connection that created the slot with a snapshot is reused
      auto repl = connect(config_.dsn, true);
      if (!repl) return fail(repl.error());
      repl_ = std::move(*repl);
    }
    const std::string cmd = "START_REPLICATION SLOT " + quote_ident(config_.slot_name) +
                            " LOGICAL " + start_lsn.to_string() +
                            (config_.stream_in_progress ? " (proto_version '2', streaming 'on'"
                                                        : " (proto_version '1'") +
                            ", publication_names " +
                            quote_literal(quote_ident(config_.publication_name)) +
                            (config_.capture_logical_messages ? ", messages 'true'" : "") + ")";
    PgResultPtr res(PQexec(repl_.get(), cmd.c_str()));
    if (!res || PQresultStatus(res.get()) != PGRES_COPY_BOTH) {
      Error e = error_from_result(res.get(), repl_.get(),
                                          "START_REPLICATION on slot " + config_.slot_name);
      if (e.message().find("is active for PID") != std::string::npos) {
        e = slot_in_use_error(config_.slot_name, std::move(e));
      }
      return fail(std::move(e));
    }
    spdlog::info("streaming from slot {} at {} (publication {})", config_.slot_name,
                 start_lsn.is_zero() ? std::string("the slot's confirmed position")
                                     : start_lsn.to_string(),
                 config_.publication_name);
    shared_.confirmed.store(std::max(shared_.confirmed.load(), start_lsn.value()));
    sent_flush_ = 0;
    streaming_ = true;
    return ok();
  }

  bool send_status(bool reply_requested) {
    const Lsn flushed(shared_.confirmed.load());
    const Lsn written(std::max(received_.load(), flushed.value()));
    const std::string msg = encode_standby_status(written, flushed, flushed, pg_now(),
                                                  reply_requested);
    if (PQputCopyData(repl_.get(), msg.data(), static_cast<int>(msg.size())) != 1 ||
        PQflush(repl_.get()) != 0) {
      return false;
    }
    sent_flush_ = flushed.value();
    last_status_ = std::chrono::steady_clock::now();
    return true;
  }

  bool receiver_timed_out() const {
    return config_.wal_receiver_timeout_ms > 0 &&
           std::chrono::steady_clock::now() - last_received_ >
               std::chrono::milliseconds(config_.wal_receiver_timeout_ms);
  }

  bool status_due() const {
    return shared_.confirmed.load() != sent_flush_ ||
           std::chrono::steady_clock::now() - last_status_ >
               std::chrono::milliseconds(config_.status_interval_ms);
  }

  void run(TransactionAssembler& assembler) override {
    assembler_ = &assembler;
    PGconn* conn = repl_.get();
    std::vector<Event> ready;
    std::vector<std::size_t> ready_bytes;  // the assembler's measure of each of `ready`
    last_status_ = std::chrono::steady_clock::now();
    last_received_ = last_status_;
    std::uint32_t frames_since_wait = 0;  // messages taken since the socket was last waited on
    std::size_t bytes_since_wait = 0;     // and their bytes
    while (!shared_.handoff.stopping()) {
      if (status_due() && !send_status(false)) {
        return shared_.finish(error_from_conn(conn, "sending a standby status update"));
      }
      const auto now = std::chrono::steady_clock::now();
      const bool asked = shared_.ping_now.exchange(false);  // an incremental snapshot's chunk waits
      if ((!assembler_->in_transaction() || now - last_received_ > std::chrono::seconds(1)) &&
          (asked || now - last_ping_ > std::chrono::seconds(1))) {
        // Ask for a keepalive: its WAL position lets an idle pipeline release WAL, and its
        // arrival shows the connection is alive (also inside a transaction that has gone
        // quiet, e.g. while the walsender skips a long run of unpublished changes).
        last_ping_ = now;
        if (!send_status(true)) {
          return shared_.finish(error_from_conn(conn, "sending a standby status update"));
        }
      }
      char* buf = nullptr;
      const int n = PQgetCopyData(conn, &buf, 1);
      if (n > 0) {
        ++frames_since_wait;
        bytes_since_wait += static_cast<std::size_t>(n);
        std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(buf),
                                            static_cast<std::size_t>(n));
        auto st = handle_frame(bytes, ready, ready_bytes);
        PQfreemem(buf);
        if (!st) return shared_.finish(st.error());
        if (!ready.empty() && !push(ready, ready_bytes)) {
          return shared_.finish(error_from_conn(conn, "sending a standby status update"));
        }
        // A spilled transaction is handed over in pieces, each waiting for room in the
        // queue, so memory stays bounded however large the transaction is.
        while (assembler_->spilled_ready() && !shared_.handoff.stopping()) {
          auto drained = assembler_->drain_spilled(ready, kSpillPiece);
          if (!drained) return shared_.finish(drained.error());
          if (!push(ready, ready_bytes)) {
            return shared_.finish(error_from_conn(conn, "sending a standby status update"));
          }
        }
        // After the frame was handled: time spent on catalog look-ups or waiting for the
        // consumer is not silence of the server.
        last_received_ = std::chrono::steady_clock::now();
        continue;
      }
      if (n == 0) {
        if (frames_since_wait > 0 && frames_since_wait < kTrickleFrames &&
            bytes_since_wait < kTrickleBytes) {
          // The stream trickles in a few small messages per read: then every recv costs more
          // than what it brings (a system call, a wake-up and an ACK per message, on both
          // ends). A 1 ms pause lets the server's messages gather in the socket; it ends at
          // once when the pipeline wakes the reader (an acknowledgement, a stop). Not for
          // larger messages: a pause per read would then cap the stream at what the TCP
          // window holds per millisecond.
          shared_.handoff.nap(1);
        }
        frames_since_wait = 0;
        bytes_since_wait = 0;
        shared_.handoff.release_recycled();
        const auto readable = shared_.handoff.wait_readable(PQsocket(conn), 1000);
        if (!readable) return shared_.finish(readable.error());
        if (PQconsumeInput(conn) == 0) {
          return shared_.finish(error_from_conn(conn, "reading the replication stream"));
        }
        if (!*readable && receiver_timed_out()) {
          // A connection whose packets go nowhere (a dead route, a firewall dropping them)
          // raises no error while we only write to it: without this, the pipeline would
          // wait forever. The runtime reconnects under its retry policy.
          return shared_.finish(Error::source(
              ErrorKind::kTransient,
              "nothing received on the replication connection for " +
                  std::to_string(config_.wal_receiver_timeout_ms) +
                  " ms (wal_receiver_timeout_ms) although a keepalive was requested every "
                  "second; the connection is presumed dead"));
        }
        continue;
      }
      if (n == -1) {
        PgResultPtr res(PQgetResult(conn));
        if (res && PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
          return shared_.finish(error_from_result(res.get(), conn, "the replication stream"));
        }
        return shared_.finish(Error::source(ErrorKind::kTransient,
                                    "the server ended the replication stream"));
      }
      return shared_.finish(error_from_conn(conn, "reading the replication stream"));
    }
    shared_.finish(std::nullopt);
  }

  Status handle_frame(std::span<const std::uint8_t> bytes, std::vector<Event>& ready,
                      std::vector<std::size_t>& ready_bytes) {
    auto frame = decode_copy_frame(bytes);
    if (!frame) return fail(frame.error().context("decoding a replication frame"));
    if (auto* k = std::get_if<PrimaryKeepalive>(&*frame)) {
      if (!assembler_->in_transaction()) {
        // Every transaction committed before this position was sent before this keepalive
        // and has been pushed already; one still open commits later and is sent again from
        // here. So once the queue drains, this position may be checkpointed.
        shared_.handoff.locked([&](auto& h) {
          shared_.idle_lsn = std::max(shared_.idle_lsn, k->wal_end.value());
          if (shared_.progress_wanted) {
            shared_.progress_wanted = false;
            h.signal_consumer();
          }
        });
      }
      if (k->reply_requested && !send_status(false)) {
        return fail(error_from_conn(repl_.get(), "answering a keepalive"));
      }
      return ok();
    }
    const auto& x = std::get<XLogData>(*frame);
    std::uint32_t change_xid = 0;
    auto message = decode_pgoutput(x.payload, assembler_->in_stream() ? &change_xid : nullptr);
    if (!message) {
      return fail(message.error().context("decoding the pgoutput message at " +
                                          x.data_start.to_string()));
    }
    std::uint64_t end = 0;
    if (const auto* commit = std::get_if<CommitMsg>(&*message)) {
      end = commit->end_lsn.value();
    } else if (const auto* streamed = std::get_if<StreamCommitMsg>(&*message)) {
      end = streamed->end_lsn.value();
    }
    auto st = assembler_->feed(std::move(*message), x.data_start, ready, &ready_bytes, change_xid);
    if (!st) return fail(st.error().context("at WAL position " + x.data_start.to_string()));
    if (end > received_.load()) received_.store(end);
    return ok();
  }

  void close() override {
    if (repl_ && streaming_) {
      // Tell the server where we are before leaving, then end the copy politely.
      send_status(false);
      PQputCopyEnd(repl_.get(), nullptr);
      PQflush(repl_.get());
    }
    repl_.reset();
    streaming_ = false;
  }

 private:
  // Pushes a whole transaction (ReaderHandoff::push); keeps feedback flowing while it waits
  // for room in the queue.
  bool push(std::vector<Event>& events, std::vector<std::size_t>& sizes) {
    return shared_.handoff.push(events, &sizes, nullptr,
                                [this] { return !status_due() || send_status(false); });
  }

  ReaderShared& shared_;
  const PostgresSourceConfig& config_;
  ConnPtr repl_;
  bool streaming_ = false;  // repl_ is in COPY mode (START_REPLICATION succeeded)
  TransactionAssembler* assembler_ = nullptr;  // run()'s
  std::atomic<std::uint64_t> received_{0};
  std::chrono::steady_clock::time_point last_ping_;
  std::chrono::steady_clock::time_point last_received_;
  std::uint64_t sent_flush_ = 0;
  std::chrono::steady_clock::time_point last_status_;

  // A read of the replication socket that brings fewer messages than kTrickleFrames, and
  // fewer bytes than kTrickleBytes, makes the reader pause 1 ms before the next (run).
  static constexpr std::uint32_t kTrickleFrames = 16;
  static constexpr std::size_t kTrickleBytes = 4096;
};

}  // namespace

std::unique_ptr<WalReader> make_streaming_reader(ReaderShared& shared, ConnPtr repl) {
  return std::make_unique<StreamingReader>(shared, std::move(repl));
}

}  // namespace cppcdc::pg::detail
