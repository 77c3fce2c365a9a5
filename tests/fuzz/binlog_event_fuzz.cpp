// libFuzzer target for the binlog event decoder (source/mysql/binlog_event.cpp). The input is
// one event; it is decoded as it is and with its size field made to match, by decoders in
// three states (MariaDB after a checksummed FORMAT_DESCRIPTION with verification off, MariaDB
// with no checksum, MySQL), and as a TRANSACTION_PAYLOAD's inner event; every inner event of
// a payload that decodes is decoded too. Any input must decode or yield an invalid_data error
// naming the event; a table map's per-column vectors have one entry per column; a rows
// event's bitmaps cover its column count.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "source/mysql/binlog_event.hpp"

namespace {

using cppcdc::mysql::BinlogEvent;
using cppcdc::mysql::EventDecoder;
using cppcdc::mysql::Flavor;

// A FORMAT_DESCRIPTION of a MariaDB 10.11 (or MySQL 8) binlog with CRC32 declared.
std::vector<std::uint8_t> format_description(const char* version) {
  std::vector<std::uint8_t> ev(19, 0);
  ev[4] = 15;
  ev.push_back(4);
  ev.push_back(0);
  std::string v(version);
  v.resize(50, '\0');
  ev.insert(ev.end(), v.begin(), v.end());
  ev.insert(ev.end(), {0, 0, 0, 0, 19});
  std::vector<std::uint8_t> lens(171, 0);
  lens[1] = 13;
  lens[3] = 8;
  lens[18] = 8;
  for (int t : {23, 24, 25, 169, 170, 171}) lens[t - 1] = 8;
  for (int t : {30, 31, 32, 166, 167, 168}) lens[t - 1] = 10;
  lens[32] = 42;
  lens[33] = 42;
  lens[161] = 19;
  lens[162] = 4;
  lens[160] = 4;
  lens[164] = 13;
  ev.insert(ev.end(), lens.begin(), lens.end());
  ev.push_back(1);                    // CRC32
  ev.insert(ev.end(), {0, 0, 0, 0});  // (not verified)
  const auto size = static_cast<std::uint32_t>(ev.size());
  for (int i = 0; i < 4; ++i) ev[9 + i] = static_cast<std::uint8_t>(size >> (8 * i));
  return ev;
}

void check(const cppcdc::Result<BinlogEvent>& ev) {
  if (!ev) {
    CPPCDC_FUZZ_CHECK(ev.error().kind() == cppcdc::ErrorKind::kInvalidData);
    CPPCDC_FUZZ_CHECK(!ev.error().message().empty());
    return;
  }
  if (ev->table_map) {
    const auto& t = *ev->table_map;
    CPPCDC_FUZZ_CHECK(t.column_meta.size() == t.column_types.size());
    CPPCDC_FUZZ_CHECK(t.nullable.bits == t.column_types.size());
  }
  if (ev->rows) {
    const auto& r = *ev->rows;
    CPPCDC_FUZZ_CHECK(r.present.bits == r.column_count);
    CPPCDC_FUZZ_CHECK(r.present.bytes.size() == (r.column_count + 7) / 8);
    (void)r.present.count();
  }
  if (ev->gtid) (void)ev->gtid->text();
}

void run(EventDecoder& d, std::span<const std::uint8_t> bytes) {
  auto ev = d.decode(bytes);
  check(ev);
  if (ev) {
    for (const auto inner : ev->payload_events) check(d.decode_payload_event(inner));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto maria_fd = format_description("10.11.19-MariaDB-0+deb12u1");
  static const auto mysql_fd = format_description("8.0.36");
  const std::span<const std::uint8_t> input(data, size);
  std::vector<std::uint8_t> sized(data, data + size);
  if (size >= 19) {
    for (int i = 0; i < 4; ++i) sized[9 + i] = static_cast<std::uint8_t>(size >> (8 * i));
  }

  EventDecoder maria(Flavor::kMariaDb);
  maria.set_verify_checksum(false);
  CPPCDC_FUZZ_CHECK(maria.decode(maria_fd).has_value());
  run(maria, input);
  run(maria, sized);

  EventDecoder plain(Flavor::kMariaDb);
  run(plain, sized);
  check(plain.decode_payload_event(sized));

  EventDecoder mysql(Flavor::kMySql);
  mysql.set_verify_checksum(false);
  CPPCDC_FUZZ_CHECK(mysql.decode(mysql_fd).has_value());
  run(mysql, sized);
  return 0;
}
