#include "source/postgres/assembler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <unordered_set>

#include "core/json_write.hpp"
#include "core/said_once.hpp"
#include "core/text_util.hpp"

namespace cppcdc::pg {
namespace {

constexpr std::uint32_t kJsonOid = 114;
constexpr std::uint32_t kJsonbOid = 3802;

bool same_relation(const RelationMsg& a, const RelationMsg& b) {
  if (a.relation_id != b.relation_id || a.namespace_name != b.namespace_name ||
      a.relation_name != b.relation_name || a.replica_identity != b.replica_identity ||
      a.columns.size() != b.columns.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.columns.size(); ++i) {
    const auto& x = a.columns[i];
    const auto& y = b.columns[i];
    if (x.name != y.name || x.type_oid != y.type_oid || x.type_modifier != y.type_modifier ||
        x.part_of_key != y.part_of_key) {
      return false;
    }
  }
  return true;
}

// json keeps its input text, line breaks between tokens included, and the envelope embeds
// JSON values verbatim: a line break would split a JSON-lines record. A raw CR or LF can only
// be insignificant whitespace there (json_in rejects unescaped control characters inside
// strings, and jsonb never prints them), so turning each into a space keeps the value's
// structure and every number's text.
void one_line_json(std::string& text) {
  if (text.find_first_of("\r\n") == std::string::npos) return;
  for (char& ch : text) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
}

std::string qualified(const RelationMsg& m) {
  return (m.namespace_name.empty() ? std::string("pg_catalog") : m.namespace_name) + "." +
         m.relation_name;
}

}  // namespace

TransactionAssembler::TransactionAssembler(
    std::string source_name, std::function<bool(const std::string&, const std::string&)> captured,
    CatalogLookup& catalog)
    : clock([] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      }),
      source_name_(std::move(source_name)),
      captured_(std::move(captured)),
      catalog_(catalog) {}

void TransactionAssembler::reset_transaction() {
  in_tx_ = false;
  in_stream_ = false;
  pending_.clear();
  pending_sizes_.clear();
  pending_bytes_ = 0;
  spill_.reset();
  subxacts_.clear();
  streamed_.clear();
  ready_spill_ = ReadySpill{};
}

void TransactionAssembler::swap_open(OpenTx& t) noexcept {
  std::swap(begin_, t.begin);
  std::swap(begin_position_, t.begin_position);
  pending_.swap(t.pending);
  pending_sizes_.swap(t.pending_sizes);
  std::swap(pending_bytes_, t.pending_bytes);
  spill_.swap(t.spill);
  subxacts_.swap(t.subxacts);
}

Event& TransactionAssembler::begin_pending() {
  if (spill_) {
    spill_scratch_ = Event();
    return spill_scratch_;
  }
  return pending_.emplace_back();
}

void TransactionAssembler::drop_pending() {
  if (!spill_) pending_.pop_back();
}

Status TransactionAssembler::add_pending(Event e) {
  begin_pending() = std::move(e);
  return commit_pending();
}

Status TransactionAssembler::commit_pending() {
  if (spill_) return spill_->append(spill_scratch_);
  const std::size_t bytes = detail::approx_event_bytes(pending_.back());
  pending_bytes_ += bytes;
  pending_sizes_.push_back(bytes);
  if (pending_bytes_ <= spill_threshold_bytes) return ok();
  return spill_open();
}

Status TransactionAssembler::spill_open() {
  if (spill_) return ok();
  auto spill = detail::EventSpill::create(spill_dir);
  if (!spill) {
    return fail(spill.error().context("transaction " + std::to_string(begin_.xid) +
                                      " outgrew spill_threshold_bytes (" +
                                      std::to_string(spill_threshold_bytes) + ")"));
  }
  spill_ = std::move(*spill);
  spdlog::info("transaction {} holds more than {} bytes of events ({} events so far): spilling "
               "it to a temporary file in {} until its commit",
               begin_.xid, spill_threshold_bytes, pending_.size(), spill_dir.string());
  std::size_t mark = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    for (; mark < subxacts_.size() && subxacts_[mark].index == i; ++mark) {
      subxacts_[mark].offset = spill_->end_offset();
    }
    CPPCDC_TRY(spill_->append(pending_[i]));
  }
  for (; mark < subxacts_.size(); ++mark) subxacts_[mark].offset = spill_->end_offset();
  // The rest of the transaction goes to the file: release the buffer it outgrew.
  std::vector<Event>().swap(pending_);
  std::vector<std::size_t>().swap(pending_sizes_);
  pending_bytes_ = 0;
  return ok();
}

