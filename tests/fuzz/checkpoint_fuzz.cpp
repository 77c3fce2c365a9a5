// libFuzzer target for FileCheckpoint::decode, the checkpoint file reader. Every input is
// decoded twice: as the whole file, and as the body of a file whose header carries the right
// checksum and length (the fuzzer could never forge a SHA-256, so without this the JSON part
// would stay out of its reach). A failure must be an Error naming the file; a record that
// decodes must encode to a file that decodes to the same record and encodes to the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/text_util.hpp"
#include "cppcdc/checkpoint.hpp"
#include "fuzz_check.hpp"

namespace {

const std::string kOrigin = "fuzz.ckpt";

void check(std::string_view bytes) {
  auto record = cppcdc::FileCheckpoint::decode(bytes, kOrigin);
  if (!record) {
    CPPCDC_FUZZ_CHECK(record.error().message().find(kOrigin) != std::string::npos);
    return;
  }
  const std::string encoded = cppcdc::FileCheckpoint::encode(*record);
  auto again = cppcdc::FileCheckpoint::decode(encoded, kOrigin);
  CPPCDC_FUZZ_CHECK(again.has_value());
  CPPCDC_FUZZ_CHECK(*again == *record);
  CPPCDC_FUZZ_CHECK(cppcdc::FileCheckpoint::encode(*again) == encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check(input);

  std::string body(input);
  if (!body.ends_with('\n')) body.push_back('\n');
  const auto digest = cppcdc::detail::sha256_hex(body);
  CPPCDC_FUZZ_CHECK(digest.has_value());
  std::string file = "cppcdc-checkpoint 1 sha256=" + *digest +
                     " length=" + std::to_string(body.size()) + "\n";
  file += body;
  check(file);
  return 0;
}
