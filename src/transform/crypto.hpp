#pragma once
// The mask action's cryptography (OpenSSL 3): SHA-256, HMAC-SHA256 and AES-256-GCM in the
// "enc:v1:<nonce>:<ciphertext>" format. Each object keeps its OpenSSL contexts for reuse and
// is used by one thread at a time.

#include <openssl/evp.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/result.hpp"

namespace cppcdc::transform_detail {

/// Lower-case hex of `bytes`.
std::string to_hex(const unsigned char* bytes, std::size_t size);
/// Standard base64 with padding, and its reverse (nullopt on anything else).
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  /// The 32-byte digest of `data` appended to `out` as hex. False if OpenSSL fails.
  bool hex(std::string_view data, std::string& out);
  bool digest(std::string_view data, std::array<unsigned char, 32>& out);
  /// Streaming use: start(), update()..., finish_hex().
  bool start();
  bool update(std::string_view data);
  bool finish_hex(std::string& out);

 private:
  EVP_MD* md_ = nullptr;
  EVP_MD_CTX* ctx_ = nullptr;
};

/// HMAC-SHA256 (RFC 2104) with the key's inner and outer pads hashed once up front: a value
/// costs two copies of those keyed states and the hashing of the value and the inner digest.
class HmacSha256 {
 public:
  explicit HmacSha256(std::string_view key);
  ~HmacSha256();
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;
  bool ok() const noexcept { return ok_; }
  /// The 32-byte MAC of `data` as lower-case hex, appended to `out`.
  bool hex(std::string_view data, std::string& out);

 private:
  struct Keyed;  // the keyed inner and outer states (crypto.cpp)
  std::unique_ptr<Keyed> keyed_;
  bool ok_ = false;
};

inline constexpr std::string_view kEncryptedPrefix = "enc:v1:";

/// AES-256-GCM with a 12-byte random nonce and a 16-byte tag. The key is SHA-256(secret).
class AesGcm {
 public:
  explicit AesGcm(std::string_view secret);
  ~AesGcm();
  AesGcm(const AesGcm&) = delete;
  AesGcm& operator=(const AesGcm&) = delete;
  bool ok() const noexcept { return ok_; }
  /// "enc:v1:<base64 nonce>:<base64 ciphertext+tag>". Error kind internal on an OpenSSL
  /// failure.
  Result<std::string> encrypt(std::string_view plaintext, std::string_view aad);
  /// The plaintext. Error kind invalid_data: not the format, or the tag does not verify
  /// (another key, another table or path, or altered bytes).
  Result<std::string> decrypt(std::string_view token, std::string_view aad);

 private:
  std::array<unsigned char, 32> key_{};
  EVP_CIPHER* cipher_ = nullptr;
  EVP_CIPHER_CTX* ctx_ = nullptr;
  bool ok_ = false;
};

}  // namespace cppcdc::transform_detail