void TransactionAssembler::mark_subxact(std::uint32_t xid) {
  if (xid == 0 || xid == begin_.xid) return;
  if (!subxacts_.empty() && subxacts_.back().xid == xid) return;  // the usual case
  for (const auto& m : subxacts_) {
    if (m.xid == xid) return;
  }
  SubxactMark m;
  m.xid = xid;
  m.index = spill_ ? spill_->events_written() : pending_.size();
  m.offset = spill_ ? spill_->end_offset() : 0;
  subxacts_.push_back(m);
}

Status TransactionAssembler::on_stream_start(const StreamStartMsg& m, Lsn position) {
  if (in_tx_) {
    return fail(Error::invalid_data("pgoutput Stream Start of xid " + std::to_string(m.xid) +
                                    " arrived inside transaction " +
                                    std::to_string(begin_.xid)));
  }
  auto it = streamed_.find(m.xid);
  if (it == streamed_.end() && !m.first_segment) {
    return fail(Error::invalid_data(
        "pgoutput Stream Start of xid " + std::to_string(m.xid) +
        " continues a streamed transaction whose first block never arrived"));
  }
  OpenTx t;
  if (it != streamed_.end()) {
    t = std::move(it->second);
    streamed_.erase(it);
    if (m.first_segment) t = OpenTx{};  // sent again from its start: forget the old copy
  }
  const bool fresh = t.begin.xid == 0;
  if (fresh) {
    t.begin.xid = m.xid;
    t.begin_position = position;
  }
  swap_open(t);
  in_tx_ = true;
  in_stream_ = true;
  return ok();
}

Status TransactionAssembler::on_stream_stop() {
  if (!in_stream_) {
    return fail(Error::invalid_data("pgoutput Stream Stop arrived outside a stream block"));
  }
  // Parked transactions wait in memory up to spill_threshold_bytes in all; past it, the one
  // whose block ends now goes to disk.
  std::size_t parked = pending_bytes_;
  for (const auto& [xid, t] : streamed_) parked += t.pending_bytes;
  if (parked > spill_threshold_bytes && !pending_.empty()) CPPCDC_TRY(spill_open());
  OpenTx t;
  swap_open(t);
  const std::uint32_t xid = t.begin.xid;
  streamed_.emplace(xid, std::move(t));
  in_tx_ = false;
  in_stream_ = false;
  return ok();
}

Status TransactionAssembler::on_stream_abort(const StreamAbortMsg& m) {
  if (in_tx_) {
    return fail(Error::invalid_data("pgoutput Stream Abort of xid " + std::to_string(m.xid) +
                                    " arrived inside transaction " +
                                    std::to_string(begin_.xid)));
  }
  auto it = streamed_.find(m.xid);
  if (it == streamed_.end()) return ok();  // nothing of it was kept
  if (m.subxid == m.xid) {
    streamed_.erase(it);
    return ok();
  }
  OpenTx& t = it->second;
  auto mark = std::find_if(t.subxacts.begin(), t.subxacts.end(),
                           [&](const SubxactMark& s) { return s.xid == m.subxid; });
  if (mark == t.subxacts.end()) return ok();  // no change of it was streamed
  if (t.spill) {
    CPPCDC_TRY(t.spill->truncate(mark->index, mark->offset));
  } else {
    const auto keep = static_cast<std::size_t>(mark->index);
    t.pending.resize(keep);
    t.pending_sizes.resize(keep);
    t.pending_bytes = 0;
    for (std::size_t b : t.pending_sizes) t.pending_bytes += b;
  }
  t.subxacts.erase(mark, t.subxacts.end());
  return ok();
}

