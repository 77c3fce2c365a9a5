#include "source/postgres/server_checks.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/text_util.hpp"
#include "source/postgres/pg_conn.hpp"

namespace cppcdc::pg::detail {

TableName split_table(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return {"public", name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

Status check_server_version(int version, const PostgresSourceConfig& config) {
  const auto needs = [&](const std::string& feature, const std::string& why, int major,
                         const std::string& remedy) {
    return fail(Error::source(ErrorKind::kTerminal,
                              feature + " needs PostgreSQL " + std::to_string(major) +
                                  " or later (" + why + "); this server is PostgreSQL " +
                                  version_text(version) + ": upgrade it or " + remedy));
  };
  if (version < kMinServerVersion) {
    return fail(Error::source(ErrorKind::kTerminal,
                              "this server is PostgreSQL " + version_text(version) +
                                  "; cppcdc needs PostgreSQL 12 or later"));
  }
  if (config.stream_in_progress && version < 140000) {
    return needs("stream_in_progress", "pgoutput streams in-progress transactions from 14 on",
                 14, "set stream_in_progress = false");
  }
  if (config.capture_logical_messages && version < 140000) {
    return needs("capture_logical_messages", "pgoutput sends logical messages from 14 on", 14,
                 "set capture_logical_messages = false");
  }
  return ok();
}

std::string version_text(int version) {
  if (version >= 100000) {
    return std::to_string(version / 10000) + "." + std::to_string(version % 10000);
  }
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

const char* wal_status_column(PGconn* conn) {
  return PQserverVersion(conn) >= 130000 ? "wal_status" : "null::text";
}

Status check_server(PGconn* sql, const PostgresSourceConfig& config, std::string& database) {
  auto res = exec(sql, "select current_setting('wal_level'), current_database(), "
                              "current_setting('server_version_num')::int",
                  "checking the server settings");
  if (!res) return fail(res.error());
  const auto level = get(res->get(), 0, 0).value_or("");
  database = get(res->get(), 0, 1).value_or("");
  if (level != "logical") {
    return fail(Error::source(
        ErrorKind::kTerminal,
        "wal_level is '" + level + "' on the server of database " + database +
            "; logical replication needs wal_level = logical: set it in postgresql.conf (or "
            "ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL"));
  }
  return check_server_version(std::stoi(get(res->get(), 0, 2).value_or("0")), config);
}

Status check_tables(PGconn* sql, const std::set<TableName>& tables, const std::string& database) {
  for (const auto& t : tables) {
    auto res = exec(sql,
                    "select c.relkind from pg_class c join pg_namespace n on n.oid = "
                    "c.relnamespace where n.nspname = $1 and c.relname = $2",
                    "looking up table " + t.text(), {t.schema, t.table});
    if (!res) return fail(res.error());
    if (PQntuples(res->get()) == 0) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "table " + t.text() + " does not exist in database " +
                                    database +
                                    "; create it, or remove it from the captured tables")
                                    .for_setting(SettingOwner::kSource, "tables"));
    }
    const auto kind = get(res->get(), 0, 0).value_or("");
    if (kind != "r" && kind != "p") {
      return fail(Error::source(ErrorKind::kTerminal,
                                t.text() + " is not a table (relkind '" + kind +
                                    "'); only tables can be captured"));
    }
    if (kind == "p" && PQserverVersion(sql) < 130000) {
      return fail(Error::source(ErrorKind::kTerminal,
                                t.text() + " is a partitioned table: capturing one needs "
                                           "PostgreSQL 13 or later (12 cannot publish it); "
                                           "this server is PostgreSQL " +
                                    version_text(PQserverVersion(sql)) +
                                    ": upgrade it, or capture its partitions instead")
                      .for_setting(SettingOwner::kSource, "tables"));
    }
  }
  return ok();
}

Status ensure_publication(PGconn* sql, const PostgresSourceConfig& config,
                          const std::set<TableName>& tables) {
  auto res = exec(sql, "select puballtables from pg_publication where pubname = $1",
                  "looking up publication " + config.publication_name,
                  {config.publication_name});
  if (!res) return fail(res.error());
  if (PQntuples(res->get()) == 0) {
    if (!config.create_publication) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "publication " + config.publication_name +
                                    " does not exist; create it (CREATE PUBLICATION ... FOR "
                                    "TABLE ...) or set create_publication = true"));
    }
    CPPCDC_TRY(check_replica_identities(sql, config, tables));
    std::string create = "CREATE PUBLICATION " + quote_ident(config.publication_name) +
                      " FOR TABLE ";
    bool first = true;
    for (const auto& t : tables) {
      if (!first) create += ", ";
      first = false;
      create += quote_ident(t.schema) + "." + quote_ident(t.table);
    }
    // Changes to a partitioned table's partitions are published as the table itself, so
    // events carry the name that was configured. PostgreSQL 12 has no such option (nor
    // partitioned tables in publications: check_tables refuses them there).
    if (PQserverVersion(sql) >= 130000) create += " WITH (publish_via_partition_root = true)";
    auto created = exec(sql, create, "creating publication " + config.publication_name);
    if (!created) {
      const auto& m = created.error().message();
      if (m.find("42501") != std::string::npos || m.find("must be owner") != std::string::npos) {
        return fail(created.error().context(
            "only the owner of every table may create a publication for them: run cppcdc as "
            "the owner, or create the publication yourself (CREATE PUBLICATION " +
            config.publication_name + " FOR TABLE ...) and set create_publication = false"));
      }
      return fail(created.error());
    }
    spdlog::info("created publication {} for {}", config.publication_name,
                 cppcdc::detail::counted(tables.size(), "table"));
    mark_created(sql, config, false);
    return ok();
  }
  if (get(res->get(), 0, 0).value_or("f") == "t") return ok();
  auto members = exec(sql,
                      "select schemaname, tablename from pg_publication_tables where "
                      "pubname = $1",
                      "listing the tables of publication " + config.publication_name,
                      {config.publication_name});
  if (!members) return fail(members.error());
  std::set<TableName> published;
  for (int r = 0; r < PQntuples(members->get()); ++r) {
    published.insert({get(members->get(), r, 0).value_or(""),
                      get(members->get(), r, 1).value_or("")});
  }
  for (const auto& t : tables) {
    if (!published.count(t)) {
      // pg_publication_tables lists a partitioned table's partitions instead of the table
      // when the publication does not publish via the root: ask for the table itself.
      auto direct = exec(sql,
                         "select 1 from pg_publication_rel pr join pg_publication p on p.oid = "
                         "pr.prpubid where p.pubname = $1 and pr.prrelid = format('%I.%I', "
                         "$2::text, $3::text)::regclass",
                         "checking whether publication " + config.publication_name +
                             " includes " + t.text(),
                         {config.publication_name, t.schema, t.table});
      if (!direct) return fail(direct.error());
      if (PQntuples(direct->get()) > 0) continue;
      return fail(Error::source(
          ErrorKind::kTerminal,
          "publication " + config.publication_name + " does not include table " + t.text() +
              "; run ALTER PUBLICATION " + config.publication_name + " ADD TABLE " +
              t.text() + ", or remove the table from the captured tables. A table added to "
              "a running pipeline streams its changes from then on; its existing rows come "
              "with an incremental snapshot: `cppcdc snapshot request " + t.text() +
              " --config <file>` once cppcdc runs")
              .for_setting(SettingOwner::kSource, "tables"));
    }
  }
  return ok();
}

