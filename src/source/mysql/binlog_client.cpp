// The binlog client: start-up checks, start positions, and the dump session over Connector/C.

#include "source/mysql/binlog_client.hpp"

#include <errmsg.h>
#include <mysqld_error.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>

#include "core/text_util.hpp"

namespace cppcdc::mysql::detail {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

Error check_failed(const std::string& problem, const std::string& remedy) {
  return Error::source(ErrorKind::kTerminal, problem + "; " + remedy);
}

// MariaDB GTID position "d-s-n[,d-s-n...]": domain -> (server, sequence). nullopt when it does
// not parse.
std::optional<std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>>> parse_maria_gtids(
    std::string_view text) {
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const auto a = item.find('-');
    const auto b = a == std::string_view::npos ? a : item.find('-', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    const auto d = cppcdc::detail::parse_decimal(item.substr(0, a));
    const auto s = cppcdc::detail::parse_decimal(item.substr(a + 1, b - a - 1));
    const auto n = cppcdc::detail::parse_decimal(item.substr(b + 1));
    if (!d || !s || !n) return std::nullopt;
    out[*d] = {*s, *n};
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string value_or_empty(const Rows& rows, std::size_t col) {
  if (rows.rows.empty() || rows.rows[0].size() <= col || !rows.rows[0][col]) return {};
  return *rows.rows[0][col];
}

}  // namespace

std::string StreamStart::offset() const {
  if (!gtid.empty()) return gtid;
  return file + ":" + std::to_string(position);
}

Result<ServerInfo> check_server(MYSQL* conn, const MysqlSourceConfig& config) {
  ServerInfo info;
  auto vars = query(conn,
                    "SELECT @@version, @@log_bin, @@binlog_format, @@binlog_row_image, "
                    "@@binlog_checksum",
                    "reading the server's binlog settings");
  if (!vars) return fail(vars.error());
  info.version = value_or_empty(*vars, 0);
  info.mariadb = info.version.find("MariaDB") != std::string::npos;
  const ServerFlavor actual = info.mariadb ? ServerFlavor::kMariaDb : ServerFlavor::kMySql;
  if (actual != config.flavor) {
    return fail(Error::configuration(
        "the server is " + std::string(info.mariadb ? "MariaDB " : "MySQL ") + info.version +
        " but the source type is " + std::string(to_string(config.flavor)) +
        "; use source type \"" + std::string(to_string(actual)) + "\""));
  }
  const std::string log_bin = upper(value_or_empty(*vars, 1));
  if (log_bin != "1" && log_bin != "ON") {
    return fail(check_failed("binary logging is off on the server (log_bin)",
                             "start the server with --log-bin (and binlog_format=ROW); "
                             "it cannot be turned on at run time"));
  }
  const std::string format = upper(value_or_empty(*vars, 2));
  if (format != "ROW") {
    return fail(check_failed(
        "binlog_format is " + format + ", but change capture needs ROW",
        "run SET GLOBAL binlog_format = 'ROW' and set binlog_format=ROW in the server's "
        "configuration (sessions opened before keep their format until they reconnect)"));
  }
  const std::string image = upper(value_or_empty(*vars, 3));
  info.full_row_image = image == "FULL";
  if (!info.full_row_image) {
    spdlog::warn(
        "binlog_row_image is {} (not FULL): update and delete events carry only the "
        "columns the server logs, the others are listed as unavailable; SET GLOBAL "
        "binlog_row_image = 'FULL' for complete before images",
        image);
  }
  info.checksum = upper(value_or_empty(*vars, 4));
  // Privileges: SHOW GRANTS lists what the current user holds (roles aside).
  auto grants = query(conn, "SHOW GRANTS", "reading the user's privileges");
  if (!grants) return fail(grants.error());
  std::string all;
  for (const auto& row : grants->rows) {
    if (!row.empty() && row[0]) all += upper(*row[0]) + "\n";
  }
  const bool everything = all.find("ALL PRIVILEGES ON *.*") != std::string::npos;
  const bool super = everything || all.find("SUPER") != std::string::npos;
  if (!everything && all.find("REPLICATION SLAVE") == std::string::npos &&
      all.find("REPLICATION REPLICA") == std::string::npos) {
    return fail(
        check_failed("the user " + config.user + " lacks the REPLICATION SLAVE privilege",
                     "GRANT REPLICATION SLAVE" +
                         std::string(info.mariadb ? ", BINLOG MONITOR" : ", REPLICATION CLIENT") +
                         ", SELECT ON *.* TO the user"));
  }
  if (!super &&
      all.find(info.mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT") == std::string::npos &&
      all.find("REPLICATION CLIENT") == std::string::npos) {
    return fail(check_failed(
        "the user " + config.user + " lacks the " +
            std::string(info.mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT") +
            " privilege (needed to read the binlog position)",
        std::string("GRANT ") + (info.mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT") +
            " ON *.* TO the user"));
  }
  // GTIDs.
  if (info.mariadb) {
    info.gtid = config.gtid_mode != GtidMode::kOff;
  } else {
    auto mode = query(conn, "SELECT @@gtid_mode", "reading gtid_mode");
    const bool on = mode && upper(value_or_empty(*mode, 0)) == "ON";
    if (config.gtid_mode == GtidMode::kOn) {
      // Connector/C's replication API sends COM_BINLOG_DUMP only (no COM_BINLOG_DUMP_GTID).
      return fail(Error::configuration(
                      "resuming a MySQL binlog by GTID is not supported by this build (the "
                      "client library sends file-and-position dumps only); use \"auto\" or "
                      "\"off\"" +
                      std::string(on ? "" : " (and the server's gtid_mode is not ON)"))
                      .for_setting(SettingOwner::kSource, "gtid_mode"));
    }
    info.gtid = false;
  }
  return info;
}

Result<StreamStart> current_position(MYSQL* conn, const ServerInfo& server) {
  auto status = query(conn, "SHOW MASTER STATUS", "reading the binlog position");
  if (!status) return fail(status.error());
  if (status->rows.empty() || status->rows[0].size() < 2 || !status->rows[0][0] ||
      !status->rows[0][1]) {
    return fail(check_failed(
        "SHOW MASTER STATUS returned nothing (binary logging off, or the "
        "user may not see it)",
        std::string("GRANT ") + (server.mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT") +
            " ON *.* TO the user"));
  }
  StreamStart start;
  start.file = *status->rows[0][0];
  const auto pos = cppcdc::detail::parse_decimal(*status->rows[0][1]);
  if (!pos) {
    return fail(
        Error::invalid_data("SHOW MASTER STATUS gave position '" + *status->rows[0][1] + "'"));
  }
  start.position = *pos;
  if (server.mariadb && server.gtid) {
    auto gtid = query(conn,
                      "SELECT BINLOG_GTID_POS(" + quote_literal(start.file) + ", " +
                          std::to_string(start.position) + ")",
                      "reading the GTID position of " + start.offset());
    if (!gtid) return fail(gtid.error());
    start.gtid = value_or_empty(*gtid, 0);
    if (start.gtid.empty()) {
      // A server that never wrote a GTID: the empty position starts at the first one.
      start.gtid.clear();
      auto state = query(conn, "SELECT @@gtid_binlog_pos", "reading gtid_binlog_pos");
      if (!state) return fail(state.error());
      start.gtid = value_or_empty(*state, 0);
    }
  }
  return start;
}

Result<StreamStart> parse_resume_offset(std::string_view offset, const ServerInfo& server) {
  StreamStart start;
  if (auto c = parse_binlog_coordinate(offset)) {
    const auto colon = offset.rfind(':');
    start.file = std::string(offset.substr(0, colon));
    start.position = c->position;
    return start;
  }
  if (server.mariadb && parse_maria_gtids(offset)) {
    start.gtid = std::string(offset);
    return start;
  }
  return fail(Error::checkpoint(ErrorKind::kTerminal,
                                "checkpoint offset '" + std::string(offset) +
                                    "' is neither a binlog coordinate " + "(file:position)" +
                                    (server.mariadb ? " nor a MariaDB GTID position" : "")));
}

Result<std::string> resume_problem(MYSQL* conn, const StreamStart& start,
                                   const ServerInfo& server) {
  auto logs = query(conn, "SHOW BINARY LOGS", "listing the binary logs");
  if (!logs) return fail(logs.error());
  if (logs->rows.empty()) return std::string("the server lists no binary logs");
  const std::string oldest = logs->rows.front()[0].value_or("");
  if (start.gtid.empty()) {
    for (const auto& row : logs->rows) {
      if (row.size() < 2 || row[0] != start.file) continue;
      const auto size = cppcdc::detail::parse_decimal(row[1].value_or(""));
      if (size && start.position > *size) {
        return "position " + std::to_string(start.position) + " lies beyond the end of " +
               start.file + " (" + std::to_string(*size) + " bytes)";
      }
      return std::string();
    }
    return "the binlog file " + start.file + " is no longer on the server (purged; the oldest " +
           "is " + oldest + ")";
  }
  if (!server.mariadb) return std::string();
  // The GTID position at the start of the oldest binlog (its GTID_LIST event): a domain of
  // ours older than that needs events that were purged.
  auto events = query(conn, "SHOW BINLOG EVENTS IN " + quote_literal(oldest) + " LIMIT 4",
                      "reading the GTID list of the oldest binlog");
  if (!events) return fail(events.error());
  std::string list;
  for (const auto& row : events->rows) {
    if (row.size() >= 6 && row[2] == std::optional<std::string>("Gtid_list") && row[5]) {
      list = *row[5];
      if (!list.empty() && list.front() == '[') list = list.substr(1, list.size() - 2);
    }
  }
  const auto ours = parse_maria_gtids(start.gtid);
  const auto theirs = parse_maria_gtids(list);
  if (!ours) return "'" + start.gtid + "' is not a GTID position";
  if (theirs) {
    for (const auto& [domain, sn] : *theirs) {
      const auto it = ours->find(domain);
      const std::uint64_t have = it == ours->end() ? 0 : it->second.second;
      if (have < sn.second) {
        return "the GTID position " + start.gtid + " is older than the oldest binlog " + oldest +
               " (which starts after " + std::to_string(domain) + "-" + std::to_string(sn.first) +
               "-" + std::to_string(sn.second) + "): the transactions in between were purged";
      }
    }
  }
  auto state = query(conn, "SELECT @@gtid_binlog_state", "reading gtid_binlog_state");
  if (!state) return fail(state.error());
  const auto now = parse_maria_gtids(value_or_empty(*state, 0));
  if (now) {
    for (const auto& [domain, sn] : *ours) {
      const auto it = now->find(domain);
      if (it == now->end() || it->second.second < sn.second) {
        return "the GTID position " + start.gtid + " is ahead of the server's binlog (" +
               value_or_empty(*state, 0) + "): the binlog was reset or this is another server";
      }
    }
  }
  return std::string();
}

// ---- BinlogStream ------------------------------------------------------------------------

Result<std::unique_ptr<BinlogStream>> BinlogStream::open(const MysqlSourceConfig& config,
                                                         const ServerInfo& server,
                                                         const StreamStart& start,
                                                         bool non_blocking) {
  auto conn = connect(config, config.receive_timeout_ms);
  if (!conn) return fail(conn.error());
  std::unique_ptr<BinlogStream> s(new BinlogStream());
  s->conn_ = std::move(*conn);
  s->where_ = start.gtid.empty() ? start.offset() : "GTID position " + start.gtid;
  MYSQL* m = s->conn_.get();
  // The replica declares which checksum it handles (else the server refuses to send
  // checksummed events), and on MariaDB that it understands GTID and annotate events.
  CPPCDC_TRY(exec(m,
                  "SET @master_binlog_checksum = @@global.binlog_checksum, "
                  "@source_binlog_checksum = @@global.binlog_checksum",
                  "declaring the binlog checksum"));
  const std::uint64_t period_ns = std::uint64_t{config.heartbeat_interval_ms} * 1'000'000;
  CPPCDC_TRY(exec(m, "SET @master_heartbeat_period = " + std::to_string(period_ns),
                  "setting the heartbeat period"));
  if (server.mariadb) {
    CPPCDC_TRY(exec(m, "SET @mariadb_slave_capability = 4", "declaring the replica capability"));
    if (!start.gtid.empty()) {
      CPPCDC_TRY(exec(m,
                      "SET @slave_connect_state = " + quote_literal(start.gtid) +
                          ", @slave_gtid_strict_mode = 0, @slave_gtid_ignore_duplicates = 0",
                      "declaring the GTID start position"));
    }
  }
  s->rpl_ = mariadb_rpl_init(m);
  if (!s->rpl_) return fail(Error::internal("mariadb_rpl_init failed"));
  // The va_arg types matter: unsigned int, size_t, unsigned long.
  mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_SERVER_ID,
                       static_cast<unsigned int>(effective_server_id(config)));
  const std::string& file = start.gtid.empty() ? start.file : std::string();
  mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_FILENAME, file.c_str(),
                       static_cast<size_t>(file.size()));
  mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_START,
                       static_cast<unsigned long>(start.gtid.empty() ? start.position : 4));
  mariadb_rpl_optionsv(
      s->rpl_, MARIADB_RPL_FLAGS,
      static_cast<unsigned int>(non_blocking ? MARIADB_RPL_BINLOG_DUMP_NON_BLOCK : 0));
  if (mariadb_rpl_open(s->rpl_) != 0) return fail(s->stream_error("starting the binlog dump"));
  spdlog::info("reading the binlog of {}:{} from {} as replica server id {}", config.host,
               config.port, s->where_, effective_server_id(config));
  return s;
}

BinlogStream::~BinlogStream() {
  if (event_) mariadb_free_rpl_event(event_);
  if (rpl_) {
    mariadb_rpl_close(rpl_);
  }
}

bool BinlogStream::readable_now() const noexcept {
  if (!conn_) return false;
  pollfd fd{static_cast<int>(mysql_get_socket(conn_.get())), POLLIN, 0};
  return fd.fd >= 0 && ::poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN) != 0;
}

void BinlogStream::interrupt() noexcept {
  interrupted_.store(true);
  if (conn_) {
    const auto fd = mysql_get_socket(conn_.get());
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
}

Error BinlogStream::stream_error(const std::string& what) const {
  // Connector/C keeps replication errors in two places: the rpl handle and the connection.
  unsigned int code = conn_ ? mysql_errno(conn_.get()) : 0;
  std::string text = conn_ ? mysql_error(conn_.get()) : "";
  if (rpl_ && mariadb_rpl_errno(rpl_) != 0) {
    const std::string rpl_text = mariadb_rpl_error(rpl_);
    if (code == 0) code = mariadb_rpl_errno(rpl_);
    if (!rpl_text.empty() && rpl_text != text) text += (text.empty() ? "" : "; ") + rpl_text;
  }
  if (text.empty()) text = "the connection ended";
  const std::string full = what + " at " + where_ + ": " + text +
                           (code ? " (error " + std::to_string(code) + ")" : std::string());
  if (interrupted_.load()) return Error::source(ErrorKind::kTransient, full + " (interrupted)");
  // Another binlog reader connected with this replica server id: the server ends the older
  // stream (MariaDB: error 4052; MySQL: 1236 with this text). Not a lost position, and not
  // transient: reconnecting would end the other reader's stream in turn.
  if (code == 4052 || text.find("same server_uuid/server_id") != std::string::npos ||
      text.find("same server_id") != std::string::npos) {
    return Error::source(ErrorKind::kTerminal,
                         full +
                             "; another replica or binlog reader connected to the server "
                             "with the same replica server id, and the server ended this "
                             "stream; give each reader its own id ([source] server_id here, "
                             "server_id on a MariaDB/MySQL replica)")
        .for_setting(SettingOwner::kSource, "server_id");
  }
  if (code == ER_MASTER_FATAL_ERROR_READING_BINLOG) {
    return Error::source(ErrorKind::kTerminal,
                         full +
                             "; the server no longer has the binlog this position needs "
                             "(purged, or reset): the changes in between are lost; take a "
                             "new snapshot (snapshot mode when_needed does so by itself)")
        .with_condition(ErrorCondition::kSourcePositionLost);
  }
  if (code == ER_SPECIFIC_ACCESS_DENIED_ERROR || code == ER_ACCESS_DENIED_ERROR) {
    return Error::source(ErrorKind::kTerminal,
                         full + "; GRANT REPLICATION SLAVE ON *.* TO the user");
  }
  if (code == 0) return Error::source(ErrorKind::kTransient, full);
  return Error::source(is_transient_errno(code) ? ErrorKind::kTransient : ErrorKind::kTerminal,
                       full);
}

Result<std::span<const std::uint8_t>> BinlogStream::next() {
  // A fresh event each time: whether a reused event survives a failed fetch is not documented.
  if (event_) {
    mariadb_free_rpl_event(event_);
    event_ = nullptr;
  }
  MARIADB_RPL_EVENT* ev = mariadb_rpl_fetch(rpl_, nullptr);
  if (!ev) {
    const bool failed = (conn_ && mysql_errno(conn_.get()) != 0) ||
                        (rpl_ && mariadb_rpl_errno(rpl_) != 0) || interrupted_.load();
    if (failed) return fail(stream_error("reading the binlog"));
    return std::span<const std::uint8_t>();
  }
  event_ = ev;
  if (ev->raw_data_size < 2) {
    return fail(
        Error::invalid_data("a binlog event of " + std::to_string(ev->raw_data_size) + " bytes"));
  }
  // raw_data starts with the packet's OK byte (0x00); the event follows, checksum included.
  return std::span<const std::uint8_t>(ev->raw_data + 1, ev->raw_data_size - 1);
}

}  // namespace cppcdc::mysql::detail
