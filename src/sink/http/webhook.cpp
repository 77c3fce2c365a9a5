#include "webhook.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <array>
#include <memory>

namespace cppcdc::http {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n < 0 ? 0 : n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  std::string padded(text);
  while (padded.size() % 4 != 0 && padded.size() % 4 != 1) padded += '=';
  std::size_t pad = 0;
  for (std::size_t i = 0; i < padded.size(); ++i) {
    const char c = padded[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '=' && i + 2 >= padded.size()) {  // padding: only in the last two places
      ++pad;
      continue;
    }
    if ((!alnum && c != '+' && c != '/') || pad > 0) {
      return fail(Error::configuration("not base64: character " + std::to_string(i + 1) +
                                       " is not in the base64 alphabet"));
    }
  }
  if (padded.empty() || padded.size() % 4 != 0 || pad > 2) {
    return fail(Error::configuration("not base64: " + std::to_string(text.size()) +
                                     " characters is no length of a base64 text"));
  }
  std::string out(padded.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(padded.data()),
                                static_cast<int>(padded.size()));
  if (n < 0) return fail(Error::configuration("not base64"));
  // EVP_DecodeBlock counts the padding as zero bytes: take them off.
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

Result<std::string> decode_signing_secret(std::string_view secret) {
  constexpr std::string_view kPrefix = "whsec_";
  std::string_view body = secret;
  if (body.substr(0, kPrefix.size()) == kPrefix) body.remove_prefix(kPrefix.size());
  if (body.empty()) {
    return fail(Error::configuration(
        "the signing secret is empty; expected \"whsec_\" followed by the base64 of the key"));
  }
  auto key = base64_decode(body);
  if (!key) {
    return fail(Error::configuration("the signing secret is " + key.error().message() +
                                     "; expected \"whsec_\" followed by the base64 of the key"));
  }
  if (key->size() < 16) {
    return fail(Error::configuration(
        "the signing secret's key has " + std::to_string(key->size()) +
        " bytes; use at least 16 (\"whsec_\" and the base64 of 24 to 64 random bytes)"));
  }
  return key;
}

std::string message_id(std::string_view body) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(body.data(), body.size(), digest.data(), &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "msg_";
  for (unsigned int i = 0; i < 16 && i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

namespace {

// A field as "<length>:<bytes>", so that no two field lists write the same text.
void append_field(std::string& out, std::string_view value) {
  out += std::to_string(value.size());
  out += ':';
  out.append(value);
}

void append_column(std::string& out, const ColumnValue& column) {
  append_field(out, column.name);
  if (column.text) {
    append_field(out, *column.text);
  } else {
    out += 'N';  // NULL: no length can start with it
  }
}

}  // namespace

void append_event_identity(const Event& event, std::string& out) {
  append_field(out, event.source.source_name);
  append_field(out, event.source.offset);
  if (event.transaction) {
    out += 't';
    out += std::to_string(event.transaction->tx_id);
    out += '.';
    out += std::to_string(event.transaction->event_index);
  }
  out += ';';
  append_field(out, to_string(event.op));
  append_field(out, event.schema.value_or(std::string()));
  append_field(out, event.table);
  const Row* row = event.after ? &*event.after : event.before.row();
  bool keyed = false;
  if (row != nullptr && event.primary_key && !event.primary_key->empty()) {
    keyed = true;
    for (const std::string& name : *event.primary_key) {
      const auto it = std::find_if(row->begin(), row->end(),
                                   [&name](const ColumnValue& c) { return c.name == name; });
      if (it == row->end()) {
        keyed = false;
        break;
      }
      append_column(out, *it);
    }
  }
  // Neither a key nor a place in a transaction: the row itself tells such events apart.
  if (!keyed && !event.transaction && row != nullptr) {
    for (const ColumnValue& column : *row) append_column(out, column);
  }
  out += '\n';
}

std::string sign_v1(std::string_view key, std::string_view id, std::int64_t timestamp,
                    std::string_view body) {
  struct MacFree {
    void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
  };
  struct CtxFree {
    void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
  };
  static const std::unique_ptr<EVP_MAC, MacFree> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  std::unique_ptr<EVP_MAC_CTX, CtxFree> ctx(mac ? EVP_MAC_CTX_new(mac.get()) : nullptr);
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  const std::string ts = std::to_string(timestamp);
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  std::size_t size = 0;
  const auto update = [&](std::string_view part) {
    return EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                          part.size()) == 1;
  };
  const bool done = ctx &&
                    EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(key.data()),
                                 key.size(), params) == 1 &&
                    update(id) && update(".") && update(ts) && update(".") && update(body) &&
                    EVP_MAC_final(ctx.get(), out.data(), &size, out.size()) == 1;
  // OpenSSL without HMAC-SHA256 cannot happen on a supported system; an empty signature then
  // fails verification at the receiver rather than passing unsigned.
  if (!done) return "v1,";
  return "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(out.data()), size));
}

std::string signature_header(const std::vector<std::string>& keys, std::string_view id,
                             std::int64_t timestamp, std::string_view body) {
  std::string out;
  for (const auto& key : keys) {
    if (!out.empty()) out += ' ';
    out += sign_v1(key, id, timestamp, body);
  }
  return out;
}

}  // namespace cppcdc::http
