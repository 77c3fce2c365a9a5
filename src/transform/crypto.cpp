// SHA256_CTX for HMAC-SHA256 (see HmacSha256::Keyed); before any OpenSSL header.
#define OPENSSL_SUPPRESS_DEPRECATED

#include "transform/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstring>

namespace cppcdc::transform_detail {

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return out;
}

namespace {
void append_hex(const unsigned char* bytes, std::size_t size, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::size_t old = out.size();
  out.resize(old + size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out[old + 2 * i] = kHex[bytes[i] >> 4];
    out[old + 2 * i + 1] = kHex[bytes[i] & 15];
  }
}
}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > (1u << 30)) return std::nullopt;
  for (char c : text) {
    const bool valid = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '+' || c == '/' || c == '=';
    if (!valid) return std::nullopt;
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes: take them off.
  std::size_t size = static_cast<std::size_t>(n);
  if (text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

// ---- SHA-256 ----

Sha256::Sha256() : md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)), ctx_(EVP_MD_CTX_new()) {}

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_);
  EVP_MD_free(md_);
}

bool Sha256::start() { return md_ != nullptr && ctx_ != nullptr && EVP_DigestInit_ex(ctx_, md_, nullptr) == 1; }

bool Sha256::update(std::string_view data) {
  return EVP_DigestUpdate(ctx_, data.data(), data.size()) == 1;
}

bool Sha256::finish_hex(std::string& out) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_, digest, &size) != 1) return false;
  append_hex(digest, size, out);
  return true;
}

bool Sha256::digest(std::string_view data, std::array<unsigned char, 32>& out) {
  unsigned int size = 0;
  return start() && update(data) && EVP_DigestFinal_ex(ctx_, out.data(), &size) == 1 &&
         size == 32;
}

bool Sha256::hex(std::string_view data, std::string& out) {
  return start() && update(data) && finish_hex(out);
}

// ---- HMAC-SHA256 ----

#ifndef OPENSSL_NO_DEPRECATED_3_0
// The keyed states are plain SHA256_CTX values: copying one is a 112-byte struct copy, where
// EVP_MD_CTX_copy_ex frees and allocates the provider's context on every call. Measured on
// the bench machine (32-byte values): the two EVP copies make a MAC about 1.5 times as dear as
// with plain states, EVP_MAC_CTX_dup per value about 5 times. The digest code underneath is
// the same (SHA-NI where the CPU has it). OpenSSL 3 marks these functions deprecated, not
// removed; an OpenSSL built without them takes the EVP branch below.
struct HmacSha256::Keyed {
  SHA256_CTX inner{};
  SHA256_CTX outer{};
  ~Keyed() {
    OPENSSL_cleanse(&inner, sizeof inner);
    OPENSSL_cleanse(&outer, sizeof outer);
  }
  bool init(const unsigned char* ipad, const unsigned char* opad, std::size_t size) {
    return SHA256_Init(&inner) == 1 && SHA256_Update(&inner, ipad, size) == 1 &&
           SHA256_Init(&outer) == 1 && SHA256_Update(&outer, opad, size) == 1;
  }
  bool mac(std::string_view data, unsigned char (&out)[SHA256_DIGEST_LENGTH]) const {
    SHA256_CTX work = inner;
    unsigned char inner_digest[SHA256_DIGEST_LENGTH];
    bool done = SHA256_Update(&work, data.data(), data.size()) == 1 &&
                SHA256_Final(inner_digest, &work) == 1;
    work = outer;
    done = done && SHA256_Update(&work, inner_digest, sizeof inner_digest) == 1 &&
           SHA256_Final(out, &work) == 1;
    OPENSSL_cleanse(&work, sizeof work);
    return done;
  }
};
#else
struct HmacSha256::Keyed {
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* inner = EVP_MD_CTX_new();
  EVP_MD_CTX* outer = EVP_MD_CTX_new();
  EVP_MD_CTX* work = EVP_MD_CTX_new();
  ~Keyed() {
    EVP_MD_CTX_free(work);
    EVP_MD_CTX_free(outer);
    EVP_MD_CTX_free(inner);
    EVP_MD_free(md);
  }
  bool init(const unsigned char* ipad, const unsigned char* opad, std::size_t size) {
    return md != nullptr && inner != nullptr && outer != nullptr && work != nullptr &&
           EVP_DigestInit_ex(inner, md, nullptr) == 1 && EVP_DigestUpdate(inner, ipad, size) == 1 &&
           EVP_DigestInit_ex(outer, md, nullptr) == 1 && EVP_DigestUpdate(outer, opad, size) == 1;
  }
  bool mac(std::string_view data, unsigned char (&out)[SHA256_DIGEST_LENGTH]) const {
    unsigned char inner_digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    unsigned int mac_size = 0;
    return EVP_MD_CTX_copy_ex(work, inner) == 1 &&
           EVP_DigestUpdate(work, data.data(), data.size()) == 1 &&
           EVP_DigestFinal_ex(work, inner_digest, &size) == 1 &&
           EVP_MD_CTX_copy_ex(work, outer) == 1 &&
           EVP_DigestUpdate(work, inner_digest, size) == 1 &&
           EVP_DigestFinal_ex(work, out, &mac_size) == 1 && mac_size == SHA256_DIGEST_LENGTH;
  }
};
#endif

