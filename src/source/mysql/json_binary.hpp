#pragma once
// MySQL's binary JSON (the JSON column type, 245, in row images) to JSON text printed the way
// MySQL prints it: `{"a": 1, "b": [1, 2.5, "x"], "c": null}` (", " and ": " separators,
// object keys in their stored order, doubles in the server's shortest form with ".0" added
// to integral ones, opaque DECIMALs as numbers, opaque DATE/TIME/DATETIME/TIMESTAMP as quoted
// strings with 6 fractional digits, other opaque values as "base64:typeN:...").
//
// Pure function on bytes: small (2-byte offsets) and large (4-byte offsets) layouts; every
// offset is checked against its container; nesting deeper than 100 levels is an error.
// Errors: Error::invalid_data naming what is wrong and the byte offset in the value.

#include <cstdint>
#include <span>
#include <string>

#include "cppcdc/result.hpp"

namespace cppcdc::mysql {

/// Appends the JSON text of `bytes` (one binary JSON document) to `out`. An empty document
/// (0 bytes, which MySQL logs for a JSON NULL-like empty value) appends "null".
Status json_binary_to_text(std::span<const std::uint8_t> bytes, std::string& out);

namespace detail {
/// NEWDECIMAL binary value of exactly the size its precision and scale give, as text
/// ("-1234.5600"). False when precision/scale are impossible or `size` does not match.
/// Defined in row_decoder.cpp.
bool decode_decimal(const std::uint8_t* p, std::size_t size, int precision, int scale,
                    std::string& out);
/// The server's my_gcvt() layout of a double for `width` characters (the text protocol uses
/// an unlimited width, MySQL's JSON printer 23). Defined in row_decoder.cpp.
void append_double_gcvt(std::string& out, double v, int width);
}  // namespace detail

}  // namespace cppcdc::mysql