Status check_replica_identities(PGconn* sql, const PostgresSourceConfig& config,
                                const std::set<TableName>& tables) {
  for (const auto& t : tables) {
    auto res = exec(sql,
                    "select c.relkind, c.relreplident, "
                    "exists (select 1 from pg_index i where i.indrelid = c.oid and "
                    "i.indisprimary), "
                    "exists (select 1 from pg_index i where i.indrelid = c.oid and "
                    "i.indisreplident) "
                    "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
                    "where n.nspname = $1 and c.relname = $2",
                    "checking the replica identity of " + t.text(), {t.schema, t.table});
    if (!res) return fail(res.error());
    if (PQntuples(res->get()) == 0) continue;
    if (get(res->get(), 0, 0).value_or("") != "r") continue;
    const char ident = get(res->get(), 0, 1).value_or("d")[0];
    const bool pk = get(res->get(), 0, 2).value_or("f") == "t";
    const bool index = get(res->get(), 0, 3).value_or("f") == "t";
    const bool usable = ident == 'f' || (ident == 'd' && pk) || (ident == 'i' && index);
    if (usable) continue;
    return fail(Error::source(
        ErrorKind::kTerminal,
        "table " + t.text() + " has no replica identity (" +
            (ident == 'n' ? std::string("REPLICA IDENTITY NOTHING")
                          : std::string("no primary key")) +
            "): in a publication that publishes updates and deletes, PostgreSQL would refuse "
            "the application's UPDATE and DELETE on it. Add a primary key, or run ALTER TABLE " +
            t.text() + " REPLICA IDENTITY FULL, or create publication " +
            config.publication_name +
            " yourself (for example WITH (publish = 'insert, truncate')): a publication "
            "that exists is used as it is"));
  }
  return ok();
}

