#pragma once
// Pieces of the envelope's JSON form that other codecs share (src/core/event.cpp), so that every
// codec writes a row image the same way and builds a before-image by the same rule.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/buffer.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::detail {

/// Appends `row` as the envelope writes an image: {"col":"text","n":null,"j":{...}}.
void write_row_json(ByteBuffer& b, const Row& row);

/// Parses a row image as write_row_json writes it: strings are text, null is SQL NULL, any
/// other value is a json column whose text is kept as written. Error kind invalid_data naming
/// `field`.
Result<Row> parse_row_json(std::string_view text, const char* field);

/// The text of member `key` of the JSON object `object_text` exactly as written (numbers keep
/// every digit, which a parsed DOM does not); the last of repeated keys, as boost::json reads
/// them. nullopt when absent. `object_text` must be text boost::json accepted as JSON.
std::optional<std::string_view> raw_json_member(std::string_view object_text, std::string_view key);

/// The one constructor of a before-image from an envelope's three fields (before,
/// before_is_key_only, before_unavailable_columns); every decoder uses it, so a contradictory
/// envelope is refused the same way whichever codec carried it. Error kind invalid_data.
Result<BeforeImage> make_before_image(std::optional<Row> row, bool key_only,
                                      std::vector<std::string> unavailable);

}  // namespace cppcdc::detail