Status TransactionAssembler::finish_transaction(Lsn end_lsn, std::vector<Event>& out,
                                                std::vector<std::size_t>* out_bytes,
                                                std::optional<std::int64_t> commit_ms) {
  in_tx_ = false;
  last_end_lsn_ = end_lsn;
  subxacts_.clear();
  // Reads whose snapshot could see this transaction's commit are over once it is released;
  // the others ride on it so that a restart from its end still filters.
  std::string state;
  if (!visibility.empty()) {
    visibility.passed(begin_.final_lsn);
    state = visibility_state();
  }
  if (spill_) {
    ready_spill_.resume_state = std::move(state);
    // Read back in pieces by drain_spilled(), which sets the metadata.
    CPPCDC_TRY(spill_->start_reading());
    ready_spill_.xid = begin_.xid;
    ready_spill_.total = ready_spill_.prefix.size() + spill_->events_written();
    ready_spill_.next_index = 0;
    ready_spill_.end_lsn = end_lsn;
    ready_spill_.commit_lsn = begin_.final_lsn;
    ready_spill_.commit_ms = commit_ms;
    ready_spill_.file = std::move(spill_);
    return ok();
  }
  const std::uint64_t total = pending_.size();
  for (std::uint64_t i = 0; i < total; ++i) {
    pending_[i].transaction = TransactionMetadata{begin_.xid, total, i};
    pending_[i].log_position = to_log_position(begin_.final_lsn);
    if (commit_ms) pending_[i].source.timestamp = *commit_ms;
  }
  if (total > 0) {
    // Measured without a resume_offset when it was added: adjust the measure.
    std::string& resume = pending_.back().resume_offset;
    pending_sizes_.back() -= detail::approx_string_bytes(resume);
    resume = end_lsn.to_string();
    pending_sizes_.back() += detail::approx_string_bytes(resume);
    if (!state.empty()) {
      pending_sizes_.back() += detail::approx_string_bytes(state);
      pending_.back().resume_state = std::move(state);
    }
  }
  if (out.empty()) {
    out.swap(pending_);  // the usual case: the transaction changes hands in one piece
  } else {
    out.reserve(out.size() + pending_.size());
    for (auto& e : pending_) out.push_back(std::move(e));
  }
  if (out_bytes) {
    if (out_bytes->empty()) {
      out_bytes->swap(pending_sizes_);
    } else {
      out_bytes->insert(out_bytes->end(), pending_sizes_.begin(), pending_sizes_.end());
    }
  }
  pending_.clear();
  pending_sizes_.clear();
  pending_bytes_ = 0;
  return ok();
}

Status TransactionAssembler::drain_spilled(std::vector<Event>& out, std::size_t max_events) {
  auto& r = ready_spill_;
  if (!r.file) return ok();
  for (std::size_t n = 0; n < max_events && r.next_index < r.total; ++n) {
    Event e;
    if (r.next_index < r.prefix.size()) {
      e = std::move(r.prefix[r.next_index]);
      e.transaction = TransactionMetadata{r.xid, r.total, r.next_index};
      e.log_position = to_log_position(r.commit_lsn);
      if (r.commit_ms) e.source.timestamp = *r.commit_ms;
      if (++r.next_index == r.total) {
        e.resume_offset = r.end_lsn.to_string();
        e.resume_state = r.resume_state;
      }
      out.push_back(std::move(e));
      continue;
    }
    auto got = r.file->next(e);
    if (!got) return fail(got.error().context("reading back transaction " + std::to_string(r.xid)));
    if (!*got) {
      return fail(Error::internal("spill file of transaction " + std::to_string(r.xid) +
                                  " ended after " + std::to_string(r.next_index) + " of " +
                                  std::to_string(r.total) + " events"));
    }
    e.transaction = TransactionMetadata{r.xid, r.total, r.next_index};
    e.log_position = to_log_position(r.commit_lsn);
    if (r.commit_ms) e.source.timestamp = *r.commit_ms;
    if (++r.next_index == r.total) {
      e.resume_offset = r.end_lsn.to_string();
      e.resume_state = r.resume_state;
    }
    out.push_back(std::move(e));
  }
  if (r.next_index == r.total) {
    spdlog::info("transaction {}: all {} spilled events read back ({} bytes on disk, released)",
                 r.xid, r.total, r.file->bytes_written());
    r = ReadySpill{};
  }
  return ok();
}

Result<const TransactionAssembler::Relation*> TransactionAssembler::relation(
    std::uint32_t id, const char* what) const {
  auto it = relations_.find(id);
  if (it == relations_.end()) {
    return fail(Error::invalid_data(std::string("pgoutput ") + what + " for relation id " +
                                    std::to_string(id) +
                                    " arrived before any Relation message describing it"));
  }
  return &it->second;
}