HmacSha256::HmacSha256(std::string_view key) : keyed_(std::make_unique<Keyed>()) {
  constexpr std::size_t kBlock = 64;
  unsigned char block[kBlock] = {};
  if (key.size() > kBlock) {
    // A key longer than the block is replaced by its digest (RFC 2104, section 2).
    if (SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), block) == nullptr) {
      return;
    }
  } else {
    std::memcpy(block, key.data(), key.size());
  }
  unsigned char ipad[kBlock];
  unsigned char opad[kBlock];
  for (std::size_t i = 0; i < kBlock; ++i) {
    ipad[i] = static_cast<unsigned char>(block[i] ^ 0x36);
    opad[i] = static_cast<unsigned char>(block[i] ^ 0x5c);
  }
  ok_ = keyed_->init(ipad, opad, kBlock);
  OPENSSL_cleanse(block, kBlock);
  OPENSSL_cleanse(ipad, kBlock);
  OPENSSL_cleanse(opad, kBlock);
}

HmacSha256::~HmacSha256() = default;

bool HmacSha256::hex(std::string_view data, std::string& out) {
  unsigned char mac[SHA256_DIGEST_LENGTH];
  if (!ok_ || !keyed_->mac(data, mac)) return false;
  append_hex(mac, sizeof mac, out);
  return true;
}

// ---- AES-256-GCM ----

namespace {
constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;
}  // namespace

AesGcm::AesGcm(std::string_view secret)
    : cipher_(EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr)), ctx_(EVP_CIPHER_CTX_new()) {
  unsigned int size = 0;
  ok_ = cipher_ != nullptr && ctx_ != nullptr &&
        EVP_Digest(secret.data(), secret.size(), key_.data(), &size, EVP_sha256(), nullptr) == 1 &&
        size == key_.size();
}

AesGcm::~AesGcm() {
  OPENSSL_cleanse(key_.data(), key_.size());
  EVP_CIPHER_CTX_free(ctx_);
  EVP_CIPHER_free(cipher_);
}

Result<std::string> AesGcm::encrypt(std::string_view plaintext, std::string_view aad) {
  const auto openssl_failed = [] {
    return fail(Error::internal("AES-256-GCM encryption failed in OpenSSL"));
  };
  if (!ok_) return openssl_failed();
  unsigned char nonce[kNonceBytes];
  if (RAND_bytes(nonce, kNonceBytes) != 1) return openssl_failed();
  std::string sealed(plaintext.size() + kTagBytes, '\0');
  auto* out = reinterpret_cast<unsigned char*>(sealed.data());
  int len = 0;
  int total = 0;
  if (EVP_EncryptInit_ex(ctx_, cipher_, nullptr, key_.data(), nonce) != 1 ||
      EVP_EncryptUpdate(ctx_, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()),
                        static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx_, out, &len, reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1) {
    return openssl_failed();
  }
  total = len;
  if (EVP_EncryptFinal_ex(ctx_, out + total, &len) != 1) return openssl_failed();
  total += len;
  if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, kTagBytes, out + total) != 1) {
    return openssl_failed();
  }
  sealed.resize(static_cast<std::size_t>(total) + kTagBytes);
  std::string token(kEncryptedPrefix);
  token += base64_encode(std::string_view(reinterpret_cast<const char*>(nonce), kNonceBytes));
  token += ':';
  token += base64_encode(sealed);
  return token;
}

Result<std::string> AesGcm::decrypt(std::string_view token, std::string_view aad) {
  const auto refuse = [](std::string what) { return fail(Error::invalid_data(std::move(what))); };
  if (!ok_) return fail(Error::internal("AES-256-GCM is not available in OpenSSL"));
  if (token.substr(0, kEncryptedPrefix.size()) != kEncryptedPrefix) {
    return refuse("the value is not an \"enc:v1:\" ciphertext");
  }
  const std::string_view rest = token.substr(kEncryptedPrefix.size());
  const std::size_t colon = rest.find(':');
  if (colon == std::string_view::npos) {
    return refuse("the ciphertext has no \":\" between its nonce and its bytes");
  }
  const auto nonce = base64_decode(rest.substr(0, colon));
  const auto sealed = base64_decode(rest.substr(colon + 1));
  if (!nonce || nonce->size() != kNonceBytes) {
    return refuse("the ciphertext's nonce is not 12 bytes of base64");
  }
  if (!sealed || sealed->size() < kTagBytes) {
    return refuse("the ciphertext is not base64 of at least its 16-byte tag");
  }
  const std::size_t size = sealed->size() - kTagBytes;
  std::string plain(size, '\0');
  int len = 0;
  auto* tag = reinterpret_cast<unsigned char*>(const_cast<char*>(sealed->data() + size));
  if (EVP_DecryptInit_ex(ctx_, cipher_, nullptr, key_.data(),
                         reinterpret_cast<const unsigned char*>(nonce->data())) != 1 ||
      EVP_DecryptUpdate(ctx_, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()),
                        static_cast<int>(aad.size())) != 1 ||
      EVP_DecryptUpdate(ctx_, reinterpret_cast<unsigned char*>(plain.data()), &len,
                        reinterpret_cast<const unsigned char*>(sealed->data()),
                        static_cast<int>(size)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag) != 1) {
    return fail(Error::internal("AES-256-GCM decryption failed in OpenSSL"));
  }
  int final_len = 0;
  if (EVP_DecryptFinal_ex(ctx_, reinterpret_cast<unsigned char*>(plain.data()) + len,
                          &final_len) != 1) {
    return refuse(
        "the ciphertext does not authenticate (another key, or a value moved from another "
        "table or path, or altered)");
  }
  plain.resize(static_cast<std::size_t>(len + final_len));
  return plain;
}

}  // namespace cppcdc::transform_detail
