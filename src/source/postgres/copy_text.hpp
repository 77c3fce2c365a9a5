#pragma once
// Rows of PostgreSQL's COPY ... TO STDOUT in its text format, the way the blocking snapshot
// reads a table (snapshot.cpp). Source: PostgreSQL documentation, "COPY", section "Text
// Format": one row per line, columns separated by a tab, \N for NULL, and a backslash in
// front of the bytes that would otherwise break the layout. COPY TO writes \\ \b \f \n \r \t
// \v; the octal (\ooo) and hex (\xhh) forms COPY FROM accepts are decoded too, and a
// backslash before any other byte stands for that byte. The values themselves are the
// column types' text output, exactly what pgoutput sends for the same row.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cppcdc::pg {

/// One column of a COPY text row, still escaped.
struct CopyField {
  std::string_view raw;  ///< the bytes between the separators, escapes included
  bool null = false;     ///< the field was \N
  bool escaped = false;  ///< raw holds a backslash: decode with unescape_copy_field()
};

/// Splits one row (as PQgetCopyData returns it: the row's bytes and its '\n') into `fields`,
/// which is resized to the row's column count. The views point into `line`.
inline void split_copy_row(std::string_view line, std::vector<CopyField>& fields) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  std::size_t n = 0;
  std::size_t start = 0;
  bool escaped = false;
  for (std::size_t i = 0;; ++i) {
    if (i == line.size() || line[i] == '\t') {
      if (n == fields.size()) fields.emplace_back();
      CopyField& f = fields[n++];
      f.raw = line.substr(start, i - start);
      f.null = f.raw.size() == 2 && f.raw[0] == '\\' && f.raw[1] == 'N';
      f.escaped = escaped && !f.null;
      if (i == line.size()) break;
      start = i + 1;
      escaped = false;
    } else if (line[i] == '\\') {
      escaped = true;
      ++i;  // the escaped byte is never a separator, even when it is a tab
      if (i == line.size()) {
        // A lone backslash at the end of the row: keep it as the byte it stands for.
        if (n == fields.size()) fields.emplace_back();
        CopyField& f = fields[n++];
        f.raw = line.substr(start);
        f.null = false;
        f.escaped = true;
        break;
      }
    }
  }
  fields.resize(n);
}

/// Decodes the escapes of a field into `out` (replacing its content).
inline void unescape_copy_field(std::string_view raw, std::string& out) {
  out.clear();
  out.reserve(raw.size());
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c != '\\' || i + 1 == raw.size()) {
      out.push_back(c);
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'v': out.push_back('\v'); break;
      case 'x':
        if (i + 1 < raw.size() && hex(raw[i + 1]) >= 0) {
          int v = hex(raw[++i]);
          if (i + 1 < raw.size() && hex(raw[i + 1]) >= 0) v = v * 16 + hex(raw[++i]);
          out.push_back(static_cast<char>(v));
        } else {
          out.push_back('x');
        }
        break;
      default:
        if (octal(e)) {
          int v = e - '0';
          for (int k = 0; k < 2 && i + 1 < raw.size() && octal(raw[i + 1]); ++k) {
            v = v * 8 + (raw[++i] - '0');
          }
          out.push_back(static_cast<char>(v & 0xFF));
        } else {
          out.push_back(e);
        }
    }
  }
}

/// The text of a non-NULL field into `out` (replacing its content): decoded when it holds
/// escapes, copied as it is otherwise.
inline void copy_field_text(const CopyField& f, std::string& out) {
  if (f.escaped) {
    unescape_copy_field(f.raw, out);
  } else {
    out.assign(f.raw);
  }
}

}  // namespace cppcdc::pg
