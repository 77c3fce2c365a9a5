#include "core/event_spill.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cppcdc::detail {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;  // write in 1 MiB pieces
constexpr std::size_t kReadBytes = 1 << 20;

// ---- encoding: unsigned LEB128 varints, zig-zag for signed, length-prefixed strings ----

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_signed(std::string& out, std::int64_t v) {
  put_varint(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
void put_string(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}
void put_strings(std::string& out, const std::vector<std::string>& v) {
  put_varint(out, v.size());
  for (const auto& s : v) put_string(out, s);
}
void put_row(std::string& out, const Row& row) {
  put_varint(out, row.size());
  for (const auto& c : row) {
    put_string(out, c.name);
    out.push_back(static_cast<char>((c.text ? 1 : 0) | (c.is_json ? 2 : 0)));
    if (c.text) put_string(out, *c.text);
  }
}

class Reader {
 public:
  Reader(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  bool ok() const noexcept { return ok_; }
  std::uint8_t u8() {
    if (p_ >= end_) return bad(), 0;
    return static_cast<std::uint8_t>(*p_++);
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return bad(), 0;
      const auto b = static_cast<std::uint8_t>(*p_++);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return bad(), 0;
  }
  std::int64_t signed_varint() {
    const std::uint64_t z = varint();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  std::string string() {
    const std::uint64_t n = varint();
    if (!ok_ || n > static_cast<std::uint64_t>(end_ - p_)) return bad(), std::string();
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<std::string> strings() {
    const std::uint64_t n = varint();
    std::vector<std::string> v;
    for (std::uint64_t i = 0; ok_ && i < n; ++i) v.push_back(string());
    return v;
  }
  Row row() {
    const std::uint64_t n = varint();
    Row r;
    if (ok_ && n <= static_cast<std::uint64_t>(end_ - p_)) r.reserve(n);
    for (std::uint64_t i = 0; ok_ && i < n; ++i) {
      ColumnValue c;
      c.name = string();
      const std::uint8_t flags = u8();
      c.is_json = flags & 2;
      if (flags & 1) c.text = string();
      r.push_back(std::move(c));
    }
    return r;
  }
  bool at_end() const noexcept { return p_ == end_; }

 private:
  void bad() { ok_ = false; }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

std::size_t string_bytes(const std::string& s) {
  // Short strings live inside the std::string object (small-string optimisation).
  return sizeof(std::string) + (s.size() > 15 ? s.size() + 1 : 0);
}
std::size_t row_bytes(const Row& row) {
  std::size_t n = sizeof(Row);
  for (const auto& c : row) {
    n += sizeof(ColumnValue) + string_bytes(c.name) - sizeof(std::string);
    if (c.text) n += string_bytes(*c.text) - sizeof(std::string);
  }
  return n;
}

}  // namespace

std::size_t approx_string_bytes(const std::string& s) noexcept { return string_bytes(s); }

std::size_t approx_event_bytes(const Event& e) noexcept {
  std::size_t n = sizeof(Event);
  if (const Row* b = e.before.row()) n += row_bytes(*b);
  if (e.after) n += row_bytes(*e.after);
  n += string_bytes(e.source.source_name) + string_bytes(e.source.offset) + string_bytes(e.table) +
       string_bytes(e.resume_offset) + string_bytes(e.gtid) + string_bytes(e.resume_state);
  if (e.schema) n += string_bytes(*e.schema);
  if (e.primary_key) {
    for (const auto& k : *e.primary_key) n += string_bytes(k);
  }
  for (const auto& c : e.unavailable_columns) n += string_bytes(c);
  return n;
}

Result<std::unique_ptr<EventSpill>> EventSpill::create(const std::filesystem::path& dir) {
  std::string pattern = (dir / "cppcdc-spill-XXXXXX").string();
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return fail(Error::internal("cannot create a spill file in " + dir.string() + ": " +
                                std::strerror(err) +
                                "; point the spill directory at a writable directory"));
  }
  // Unlinked at once: the space is released when the file is closed or the process ends,
  // however it ends.
  ::unlink(pattern.c_str());
  return std::unique_ptr<EventSpill>(new EventSpill(fd, dir));
}

EventSpill::~EventSpill() {
  if (fd_ >= 0) ::close(fd_);
}

Error EventSpill::io_error(const std::string& what, int err) const {
  std::string msg = what + " (spill file in " + dir_.string() + "): " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) {
    msg += "; free space there, or point the spill directory at a larger file system";
  }
  return Error::internal(std::move(msg));
}

Status EventSpill::flush() {
  std::size_t off = 0;
  while (off < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + off, buffer_.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(io_error("writing spilled events", errno));
    }
    off += static_cast<std::size_t>(n);
  }
  file_bytes_ += buffer_.size();
  buffer_.clear();
  return ok();
}

std::size_t EventSpill::begin_record() {
  const std::size_t start = buffer_.size();
  buffer_.append(4, '\0');  // body length, filled in by end_record
  return start;
}

Status EventSpill::end_record(std::size_t start, const char* what) {
  const std::size_t body = buffer_.size() - start - 4;
  if (body > 0xffffffffu) {
    buffer_.resize(start);
    return fail(Error::invalid_data(std::string(what) + " of " + std::to_string(body) +
                                    " bytes is too large to spill (limit 4 GiB)"));
  }
  for (int i = 0; i < 4; ++i) buffer_[start + i] = static_cast<char>((body >> (8 * i)) & 0xff);
  ++written_;
  if (buffer_.size() >= kFlushBytes) return flush();
  return ok();
}

Status EventSpill::append_record(std::string_view head, std::span<const std::uint8_t> tail) {
  if (reading_) return fail(Error::invalid_state("spill file is being read; cannot append"));
  const std::size_t start = begin_record();
  buffer_.append(head);
  buffer_.append(reinterpret_cast<const char*>(tail.data()), tail.size());
  return end_record(start, "a record");
}

Status EventSpill::append(const Event& e) {
  if (reading_) return fail(Error::invalid_state("spill file is being read; cannot append"));
  const std::size_t start = begin_record();
  std::string& out = buffer_;
  out.push_back(static_cast<char>(e.op));
  const auto& before = e.before.variant();
  out.push_back(static_cast<char>(before.index()));
  if (const auto* k = std::get_if<BeforeKeyOnly>(&before)) {
    put_row(out, k->key);
  } else if (const auto* f = std::get_if<BeforeFull>(&before)) {
    put_row(out, f->row);
    put_strings(out, f->unavailable_columns);
  }
  out.push_back(e.after ? 1 : 0);
  if (e.after) put_row(out, *e.after);
  put_string(out, e.source.source_name);
  put_string(out, e.source.offset);
  put_signed(out, e.source.timestamp);
  put_signed(out, e.ts);
  out.push_back(e.schema ? 1 : 0);
  if (e.schema) put_string(out, *e.schema);
  put_string(out, e.table);
  out.push_back(e.primary_key ? 1 : 0);
  if (e.primary_key) put_strings(out, *e.primary_key);
  out.push_back(e.snapshot ? 1 : 0);
  if (e.snapshot) {
    put_string(out, e.snapshot->snapshot_id);
    put_varint(out, e.snapshot->chunk);
    out.push_back(e.snapshot->is_last_chunk ? 1 : 0);
  }
  out.push_back(e.transaction ? 1 : 0);
  if (e.transaction) {
    put_varint(out, e.transaction->tx_id);
    put_varint(out, e.transaction->total_events);
    put_varint(out, e.transaction->event_index);
  }
  put_varint(out, e.envelope_version);
  put_strings(out, e.unavailable_columns);
  std::uint32_t shape = 0;  // 0: none, else index + 1
  if (e.shape) {
    auto [it, inserted] =
        shape_index_.try_emplace(e.shape.get(), static_cast<std::uint32_t>(shapes_.size() + 1));
    if (inserted) shapes_.push_back(e.shape);
    shape = it->second;
  }
  put_varint(out, shape);
  put_string(out, e.resume_offset);
  put_string(out, e.resume_state);
  put_string(out, e.gtid);
  out.push_back(static_cast<char>(e.snapshot_edge));
  return end_record(start, "an event");
}

Status EventSpill::truncate(std::uint64_t events, std::uint64_t offset) {
  if (reading_) return fail(Error::invalid_state("spill file is being read; cannot truncate"));
  if (events > written_ || offset > end_offset()) {
    return fail(Error::invalid_state("spill file truncation to event " + std::to_string(events) +
                                     " at byte " + std::to_string(offset) +
                                     " lies past its end (" + std::to_string(written_) +
                                     " events, " + std::to_string(end_offset()) + " bytes)"));
  }
  if (offset >= file_bytes_) {
    buffer_.resize(static_cast<std::size_t>(offset - file_bytes_));
  } else {
    buffer_.clear();
    if (::ftruncate(fd_, static_cast<off_t>(offset)) != 0) {
      return fail(io_error("truncating spilled events", errno));
    }
    if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
      return fail(io_error("truncating spilled events", errno));
    }
    file_bytes_ = offset;
  }
  written_ = events;
  return ok();
}

Status EventSpill::start_reading() {
  if (!reading_) {
    CPPCDC_TRY(flush());
    if (::lseek(fd_, 0, SEEK_SET) < 0) return fail(io_error("rewinding spilled events", errno));
    reading_ = true;
    buffer_.clear();
    read_pos_ = 0;
    read_ = 0;
  }
  return ok();
}

// Makes at least `need` unread bytes available in buffer_, unless the file ends first.
Status EventSpill::fill(std::size_t need) {
  if (buffer_.size() - read_pos_ >= need) return ok();
  buffer_.erase(0, read_pos_);
  read_pos_ = 0;
  while (buffer_.size() < need) {
    const std::size_t have = buffer_.size();
    const std::size_t want = std::max(kReadBytes, need - have);
    buffer_.resize(have + want);
    const ssize_t n = ::read(fd_, buffer_.data() + have, want);
    if (n < 0) {
      buffer_.resize(have);
      if (errno == EINTR) continue;
      return fail(io_error("reading spilled events back", errno));
    }
    buffer_.resize(have + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  return ok();
}

Error EventSpill::damaged(const std::string& what) const {
  return Error::internal("spill file in " + dir_.string() + " is damaged at record " +
                         std::to_string(read_) + " of " + std::to_string(written_) + ": " + what);
}

Result<std::optional<std::string_view>> EventSpill::read_body() {
  if (!reading_) return fail(Error::invalid_state("spill file: start_reading() first"));
  if (read_ == written_) return std::optional<std::string_view>();
  CPPCDC_TRY(fill(4));
  if (buffer_.size() - read_pos_ < 4) return fail(damaged("the file ends early"));
  std::uint32_t body = 0;
  for (int i = 0; i < 4; ++i) {
    body |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(buffer_[read_pos_ + i]))
            << (8 * i);
  }
  CPPCDC_TRY(fill(4 + static_cast<std::size_t>(body)));
  if (buffer_.size() - read_pos_ < 4 + static_cast<std::size_t>(body)) {
    return fail(damaged("the file ends early"));
  }
  return std::optional<std::string_view>(std::string_view(buffer_).substr(read_pos_ + 4, body));
}

Result<std::optional<std::string_view>> EventSpill::next_record() {
  auto body = read_body();
  if (!body || !*body) return body;
  read_pos_ += 4 + (*body)->size();
  ++read_;
  return body;
}

Result<bool> EventSpill::next(Event& e) {
  auto found = read_body();
  if (!found) return fail(std::move(found).error());
  if (!*found) return false;
  const std::string_view body_view = **found;
  const std::size_t body = body_view.size();
  auto corrupt = [&](const std::string& what) { return damaged(what); };
  Reader r(body_view.data(), body);
  e = Event{};
  const std::uint8_t op = r.u8();
  if (op > static_cast<std::uint8_t>(Operation::kMessage)) return fail(corrupt("bad operation"));
  e.op = static_cast<Operation>(op);
  switch (r.u8()) {
    case 0:
      break;
    case 1:
      e.before = BeforeKeyOnly{r.row()};
      break;
    case 2: {
      BeforeFull f;
      f.row = r.row();
      f.unavailable_columns = r.strings();
      e.before = std::move(f);
      break;
    }
    default:
      return fail(corrupt("bad before image"));
  }
  if (r.u8()) e.after = r.row();
  e.source.source_name = r.string();
  e.source.offset = r.string();
  e.source.timestamp = r.signed_varint();
  e.ts = r.signed_varint();
  if (r.u8()) e.schema = r.string();
  e.table = r.string();
  if (r.u8()) e.primary_key = r.strings();
  if (r.u8()) {
    SnapshotMetadata s;
    s.snapshot_id = r.string();
    s.chunk = r.varint();
    s.is_last_chunk = r.u8() != 0;
    e.snapshot = std::move(s);
  }
  if (r.u8()) {
    TransactionMetadata t;
    t.tx_id = r.varint();
    t.total_events = r.varint();
    t.event_index = r.varint();
    e.transaction = t;
  }
  e.envelope_version = static_cast<std::uint16_t>(r.varint());
  e.unavailable_columns = r.strings();
  const std::uint64_t shape = r.varint();
  if (shape > shapes_.size()) return fail(corrupt("unknown row shape"));
  if (shape > 0) e.shape = shapes_[shape - 1];
  e.resume_offset = r.string();
  e.resume_state = r.string();
  e.gtid = r.string();
  const std::uint8_t edge = r.u8();
  if (edge > static_cast<std::uint8_t>(SnapshotEdge::kLast))
    return fail(corrupt("bad snapshot edge"));
  e.snapshot_edge = static_cast<SnapshotEdge>(edge);
  if (!r.ok() || !r.at_end()) return fail(corrupt("malformed record"));
  read_pos_ += 4 + static_cast<std::size_t>(body);
  ++read_;
  return true;
}

}  // namespace cppcdc::detail
