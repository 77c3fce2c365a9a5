// pg_record_frames: connects to PostgreSQL as a logical replication client, streams a pgoutput
// slot with protocol version 1 and writes every CopyData payload it receives (XLogData and
// keepalive frames, headers included) as one line of lower-case hex. It stops once the stream
// has passed the given end LSN. The output feeds the golden tests in tests/golden/postgres.
//
//   pg_record_frames --conninfo "host=127.0.0.1 port=55499 user=postgres dbname=postgres"
//       --slot s --publication p --end-lsn 0/1A2B3C4 --out basic.frames [--no-messages]
//       [--start-lsn 0/0] [--idle-timeout 30]

#include <libpq-fe.h>
#include <sys/select.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "source/postgres/pgoutput.hpp"

namespace {

using cppcdc::pg::Lsn;

struct Options {
  std::string conninfo;
  std::string slot;
  std::string publication;
  std::string out;
  Lsn start;
  Lsn end;
  bool messages = true;
  int idle_timeout_s = 30;
};

constexpr std::int64_t kPgEpochOffsetUs = 946684800LL * 1000000LL;

std::int64_t pg_now() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(now).count() - kPgEpochOffsetUs;
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " --conninfo STR --slot NAME --publication NAME --end-lsn X/Y --out FILE"
               " [--start-lsn X/Y] [--no-messages] [--idle-timeout SECONDS]\n";
  return 2;
}

// Single quotes doubled, for an option value of START_REPLICATION.
std::string quote_literal(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

bool send_status(PGconn* conn, Lsn flushed, bool reply) {
  const std::string msg =
      cppcdc::pg::encode_standby_status(flushed, flushed, flushed, pg_now(), reply);
  return PQputCopyData(conn, msg.data(), static_cast<int>(msg.size())) == 1 && PQflush(conn) == 0;
}

void write_hex(std::ostream& os, std::span<const std::uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string line;
  line.reserve(bytes.size() * 2 + 1);
  for (const std::uint8_t b : bytes) {
    line.push_back(kHex[b >> 4]);
    line.push_back(kHex[b & 0xf]);
  }
  line.push_back('\n');
  os << line;
}

int run(const Options& opt) {
  const std::string conninfo = opt.conninfo + " replication=database";
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::cerr << "connect failed: " << PQerrorMessage(conn);
    PQfinish(conn);
    return 1;
  }
  char* slot_ident = PQescapeIdentifier(conn, opt.slot.c_str(), opt.slot.size());
  std::string command = "START_REPLICATION SLOT ";
  command.append(slot_ident).append(" LOGICAL ").append(opt.start.to_string());
  PQfreemem(slot_ident);
  command.append(" (proto_version '1', publication_names ").append(quote_literal(opt.publication));
  if (opt.messages) command.append(", messages 'true'");
  command.append(")");

  PGresult* res = PQexec(conn, command.c_str());
  if (PQresultStatus(res) != PGRES_COPY_BOTH) {
    std::cerr << "START_REPLICATION failed: " << PQerrorMessage(conn);
    PQclear(res);
    PQfinish(conn);
    return 1;
  }
  PQclear(res);

  std::ofstream out(opt.out, std::ios::binary | std::ios::trunc);
  if (!out) {
    std::cerr << "cannot open " << opt.out << "\n";
    PQfinish(conn);
    return 1;
  }

  Lsn confirmed = opt.start;
  std::size_t frames = 0;
  bool done = false;
  int rc = 0;
  while (!done) {
    char* buf = nullptr;
    const int n = PQgetCopyData(conn, &buf, 1);
    if (n == 0) {
      const int sock = PQsocket(conn);
      fd_set fds;
      FD_ZERO(&fds);
      FD_SET(sock, &fds);
      timeval tv{opt.idle_timeout_s, 0};
      const int ready = select(sock + 1, &fds, nullptr, nullptr, &tv);
      if (ready == 0) {
        std::cerr << "no data for " << opt.idle_timeout_s << " s before reaching "
                  << opt.end.to_string() << "\n";
        rc = 1;
        break;
      }
      if (ready < 0 || PQconsumeInput(conn) == 0) {
        std::cerr << "connection failed: " << PQerrorMessage(conn);
        rc = 1;
        break;
      }
      continue;
    }
    if (n == -1) {  // the server ended the stream
      PGresult* end = PQgetResult(conn);
      if (PQresultStatus(end) != PGRES_COMMAND_OK) {
        std::cerr << "stream ended: " << PQerrorMessage(conn);
        rc = 1;
      }
      PQclear(end);
      break;
    }
    if (n < 0) {
      std::cerr << "PQgetCopyData failed: " << PQerrorMessage(conn);
      rc = 1;
      break;
    }
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(buf),
                                              static_cast<std::size_t>(n));
    auto frame = cppcdc::pg::decode_copy_frame(bytes);
    if (!frame) {
      std::cerr << "undecodable frame: " << frame.error().report() << "\n";
      write_hex(out, bytes);
      PQfreemem(buf);
      rc = 1;
      break;
    }
    bool keep = true;
    bool reply = false;
    if (const auto* k = std::get_if<cppcdc::pg::PrimaryKeepalive>(&*frame)) {
      reply = k->reply_requested;
      if (k->wal_end >= opt.end) done = true;
    } else {
      const auto& x = std::get<cppcdc::pg::XLogData>(*frame);
      if (!x.data_start.is_zero() && x.data_start > opt.end) {
        keep = false;  // past the end: a later transaction
        done = true;
      } else if (auto msg = cppcdc::pg::decode_pgoutput(x.payload); !msg) {
        std::cerr << "undecodable pgoutput message: " << msg.error().report() << "\n";
      } else if (const auto* c = std::get_if<cppcdc::pg::CommitMsg>(&*msg)) {
        confirmed = c->end_lsn;
        reply = true;
        if (c->end_lsn >= opt.end) done = true;
      }
    }
    if (keep) {
      write_hex(out, bytes);
      ++frames;
    }
    PQfreemem(buf);
    if (reply && !send_status(conn, confirmed, false)) {
      std::cerr << "status update failed: " << PQerrorMessage(conn);
      rc = 1;
      break;
    }
  }
  out.flush();
  if (PQputCopyEnd(conn, nullptr) == 1) {
    PQflush(conn);
  }
  PQfinish(conn);
  std::cerr << "wrote " << frames << " frames to " << opt.out << " (confirmed "
            << confirmed.to_string() << ")\n";
  return out ? rc : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  bool have_end = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--no-messages") {
      opt.messages = false;
      continue;
    }
    if ((v = value()) == nullptr) return usage(argv[0]);
    if (arg == "--conninfo") {
      opt.conninfo = v;
    } else if (arg == "--slot") {
      opt.slot = v;
    } else if (arg == "--publication") {
      opt.publication = v;
    } else if (arg == "--out") {
      opt.out = v;
    } else if (arg == "--idle-timeout") {
      opt.idle_timeout_s = std::atoi(v);
    } else if (arg == "--start-lsn" || arg == "--end-lsn") {
      auto lsn = Lsn::parse(v);
      if (!lsn) {
        std::cerr << lsn.error().report() << "\n";
        return 2;
      }
      if (arg == "--start-lsn") {
        opt.start = *lsn;
      } else {
        opt.end = *lsn;
        have_end = true;
      }
    } else {
      return usage(argv[0]);
    }
  }
  if (opt.conninfo.empty() || opt.slot.empty() || opt.publication.empty() || opt.out.empty() ||
      !have_end || opt.idle_timeout_s <= 0) {
    return usage(argv[0]);
  }
  return run(opt);
}