Status TransactionAssembler::on_relation(const RelationMsg& msg, bool announce) {
  auto it = relations_.find(msg.relation_id);
  if (it != relations_.end() && same_relation(it->second.msg, msg)) return ok();  // a repeat

  Relation rel;
  rel.msg = msg;
  const std::string schema = msg.namespace_name.empty() ? "pg_catalog" : msg.namespace_name;
  rel.captured = captured_(schema, msg.relation_name);

  RelationDetails details;
  if (rel.captured) {
    auto described = catalog_.describe(msg);
    if (!described) {
      return fail(described.error().context("describing relation " + qualified(msg)));
    }
    details = std::move(*described);
  }

  // The key: the catalog's primary key under FULL (every column carries the key flag there);
  // the replica identity flags under DEFAULT and USING INDEX, in the catalog's key order when
  // they name the primary key; nothing under NOTHING.
  std::vector<std::string> flagged;
  for (const auto& c : msg.columns) {
    if (c.part_of_key) flagged.push_back(c.name);
  }
  std::vector<std::string> key;
  switch (msg.replica_identity) {
    case 'f':
      key = details.primary_key;
      break;
    case 'd':
    case 'i': {
      const std::unordered_set<std::string> a(flagged.begin(), flagged.end());
      const std::unordered_set<std::string> b(details.primary_key.begin(),
                                              details.primary_key.end());
      key = (!details.primary_key.empty() && a == b) ? details.primary_key : flagged;
      break;
    }
    default:
      break;
  }
  for (const auto& k : key) {
    for (std::size_t i = 0; i < msg.columns.size(); ++i) {
      if (msg.columns[i].name == k) rel.key_columns.push_back(i);
    }
  }
  if (rel.key_columns.size() != key.size()) {
    // A key column not among the published columns cannot address a row.
    key.clear();
    rel.key_columns.clear();
  }
  if (!key.empty()) {
    rel.primary_key = key;
  } else if (rel.captured) {
    // Once per table and process: the server sends a table's relation message again after
    // every reconnect, and the fact does not change in between; a snapshot of the table (or,
    // under effectively_once, the program) may have said it already.
    const bool first =
        ::cppcdc::detail::first_to_say(::cppcdc::detail::keyless_table_fact(qualified(msg)));
    spdlog::log(first ? spdlog::level::warn : spdlog::level::debug,
                "table {} has no primary key to report (replica identity '{}'): its events "
                "carry primary_key null and cannot be addressed by key",
                qualified(msg), msg.replica_identity);
  }

  std::vector<ColumnShape> cols;
  cols.reserve(msg.columns.size());
  rel.is_json.reserve(msg.columns.size());
  for (std::size_t i = 0; i < msg.columns.size(); ++i) {
    const auto& c = msg.columns[i];
    ColumnShape s;
    s.name = c.name;
    if (i < details.type_names.size() && !details.type_names[i].empty()) {
      s.data_type = details.type_names[i];
    }
    s.nullable = !(i < details.not_null.size() && details.not_null[i]);
    for (const auto& k : key) {
      if (k == c.name) s.primary_key = true;
    }
    s.type_oid = c.type_oid;
    s.type_modifier = c.type_modifier;
    // A domain over json/jsonb prints as its base type does, so it is JSON too.
    const std::uint32_t base = i < details.base_type_oids.size() && details.base_type_oids[i] != 0
                                   ? details.base_type_oids[i]
                                   : c.type_oid;
    s.is_json = base == kJsonOid || base == kJsonbOid;
    rel.is_json.push_back(s.is_json);
    cols.push_back(std::move(s));
  }
  rel.shape = std::make_shared<const RowShape>(schema, msg.relation_name, std::move(cols), key);
  if (announce && it != relations_.end() && it->second.captured && rel.captured &&
      it->second.shape->content_id() != rel.shape->content_id()) {
    // The table changed shape (a column added, dropped, retyped, or a new key) since its last
    // row: announce the new shape before the first row that has it.
    Event e = make_event(rel, Operation::kSchemaChange, begin_position_);
    e.before = BeforeFull{describe_shape(*it->second.shape), {}};
    e.after = describe_shape(*rel.shape);
    if (in_tx_ && !in_stream_) {
      CPPCDC_TRY(add_pending(std::move(e)));
    } else {
      // Outside a transaction, or in a streamed one, which may abort or commit after other
      // transactions with rows of the new shape: the change goes with the next transaction
      // released, whichever it is.
      waiting_schema_changes_.push_back(std::move(e));
    }
  }
  relations_[msg.relation_id] = std::move(rel);
  return ok();
}

