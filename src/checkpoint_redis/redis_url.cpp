// parse_redis_url (cppcdc/redis_checkpoint.hpp).

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/text_util.hpp"
#include "cppcdc/redis_checkpoint.hpp"

namespace cppcdc {
namespace {

Status bad_url(std::string what) {
  return fail(Error::checkpoint(ErrorKind::kConfiguration, std::move(what))
                  .for_setting(SettingOwner::kCheckpoint, "url"));
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// %XX escapes decoded; nullopt for a malformed one.
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const int high = i + 1 < text.size() ? hex_digit(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace

Status parse_redis_url(std::string_view url, RedisCheckpointOptions& options) {
  constexpr std::string_view kScheme = "redis://";
  if (starts_with_nocase(url, "rediss://")) {
    return bad_url(
        "TLS (rediss://) is not supported: this build's hiredis (Debian 12, 0.14) "
        "has none; reach Redis over a trusted network or a TLS tunnel (stunnel, "
        "spiped) and use redis://");
  }
  if (!starts_with_nocase(url, kScheme)) {
    return bad_url("expected redis://[[username][:password]@]host[:port][/db]");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad_url(
        "query parameters are not supported in the URL; use the other settings "
        "(timeout_ms, connect_timeout_ms, ...)");
  }
  // The user information ends at the last '@' (a password may hold one, escaped or not).
  const std::size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    auto username = percent_decode(userinfo.substr(0, colon));
    std::optional<std::string> password = colon == std::string_view::npos
                                              ? std::optional<std::string>("")
                                              : percent_decode(userinfo.substr(colon + 1));
    if (!username || !password) {
      return bad_url("the user name or password has a malformed %-escape");
    }
    options.username = std::move(*username);
    options.password = std::move(*password);
  }
  const std::size_t slash = rest.find('/');
  const std::string_view hostport = rest.substr(0, slash);
  const std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  std::string_view host = hostport;
  std::string_view port;
  if (hostport.starts_with('[')) {  // [IPv6 address]
    const std::size_t close = hostport.find(']');
    if (close == std::string_view::npos) return bad_url("an IPv6 address lacks its ']'");
    host = hostport.substr(1, close - 1);
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return bad_url("expected ':port' after the IPv6 address");
      port = after.substr(1);
    }
  } else if (const std::size_t colon = hostport.rfind(':'); colon != std::string_view::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.empty()) return bad_url("the URL names no host");
  options.host = std::string(host);
  if (!port.empty() || hostport.ends_with(':')) {
    const auto number = detail::parse_decimal(port);
    if (!number || *number < 1 || *number > 65535) {
      return bad_url("the port is not a number from 1 to 65535");
    }
    options.port = static_cast<std::uint16_t>(*number);
  }
  if (!path.empty()) {
    const auto db = detail::parse_decimal(path);
    if (!db || *db > 0x7fffffff) return bad_url("the path is not a database number (/0, /1, ...)");
    options.db = static_cast<std::uint32_t>(*db);
  }
  return ok();
}

}  // namespace cppcdc
