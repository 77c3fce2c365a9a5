#pragma once
// Encoders (codecs): how a sink turns events into bytes. A sink owns one encoder and asks it
// for one record per event; the sink frames records (the file and stdout sinks put a newline
// after each, a message sink sends each as one message).
//
// Built-in: the JSON envelope (make_json_encoder), byte for byte what Event::to_json() writes.
// Further codecs (Avro, Protobuf, CloudEvents, ...) implement the same interface.
//
// Threading: an encoder is used by one thread at a time (its sink's).

#include <memory>
#include <span>
#include <string>

#include "cppcdc/buffer.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

class Encoder {
 public:
  virtual ~Encoder() = default;
  /// Name for logs and config ("json").
  virtual std::string name() const = 0;
  /// Appends the record for `event` to `out`, without any framing. Error kind invalid_data
  /// when the event cannot be represented (the sink then fails the batch; nothing is
  /// acknowledged).
  virtual Status encode(const Event& event, ByteBuffer& out) = 0;
};

/// The JSON envelope, one object per event, exactly as Event::to_json() writes it.
std::unique_ptr<Encoder> make_json_encoder();

/// Appends each event's record followed by a newline to `out` (the framing of the line-based
/// sinks). On an encoding error nothing of this batch stays in `out`, and the error names the
/// event's table and the encoder.
Status encode_lines(Encoder& encoder, std::span<const Event> events, ByteBuffer& out);

}  // namespace cppcdc
