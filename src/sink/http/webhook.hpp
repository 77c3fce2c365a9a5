#pragma once
// Standard Webhooks signing: the message id, the signature header, and the base64 the secrets
// and signatures are written in. Pure functions over OpenSSL; no I/O.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::http {

/// Standard base64 with padding.
std::string base64_encode(std::string_view bytes);
/// Standard base64; padding may be left out. Error (kind configuration) on any other character
/// or a length no base64 text has; the message never repeats the input.
Result<std::string> base64_decode(std::string_view text);

/// The key bytes of a signing secret: "whsec_" (optional) followed by base64. The error says
/// what is wrong without showing the secret.
Result<std::string> decode_signing_secret(std::string_view secret);

/// The id of a message with body `body`: "msg_" and 32 hex digits of its SHA-256. The same
/// bytes give the same id. The HTTP sink hashes the events' identities (append_event_identity),
/// not the body, whose `ts` differs after a restart.
std::string message_id(std::string_view body);

/// Appends what identifies `event` across restarts, as one line: its source and position
/// (offset; transaction id and index when it has them), operation, schema, table and key
/// columns (all of its row's columns when it has neither a key nor transaction metadata),
/// never the read time `ts`. A batch read again after a restart appends the same lines.
void append_event_identity(const Event& event, std::string& out);

/// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)).
std::string sign_v1(std::string_view key, std::string_view id, std::int64_t timestamp,
                    std::string_view body);

/// The webhook-signature header value: one sign_v1 per key, separated by spaces.
std::string signature_header(const std::vector<std::string>& keys, std::string_view id,
                             std::int64_t timestamp, std::string_view body);

}  // namespace cppcdc::http