Row TransactionAssembler::describe_shape(const RowShape& shape) {
  // {"content_id": "...", "columns": [{"name", "data_type", "nullable", "primary_key"}...]}
  std::string columns = "[";
  for (std::size_t i = 0; i < shape.columns().size(); ++i) {
    const auto& c = shape.columns()[i];
    if (i) columns += ',';
    columns += "{\"name\":";
    detail::append_json_string(columns, c.name);
    columns += ",\"data_type\":";
    if (c.data_type) {
      detail::append_json_string(columns, *c.data_type);
    } else {
      columns += "null";
    }
    columns += c.nullable ? ",\"nullable\":true" : ",\"nullable\":false";
    columns += c.primary_key ? ",\"primary_key\":true}" : ",\"primary_key\":false}";
  }
  columns += ']';
  return Row{ColumnValue{"content_id", shape.content_id(), false},
             ColumnValue{"columns", std::move(columns), true}};
}

Result<Row> TransactionAssembler::make_row(const Relation& rel, TupleData& tuple,
                                           bool key_only, std::vector<std::string>* unchanged,
                                           const char* what) const {
  const auto& columns = rel.msg.columns;
  if (tuple.size() != columns.size()) {
    return fail(Error::invalid_data(
        std::string("pgoutput ") + what + " for " + qualified(rel.msg) + " carries " +
        std::to_string(tuple.size()) + " columns but its Relation message describes " +
        std::to_string(columns.size())));
  }
  Row row;
  row.reserve(columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (key_only && !columns[i].part_of_key) continue;
    auto& t = tuple[i];
    switch (t.kind) {
      case TupleColumn::Kind::kNull:
        row.emplace_back().name = columns[i].name;
        break;
      case TupleColumn::Kind::kText: {
        // Filled in place (no temporary ColumnValue to move and destroy).
        auto& v = row.emplace_back();
        v.name = columns[i].name;
        v.text.emplace(std::move(t.value));
        v.is_json = rel.is_json[i];
        if (v.is_json) one_line_json(*v.text);
        break;
      }
      case TupleColumn::Kind::kUnchanged:
        if (unchanged) unchanged->push_back(columns[i].name);
        break;
      case TupleColumn::Kind::kBinary:
        return fail(Error::invalid_data(std::string("pgoutput ") + what + " for " +
                                        qualified(rel.msg) + " column '" + columns[i].name +
                                        "' arrived in binary format, which was not requested"));
    }
  }
  return row;
}

Event TransactionAssembler::make_event(const Relation& rel, Operation op, Lsn position) const {
  Event e;
  fill_event(e, rel, op, position);
  return e;
}

void TransactionAssembler::fill_event(Event& e, const Relation& rel, Operation op,
                                      Lsn position) const {
  e.op = op;
  e.source.source_name = source_name_;
  e.source.offset = position.to_string();
  e.source.timestamp = pg_timestamp_to_unix_ms(begin_.commit_time);
  e.ts = clock();
  e.schema = rel.shape->schema();
  e.table = rel.msg.relation_name;
  e.primary_key = rel.primary_key;
  e.shape = rel.shape;
}

Result<Event> TransactionAssembler::make_read(std::uint32_t relation_id, TupleData tuple,
                                              Lsn position, std::int64_t timestamp_ms) {
  auto rel = relation(relation_id, "snapshot row");
  if (!rel) return fail(rel.error());
  Event e = make_event(**rel, Operation::kRead, position);
  e.source.timestamp = timestamp_ms;
  auto row = make_row(**rel, tuple, false, &e.unavailable_columns, "snapshot row");
  if (!row) return fail(row.error());
  e.after = std::move(*row);
  return e;
}

