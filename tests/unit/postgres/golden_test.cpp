// Golden tests: frames recorded from a real PostgreSQL 15 (tests/golden/postgres/*.frames, one
// hex CopyData payload per line, see record_basic.sh there) are decoded and rendered one JSON
// line per frame, then compared with the matching *.expected file line by line.
// Set CPPCDC_UPDATE_GOLDEN=1 to rewrite the expected files instead, then review the diff.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "source/postgres/pgoutput.hpp"

namespace cppcdc::pg {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(CPPCDC_GOLDEN_DIR) / "postgres";

std::optional<std::vector<std::uint8_t>> parse_hex(const std::string& line) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (line.size() % 2 != 0) return std::nullopt;
  std::vector<std::uint8_t> out;
  out.reserve(line.size() / 2);
  for (std::size_t i = 0; i < line.size(); i += 2) {
    const int hi = nibble(line[i]);
    const int lo = nibble(line[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
  }
  return out;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back(' ');
      continue;
    }
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// One JSON line per frame; a decoding failure is rendered too, so it shows up in the diff.
std::string render(const std::vector<std::uint8_t>& bytes, std::set<std::string>* types) {
  auto frame = decode_copy_frame(bytes);
  if (!frame) return R"({"error":)" + json_quote(frame.error().report()) + "}";
  if (const auto* k = std::get_if<PrimaryKeepalive>(&*frame)) {
    return R"({"frame":"k","wal_end":")" + k->wal_end.to_string() + R"(","reply_requested":)" +
           (k->reply_requested ? "true" : "false") + "}";
  }
  const auto& x = std::get<XLogData>(*frame);
  std::string head = R"({"frame":"w","data_start":")" + x.data_start.to_string() +
                     R"(","wal_end":")" + x.wal_end.to_string() + R"(",)";
  auto message = decode_pgoutput(x.payload);
  if (!message) return head + R"("error":)" + json_quote(message.error().report()) + "}";
  const std::string text = describe(*message);
  if (types != nullptr) {
    const auto at = text.find(R"("type":")");
    if (at != std::string::npos) {
      types->insert(text.substr(at + 8, text.find('"', at + 8) - (at + 8)));
    }
  }
  return head + R"("message":)" + text + "}";
}

struct Rendered {
  std::vector<std::string> lines;
  std::set<std::string> types;
  std::string problem;  // non-empty when the frames file itself is malformed
};

Rendered render_file(const fs::path& frames) {
  Rendered out;
  std::ifstream in(frames);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto bytes = parse_hex(line);
    if (!bytes) {
      out.problem = frames.string() + ":" + std::to_string(number) + " is not hex";
      return out;
    }
    out.lines.push_back(render(*bytes, &out.types));
  }
  return out;
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<fs::path> frame_files() {
  std::vector<fs::path> files;
  if (!fs::is_directory(kGoldenDir)) return files;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    if (entry.path().extension() == ".frames") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool updating() {
  const char* v = std::getenv("CPPCDC_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

TEST(PgoutputGolden, RecordedFramesDecodeToTheExpectedLines) {
  const auto files = frame_files();
  ASSERT_FALSE(files.empty()) << "no *.frames under " << kGoldenDir;
  for (const fs::path& frames : files) {
    SCOPED_TRACE(frames.string());
    const Rendered got = render_file(frames);
    ASSERT_TRUE(got.problem.empty()) << got.problem;
    fs::path expected_path = frames;
    expected_path.replace_extension(".expected");
    if (updating()) {
      std::ofstream out(expected_path, std::ios::trunc);
      for (const auto& l : got.lines) out << l << '\n';
      ASSERT_TRUE(out.good()) << "cannot write " << expected_path;
      continue;
    }
    ASSERT_TRUE(fs::exists(expected_path))
        << expected_path << " is missing; run with CPPCDC_UPDATE_GOLDEN=1 to create it";
    const auto want = read_lines(expected_path);
    const std::size_t common = std::min(want.size(), got.lines.size());
    for (std::size_t i = 0; i < common; ++i) {
      EXPECT_EQ(got.lines[i], want[i]) << "line " << (i + 1);
    }
    EXPECT_EQ(got.lines.size(), want.size()) << "line count differs";
  }
}

TEST(PgoutputGolden, RecordedFramesDecodeWithoutErrors) {
  for (const fs::path& frames : frame_files()) {
    const Rendered got = render_file(frames);
    for (std::size_t i = 0; i < got.lines.size(); ++i) {
      EXPECT_EQ(got.lines[i].find(R"("error":)"), std::string::npos)
          << frames << " line " << (i + 1) << ": " << got.lines[i];
    }
  }
}

TEST(PgoutputGolden, BasicRecordingCoversEveryProtocolV1MessageType) {
  const Rendered got = render_file(kGoldenDir / "basic.frames");
  ASSERT_TRUE(got.problem.empty()) << got.problem;
  for (const char* type : {"begin", "commit", "origin", "relation", "type", "insert", "update",
                           "delete", "truncate", "message"}) {
    EXPECT_TRUE(got.types.count(type) == 1) << "basic.frames has no " << type << " message";
  }
}

}  // namespace
}  // namespace cppcdc::pg
