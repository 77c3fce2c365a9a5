// Secrets out of PostgreSQL connection strings, for logs and `cppcdc check-config`.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "cppcdc/postgres.hpp"

namespace cppcdc::pg {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// libpq keywords whose value is a secret: the password, and the passphrase of an encrypted
// client key (sslpassword).
bool is_secret_key(std::string_view key) {
  return iequals(key, "password") || iequals(key, "sslpassword");
}

// key=value connection string: replaces the value of every secret keyword.
std::string redact_keyword_dsn(std::string_view dsn) {
  std::string out;
  out.reserve(dsn.size());
  std::size_t i = 0;
  while (i < dsn.size()) {
    // Copy whitespace between pairs.
    while (i < dsn.size() && is_space(dsn[i])) out += dsn[i++];
    const std::size_t key_start = i;
    while (i < dsn.size() && dsn[i] != '=' && !is_space(dsn[i])) ++i;
    const std::string_view key = dsn.substr(key_start, i - key_start);
    out.append(key);
    while (i < dsn.size() && is_space(dsn[i])) out += dsn[i++];
    if (i >= dsn.size() || dsn[i] != '=') continue;  // malformed; keep scanning
    out += dsn[i++];
    while (i < dsn.size() && is_space(dsn[i])) out += dsn[i++];
    const std::size_t value_start = i;
    if (i < dsn.size() && dsn[i] == '\'') {
      ++i;
      while (i < dsn.size() && dsn[i] != '\'') i += (dsn[i] == '\\' && i + 1 < dsn.size()) ? 2 : 1;
      if (i < dsn.size()) ++i;  // closing quote
    } else {
      while (i < dsn.size() && !is_space(dsn[i]))
        i += (dsn[i] == '\\' && i + 1 < dsn.size()) ? 2 : 1;
    }
    if (is_secret_key(key)) {
      out += "****";
    } else {
      out.append(dsn.substr(value_start, i - value_start));
    }
  }
  return out;
}

// postgres:// or postgresql:// URI: the user-info password and `password` query parameters.
std::string redact_uri_dsn(std::string_view dsn, std::size_t authority_start) {
  std::string out(dsn);
  const std::size_t query = out.find('?', authority_start);
  const std::size_t authority_limit = query == std::string::npos ? out.size() : query;
  const std::size_t at = out.rfind('@', authority_limit == 0 ? 0 : authority_limit - 1);
  if (at != std::string::npos && at >= authority_start) {
    const std::size_t colon = out.find(':', authority_start);
    if (colon != std::string::npos && colon < at) {
      out.replace(colon + 1, at - colon - 1, "****");
    }
  }
  std::size_t pos = out.find('?', authority_start);
  while (pos != std::string::npos && pos < out.size()) {
    const std::size_t name_start = pos + 1;
    const std::size_t eq = out.find('=', name_start);
    std::size_t end = out.find('&', name_start);
    if (end == std::string::npos) end = out.size();
    if (eq != std::string::npos && eq < end &&
        is_secret_key(std::string_view(out).substr(name_start, eq - name_start))) {
      out.replace(eq + 1, end - eq - 1, "****");
      end = eq + 1 + 4;
    }
    pos = end < out.size() ? end : std::string::npos;
  }
  return out;
}

}  // namespace

std::string redact_dsn(std::string_view dsn) {
  for (std::string_view scheme : {"postgresql://", "postgres://"}) {
    if (dsn.size() >= scheme.size() && iequals(dsn.substr(0, scheme.size()), scheme)) {
      return redact_uri_dsn(dsn, scheme.size());
    }
  }
  return redact_keyword_dsn(dsn);
}

}  // namespace cppcdc::pg
