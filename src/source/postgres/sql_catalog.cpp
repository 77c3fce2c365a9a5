#include "source/postgres/sql_catalog.hpp"

#include <algorithm>

#include "source/postgres/pg_conn.hpp"

namespace cppcdc::pg {

using detail::exec;
using detail::get;

Result<std::optional<bool>> publishes_via_root(PGconn* conn, const std::string& publication) {
  // PostgreSQL 12 has no pubviaroot (nor the option): a partition's changes carry its name.
  const char* column = PQserverVersion(conn) >= 130000 ? "pubviaroot" : "false";
  auto res = exec(conn, std::string("select ") + column + " from pg_publication where pubname = $1",
                  "looking up publication " + publication, {publication});
  if (!res) return fail(res.error());
  if (PQntuples(res->get()) == 0) return std::optional<bool>();
  return std::optional<bool>(get(res->get(), 0, 0).value_or("f") == "t");
}

std::string partition_capture_note(const std::string& partition, const std::string& ancestor,
                                   const std::string& publication, std::optional<bool> via_root) {
  if (!via_root) {
    return "capturing partition " + partition + " of " + ancestor +
           " (could not tell whether publication " + publication +
           " publishes via the partition root, so under which name its changes arrive)";
  }
  if (*via_root) {
    return "partition " + partition + " of " + ancestor +
           ": its changes arrive under the name of its partition root, not its own "
           "(publication " + publication + " publishes via the partition root)";
  }
  return "capturing partition " + partition + " of " + ancestor +
         " under its own name (publication " + publication +
         " does not publish via the partition root)";
}

Result<RelationDetails> SqlCatalog::describe(const RelationMsg& rel) {
  RelationDetails d;
  // Type names from the message's own oids and modifiers, so they describe the tuple that
  // was decoded even if the table changed since.
  std::string oids = "{", mods = "{";
  for (std::size_t i = 0; i < rel.columns.size(); ++i) {
    if (i) {
      oids += ',';
      mods += ',';
    }
    oids += std::to_string(rel.columns[i].type_oid);
    mods += std::to_string(rel.columns[i].type_modifier);
  }
  oids += '}';
  mods += '}';
  // The second column follows a domain (possibly over another domain) down to its base
  // type, which decides how the value prints (a domain over jsonb is JSON).
  auto types = exec(conn_,
                    "select format_type(t.oid, t.mod), "
                    "(with recursive b(oid, base) as ("
                    "   select y.oid, y.typbasetype from pg_type y where y.oid = t.oid"
                    "   union all"
                    "   select y.oid, y.typbasetype from b join pg_type y on y.oid = b.base"
                    "   where b.base <> 0)"
                    " select b.oid from b where b.base = 0) "
                    "from unnest($1::oid[], $2::int4[]) with ordinality as t(oid, mod, n) "
                    "order by t.n",
                    "looking up column types", {oids, mods});
  if (!types) return fail(types.error());
  for (int i = 0; i < PQntuples(types->get()); ++i) {
    d.type_names.push_back(get(types->get(), i, 0).value_or(""));
    const auto base = get(types->get(), i, 1);
    d.base_type_oids.push_back(base ? static_cast<std::uint32_t>(std::stoul(*base)) : 0);
  }
  auto cols = exec(conn_,
                   "select a.attname, a.attnotnull, "
                   "array_position(i.indkey::int2[], a.attnum) "
                   "from pg_attribute a left join pg_index i "
                   "on i.indrelid = a.attrelid and i.indisprimary "
                   "where a.attrelid = $1::oid and a.attnum > 0 and not a.attisdropped",
                   "looking up columns and primary key",
                   {std::to_string(rel.relation_id)});
  if (!cols) return fail(cols.error());
  std::vector<std::pair<int, std::string>> key;
  d.not_null.assign(rel.columns.size(), false);
  for (int r = 0; r < PQntuples(cols->get()); ++r) {
    const std::string name = get(cols->get(), r, 0).value_or("");
    const bool not_null = get(cols->get(), r, 1).value_or("f") == "t";
    for (std::size_t i = 0; i < rel.columns.size(); ++i) {
      if (rel.columns[i].name == name) d.not_null[i] = not_null;
    }
    if (auto pos = get(cols->get(), r, 2)) key.emplace_back(std::stoi(*pos), name);
  }
  std::sort(key.begin(), key.end());
  for (auto& [pos, name] : key) d.primary_key.push_back(std::move(name));
  return d;
}

}  // namespace cppcdc::pg
