// Replays fuzz inputs through a fuzz target without libFuzzer, for the normal (and ASan)
// build's test suite: the empty input first, then every regular file under the directories
// given as arguments (README files aside), in path order, each passed once to
// LLVMFuzzerTestOneInput in a buffer of exactly its size. A property the target checks, a
// crash or a sanitizer report ends the process abnormally and fails the test. Exit status 2:
// a directory is missing, or none of them holds an input.
//
//   <target>_fuzz_replay DIR...

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void run(const std::vector<char>& bytes) {
  // new[] of zero bytes still gives a pointer (libFuzzer never passes null).
  const std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[bytes.size()]);
  std::copy(bytes.begin(), bytes.end(), copy.get());
  LLVMFuzzerTestOneInput(copy.get(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path dir(argv[i]);
    if (!fs::is_directory(dir)) {
      std::fprintf(stderr, "replay: %s is not a directory\n", argv[i]);
      return 2;
    }
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      if (entry.path().filename().string().starts_with("README")) continue;
      files.push_back(entry.path());
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs under the directories given\n");
    return 2;
  }
  std::sort(files.begin(), files.end());

  run({});
  for (const auto& file : files) {
    std::printf("replay: %s\n", file.c_str());
    std::fflush(stdout);
    std::ifstream in(file, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
      return 2;
    }
    run(bytes);
  }
  std::printf("replay: %zu inputs, no failure\n", files.size());
  return 0;
}