Status TransactionAssembler::append_reads(std::uint32_t relation_id,
                                          std::span<const std::string_view> rows, Lsn position,
                                          std::int64_t timestamp_ms,
                                          const SnapshotMetadata& snapshot,
                                          std::vector<Event>& out, std::size_t& used,
                                          std::vector<std::size_t>* sizes) {
  auto found = relation(relation_id, "snapshot row");
  if (!found) return fail(found.error());
  const Relation& rel = **found;
  const auto& columns = rel.msg.columns;
  // The same for every row of the chunk: made once, copied.
  const std::string offset = position.to_string();
  const std::int64_t now = clock();
  if (out.size() < used) return fail(Error::invalid_state("append_reads: used is past the end"));
  if (out.size() < used + rows.size()) out.resize(used + rows.size());
  std::vector<CopyField>& fields = copy_fields_;
  std::size_t next = used;
  if (sizes) sizes->resize(used);
  for (const std::string_view line : rows) {
    split_copy_row(line, fields);
    if (fields.size() != columns.size()) {
      // Nothing of this chunk is handed over: `used` stays where it was, and the events
      // written past it remain reusable.
      if (sizes) sizes->resize(used);
      return fail(Error::invalid_data(
          "a snapshot row of " + qualified(rel.msg) + " carries " +
          std::to_string(fields.size()) + " columns but the table's description has " +
          std::to_string(columns.size())));
    }
    // Every field is set, whatever a reused event held before: assignments keep the
    // strings' and vectors' memory, so a reused event costs no allocation.
    Event& e = out[next++];
    e.op = Operation::kRead;
    e.before = BeforeImage();
    e.source.source_name = source_name_;
    e.source.offset = offset;
    e.source.timestamp = timestamp_ms;
    e.ts = now;
    e.schema = rel.shape->schema();
    e.table = rel.msg.relation_name;
    e.primary_key = rel.primary_key;
    e.snapshot = snapshot;
    e.transaction.reset();
    e.envelope_version = kEnvelopeVersion;
    e.unavailable_columns.clear();
    e.shape = rel.shape;
    e.resume_offset.clear();
    e.resume_state.clear();
    e.log_position = LogPosition();
    e.gtid.clear();
    e.snapshot_edge = SnapshotEdge::kNone;
    Row& row = e.after ? *e.after : e.after.emplace();
    row.resize(columns.size());
    for (std::size_t i = 0; i < columns.size(); ++i) {
      ColumnValue& v = row[i];
      const CopyField& f = fields[i];
      v.name = columns[i].name;
      v.is_json = rel.is_json[i];
      if (f.null) {
        v.text.reset();
        continue;
      }
      if (!v.text) v.text.emplace();
      copy_field_text(f, *v.text);
      if (v.is_json) one_line_json(*v.text);
    }
    // Measured now, while the event is in cache, rather than when it is queued.
    if (sizes) sizes->push_back(detail::approx_event_bytes(e));
  }
  used = next;
  return ok();
}

Event TransactionAssembler::make_message_event(const LogicalMessageMsg& m, Lsn position) {
  const bool text = cppcdc::detail::is_valid_utf8(m.content);
  auto& shapes = message_shapes_[m.prefix];
  RowShapePtr& shape = text ? shapes.text : shapes.bytea;
  if (!shape) {
    auto column = [](std::string name, std::string type, std::uint32_t oid) {
      ColumnShape c;
      c.name = std::move(name);
      c.data_type = std::move(type);
      c.nullable = false;
      c.type_oid = oid;
      return c;
    };
    shape = std::make_shared<const RowShape>(
        std::nullopt, m.prefix + "__messages",
        std::vector<ColumnShape>{column("prefix", "text", 25),
                                 column("content", text ? "text" : "bytea", text ? 25 : 17),
                                 column("transactional", "boolean", 16)},
        std::vector<std::string>{});
  }
  Event e;
  e.op = Operation::kMessage;
  e.source.source_name = source_name_;
  e.source.offset = (position.is_zero() ? m.lsn : position).to_string();
  e.ts = clock();
  // A transactional message takes its transaction's commit time; a non-transactional one has
  // no commit, so it carries the time cppcdc decoded it.
  e.source.timestamp = m.transactional && in_tx_ ? pg_timestamp_to_unix_ms(begin_.commit_time)
                                                 : e.ts;
  e.table = shape->table();
  e.shape = shape;
  e.after = Row{ColumnValue{"prefix", m.prefix, false},
                ColumnValue{"content", text ? m.content : cppcdc::detail::bytea_hex(m.content), false},
                ColumnValue{"transactional", m.transactional ? "t" : "f", false}};
  return e;
}

const std::string& TransactionAssembler::visibility_state() {
  if (visibility_version_ != visibility.version()) {
    visibility_state_ = visibility.to_state();
    visibility_version_ = visibility.version();
  }
  return visibility_state_;
}

bool TransactionAssembler::already_read(const Relation& rel, const Event& e) {
  if (visibility.empty()) return false;
  return visibility.already_read(begin_.xid, rel.msg.namespace_name + "." + rel.msg.relation_name,
                                 e.before.row(), e.after ? &*e.after : nullptr, compare_keys);
}