namespace {

constexpr std::string_view kMarkPublication = "created by cppcdc";
constexpr std::string_view kMarkSlot = "; replication slot created by cppcdc: ";

// The slots a publication's comment records as created by cppcdc (several pipelines may share
// one publication; their slot names are joined by ", ").
std::vector<std::string> marked_slots(const std::string& comment) {
  std::vector<std::string> out;
  const std::string prefix = std::string(kMarkPublication) + std::string(kMarkSlot);
  if (comment.rfind(prefix, 0) != 0) return out;
  std::string_view rest(comment);
  rest.remove_prefix(prefix.size());
  while (!rest.empty()) {
    const auto comma = rest.find(", ");
    out.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 2);
  }
  return out;
}

}  // namespace

std::filesystem::path slot_mark_file(const PostgresSourceConfig& config) {
  if (config.state_dir.empty()) return {};
  return config.state_dir / ("created-slot-" + config.slot_name);
}

namespace {

// What the slot mark file holds: the database the slot was made in (slots belong to one).
Result<std::string> slot_mark_text(PGconn* sql, const PostgresSourceConfig& config) {
  auto db = exec(sql, "select current_database()", "reading the database name");
  if (!db) return fail(db.error());
  return "replication slot " + config.slot_name + " in database " +
         get(db->get(), 0, 0).value_or("") + " created by cppcdc\n";
}

// Writes the slot's mark file (0600, atomically). Logged, never an error.
void write_slot_mark(PGconn* sql, const PostgresSourceConfig& config) {
  const auto file = slot_mark_file(config);
  if (file.empty()) return;
  auto text = slot_mark_text(sql, config);
  std::error_code ec;
  if (text) std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp";
  int fd = -1;
  if (text && !ec) fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool written = fd >= 0 && ::write(fd, text->data(), text->size()) ==
                                static_cast<ssize_t>(text->size()) &&
                 ::fsync(fd) == 0;
  if (fd >= 0) written = ::close(fd) == 0 && written;
  if (written) written = std::rename(tmp.c_str(), file.c_str()) == 0;
  if (!written) {
    ::unlink(tmp.c_str());
    spdlog::warn("cannot record in {} that cppcdc created replication slot {}{}; `cppcdc "
                 "teardown` will ask before dropping it",
                 file.string(), config.slot_name,
                 text ? std::string() : " (" + text.error().report() + ")");
  }
}

}  // namespace

void mark_created(PGconn* sql, const PostgresSourceConfig& config, bool slot) {
  std::string comment(kMarkPublication);
  if (slot) {
    // The file beside the checkpoint always: the publication's comment may belong to another
    // pipeline's role (COMMENT needs ownership) and is shared by every slot that uses it.
    write_slot_mark(sql, config);
    auto marks = read_created_marks(sql, config);
    if (!marks || !marks->publication) return;  // not cppcdc's publication: not commented on
    std::vector<std::string> slots = marks->marked_slots;
    if (std::find(slots.begin(), slots.end(), config.slot_name) == slots.end()) {
      slots.push_back(config.slot_name);
    }
    comment += kMarkSlot;
    for (std::size_t i = 0; i < slots.size(); ++i) comment += (i ? ", " : "") + slots[i];
  }
  auto done = exec(sql,
                   "COMMENT ON PUBLICATION " + quote_ident(config.publication_name) + " IS " +
                       quote_literal(comment),
                   "recording on publication " + config.publication_name +
                       " what cppcdc created");
  if (!done) {
    spdlog::warn("{}; `cppcdc teardown` will ask before dropping it", done.error().report());
  }
}

bool has_slot_mark_file(PGconn* sql, const PostgresSourceConfig& config) {
  const auto file = slot_mark_file(config);
  if (file.empty()) return false;
  std::ifstream in(file);
  if (!in) return false;
  std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto expected = slot_mark_text(sql, config);
  return expected && saved == *expected;  // a slot of that name in another database is not it
}

Result<CreatedMarks> read_created_marks(PGconn* sql, const PostgresSourceConfig& config) {
  auto res = exec(sql,
                  "select coalesce(obj_description(oid, 'pg_publication'), '') from "
                  "pg_publication where pubname = $1",
                  "reading the comment of publication " + config.publication_name,
                  {config.publication_name});
  if (!res) return fail(res.error());
  CreatedMarks marks;
  if (PQntuples(res->get()) == 0) {
    marks.slot = has_slot_mark_file(sql, config);
    return marks;
  }
  const std::string comment = get(res->get(), 0, 0).value_or("");
  marks.publication = comment.rfind(kMarkPublication, 0) == 0;
  marks.marked_slots = marked_slots(comment);
  marks.slot = std::find(marks.marked_slots.begin(), marks.marked_slots.end(),
                         config.slot_name) != marks.marked_slots.end();
  if (!marks.slot) marks.slot = has_slot_mark_file(sql, config);
  return marks;
}

}  // namespace cppcdc::pg::detail
