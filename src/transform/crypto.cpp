#include "transform/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

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

HmacSha256::HmacSha256(std::string_view key)
    : md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)),
      inner_(EVP_MD_CTX_new()),
      outer_(EVP_MD_CTX_new()),
      work_(EVP_MD_CTX_new()) {
  if (md_ == nullptr || inner_ == nullptr || outer_ == nullptr || work_ == nullptr) return;
  constexpr std::size_t kBlock = 64;
  unsigned char block[kBlock] = {};
  if (key.size() > kBlock) {
    // A key longer than the block is replaced by its digest (RFC 2104, section 2).
    unsigned int size = 0;
    if (EVP_Digest(key.data(), key.size(), block, &size, md_, nullptr) != 1) return;
  } else {
    std::memcpy(block, key.data(), key.size());
  }
  unsigned char ipad[kBlock];
  unsigned char opad[kBlock];
  for (std::size_t i = 0; i < kBlock; ++i) {
    ipad[i] = static_cast<unsigned char>(block[i] ^ 0x36);
    opad[i] = static_cast<unsigned char>(block[i] ^ 0x5c);
  }
  ok_ = EVP_DigestInit_ex(inner_, md_, nullptr) == 1 &&
        EVP_DigestUpdate(inner_, ipad, kBlock) == 1 &&
        EVP_DigestInit_ex(outer_, md_, nullptr) == 1 &&
        EVP_DigestUpdate(outer_, opad, kBlock) == 1;
  OPENSSL_cleanse(block, kBlock);
  OPENSSL_cleanse(ipad, kBlock);
  OPENSSL_cleanse(opad, kBlock);
}

HmacSha256::~HmacSha256() {
  EVP_MD_CTX_free(work_);
  EVP_MD_CTX_free(outer_);
  EVP_MD_CTX_free(inner_);
  EVP_MD_free(md_);
}

bool HmacSha256::hex(std::string_view data, std::string& out) {
  if (!ok_) return false;
  unsigned char inner_digest[EVP_MAX_MD_SIZE];
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_MD_CTX_copy_ex(work_, inner_) != 1 ||
      EVP_DigestUpdate(work_, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(work_, inner_digest, &size) != 1) {
    return false;
  }
  unsigned int mac_size = 0;
  if (EVP_MD_CTX_copy_ex(work_, outer_) != 1 || EVP_DigestUpdate(work_, inner_digest, size) != 1 ||
      EVP_DigestFinal_ex(work_, mac, &mac_size) != 1) {
    return false;
  }
  append_hex(mac, mac_size, out);
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