Status TransactionAssembler::feed(PgOutputMessage message, Lsn position, std::vector<Event>& out,
                                  std::vector<std::size_t>* out_bytes, std::uint32_t change_xid) {
  if (ready_spill_.file) {
    return fail(Error::invalid_state("a spilled transaction must be drained before the next "
                                     "pgoutput message is fed"));
  }
  if (in_stream_) {
    if (std::holds_alternative<BeginMsg>(message) || std::holds_alternative<CommitMsg>(message) ||
        std::holds_alternative<StreamCommitMsg>(message) ||
        std::holds_alternative<StreamAbortMsg>(message) ||
        std::holds_alternative<StreamStartMsg>(message)) {
      return fail(Error::invalid_data("pgoutput " + describe(message) +
                                      " arrived inside the stream block of xid " +
                                      std::to_string(begin_.xid)));
    }
    mark_subxact(change_xid);
  } else if (std::holds_alternative<StreamStopMsg>(message)) {
    return fail(Error::invalid_data("pgoutput Stream Stop arrived outside a stream block"));
  }
  return std::visit(
      [&](auto& m) -> Status {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, BeginMsg>) {
          if (in_tx_) {
            return fail(Error::invalid_data("pgoutput Begin of xid " + std::to_string(m.xid) +
                                            " arrived inside transaction " +
                                            std::to_string(begin_.xid)));
          }
          in_tx_ = true;
          begin_ = m;
          begin_position_ = position;
          pending_.clear();
          pending_sizes_.clear();
          pending_bytes_ = 0;
          spill_.reset();
          for (auto& e : waiting_schema_changes_) {
            e.source.offset = position.to_string();
            e.source.timestamp = pg_timestamp_to_unix_ms(m.commit_time);
            pending_sizes_.push_back(detail::approx_event_bytes(e));
            pending_.push_back(std::move(e));
          }
          waiting_schema_changes_.clear();
          return ok();
        } else if constexpr (std::is_same_v<T, CommitMsg>) {
          if (!in_tx_) {
            return fail(Error::invalid_data("pgoutput Commit at " + m.end_lsn.to_string() +
                                            " arrived outside a transaction"));
          }
          return finish_transaction(m.end_lsn, out, out_bytes, std::nullopt);
        } else if constexpr (std::is_same_v<T, StreamStartMsg>) {
          return on_stream_start(m, position);
        } else if constexpr (std::is_same_v<T, StreamStopMsg>) {
          return on_stream_stop();
        } else if constexpr (std::is_same_v<T, StreamAbortMsg>) {
          return on_stream_abort(m);
        } else if constexpr (std::is_same_v<T, StreamCommitMsg>) {
          if (in_tx_) {
            return fail(Error::invalid_data("pgoutput Stream Commit of xid " +
                                            std::to_string(m.xid) + " arrived inside transaction " +
                                            std::to_string(begin_.xid)));
          }
          auto it = streamed_.find(m.xid);
          if (it == streamed_.end()) {
            return fail(Error::invalid_data(
                "pgoutput Stream Commit of xid " + std::to_string(m.xid) + " at " +
                m.end_lsn.to_string() + " for a transaction none of whose blocks arrived"));
          }
          OpenTx t = std::move(it->second);
          streamed_.erase(it);
          swap_open(t);
          begin_.final_lsn = m.commit_lsn;
          begin_.commit_time = m.commit_time;
          in_tx_ = true;
          // Shape changes waiting to be announced come first, as at a Begin.
          if (!waiting_schema_changes_.empty()) {
            std::vector<Event> first = std::move(waiting_schema_changes_);
            waiting_schema_changes_.clear();
            for (auto& e : first) e.source.offset = begin_position_.to_string();
            if (spill_) {
              ready_spill_.prefix = std::move(first);
            } else {
              std::vector<std::size_t> sizes;
              for (const auto& e : first) {
                sizes.push_back(detail::approx_event_bytes(e));
                pending_bytes_ += sizes.back();
              }
              pending_.insert(pending_.begin(), std::make_move_iterator(first.begin()),
                              std::make_move_iterator(first.end()));
              pending_sizes_.insert(pending_sizes_.begin(), sizes.begin(), sizes.end());
            }
          }
          return finish_transaction(m.end_lsn, out, out_bytes,
                                    pg_timestamp_to_unix_ms(m.commit_time));
        } else if constexpr (std::is_same_v<T, RelationMsg>) {
          return on_relation(m);
        } else if constexpr (std::is_same_v<T, InsertMsg>) {
          auto rel = relation(m.relation_id, "Insert");
          if (!rel) return fail(rel.error());
          if (!(*rel)->captured) return ok();
          // Built where it is kept: the hot path of every insert.
          Event& e = begin_pending();
          fill_event(e, **rel, Operation::kInsert, position);
          auto row = make_row(**rel, m.new_tuple, false, &e.unavailable_columns, "Insert");
          if (!row) {
            drop_pending();
            return fail(row.error());
          }
          e.after = std::move(*row);
          if (already_read(**rel, e)) {
            drop_pending();
            return ok();
          }
          return commit_pending();
        } else if constexpr (std::is_same_v<T, UpdateMsg>) {
          auto rel = relation(m.relation_id, "Update");
          if (!rel) return fail(rel.error());
          if (!(*rel)->captured) return ok();
          const Relation& r = **rel;
          Event e = make_event(r, Operation::kUpdate, position);
          if (m.old_kind == 'K') {
            auto key = make_row(r, m.old_tuple, true, nullptr, "Update (old key)");
            if (!key) return fail(key.error());
            e.before = BeforeKeyOnly{std::move(*key)};
          } else if (m.old_kind == 'O') {
            std::vector<std::string> missing;
            auto old = make_row(r, m.old_tuple, false, &missing, "Update (old row)");
            if (!old) return fail(old.error());
            e.before = BeforeFull{std::move(*old), std::move(missing)};
          }
          std::vector<std::string> unchanged;
          auto row = make_row(r, m.new_tuple, false, &unchanged, "Update");
          if (!row) return fail(row.error());
          if (!unchanged.empty()) {
            if (const Row* old = e.before.full_row()) {
              // An unchanged column's new value is its old value: complete `after` from the
              // old row of the same WAL record, keeping ordinal order.
              Row filled;
              filled.reserve(r.msg.columns.size());
              std::vector<std::string> still_missing;
              for (const auto& col : r.msg.columns) {
                if (const ColumnValue* v = find_column(*row, col.name)) {
                  filled.push_back(*v);
                } else if (const ColumnValue* o = find_column(*old, col.name)) {
                  filled.push_back(*o);
                } else {
                  still_missing.push_back(col.name);
                }
              }
              *row = std::move(filled);
              unchanged = std::move(still_missing);
            }
          }
          e.after = std::move(*row);
          e.unavailable_columns = std::move(unchanged);
          if (already_read(r, e)) return ok();
          return add_pending(std::move(e));
        } else if constexpr (std::is_same_v<T, DeleteMsg>) {
          auto rel = relation(m.relation_id, "Delete");
          if (!rel) return fail(rel.error());
          if (!(*rel)->captured) return ok();
          const Relation& r = **rel;
          Event e = make_event(r, Operation::kDelete, position);
          if (m.old_kind == 'O') {
            std::vector<std::string> missing;
            auto old = make_row(r, m.old_tuple, false, &missing, "Delete (old row)");
            if (!old) return fail(old.error());
            e.before = BeforeFull{std::move(*old), std::move(missing)};
          } else {
            auto key = make_row(r, m.old_tuple, true, nullptr, "Delete (old key)");
            if (!key) return fail(key.error());
            e.before = BeforeKeyOnly{std::move(*key)};
          }
          if (already_read(r, e)) return ok();
          return add_pending(std::move(e));
        } else if constexpr (std::is_same_v<T, TruncateMsg>) {
          for (auto id : m.relation_ids) {
            auto rel = relation(id, "Truncate");
            if (!rel) return fail(rel.error());
            if (!(*rel)->captured) continue;
            if (!visibility.empty()) {
              const std::string table =
                  (*rel)->msg.namespace_name + "." + (*rel)->msg.relation_name;
              if (visibility.truncate_already_read(begin_.xid, table)) continue;
              visibility.truncated(table);
            }
            CPPCDC_TRY(add_pending(make_event(**rel, Operation::kTruncate, position)));
          }
          return ok();
        } else if constexpr (std::is_same_v<T, LogicalMessageMsg>) {
          if (!capture_messages) return ok();
          Event e = make_message_event(m, position);
          if (m.transactional && in_tx_) {
            return add_pending(std::move(e));
          } else if (m.transactional) {
            return fail(Error::invalid_data("pgoutput transactional Message at " +
                                            m.lsn.to_string() + " arrived outside a transaction"));
          } else {
            // Not part of any transaction: delivered on its own, at once. The LSN pgoutput
            // gives a message is the end of its WAL record, and decoding skips a message whose
            // record starts before the start position: resuming at that end skips this
            // message after a restart, and nothing that follows (the next record starts there
            // or later).
            e.resume_offset = m.lsn.to_string();
            e.log_position = to_log_position(m.lsn);
            if (out_bytes) out_bytes->push_back(detail::approx_event_bytes(e));
            out.push_back(std::move(e));
          }
          return ok();
        } else {
          // Origin and Type messages carry nothing for the envelope.
          return ok();
        }
      },
      message);
}

}  // namespace cppcdc::pg
