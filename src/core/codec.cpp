#include "cppcdc/codec.hpp"

#include "core/json_write.hpp"

namespace cppcdc {

bool append_json_key(const Event& event, ByteBuffer& out) {
  if (!event.primary_key || event.primary_key->empty()) return false;
  const Row* image =
      event.op == Operation::kDelete ? event.before.row() : (event.after ? &*event.after : nullptr);
  if (image == nullptr) return false;
  // All or nothing: check every key column first, so that nothing is appended for a partial key.
  for (const std::string& name : *event.primary_key) {
    if (find_column(*image, name) == nullptr) return false;
  }
  out.ch('{');
  bool first = true;
  for (const std::string& name : *event.primary_key) {
    const ColumnValue* column = find_column(*image, name);
    if (!first) out.ch(',');
    first = false;
    detail::json_str(out, name);
    out.ch(':');
    if (!column->text) {
      detail::json_lit(out, "null");
    } else if (column->is_json) {
      out.raw(*column->text);
    } else {
      detail::json_str(out, *column->text);
    }
  }
  out.ch('}');
  return true;
}

Result<bool> Encoder::encode_key_to(std::string_view, const Event& event, ByteBuffer& out) {
  return append_json_key(event, out);
}

Status encode_lines(Encoder& encoder, std::span<const Event> events, ByteBuffer& out) {
  const std::size_t before = out.size();
  for (const Event& event : events) {
    if (auto st = encoder.encode(event, out); !st) {
      out.cur() -= out.size() - before;
      return fail(st.error().context("encoding an event of " + event.table + " as " +
                                     encoder.name()));
    }
    out.ch('\n');
  }
  return ok();
}

}  // namespace cppcdc
