#pragma once
// The chunked transfer coding of a request body (RFC 9112 7.1), checked byte by byte as
// the connection stream hands the body to cpp-httplib 0.11's own chunked reader. httplib
// fails on any trailer field ("0\r\nX: y\r\n\r\n" is a 400) and is lenient where a request
// smuggler needs it: a chunk not followed by CRLF ends the body there (the bytes after it
// are parsed as the next request) and strtoul reads " 5", "+5" or "0x5" as a size. So:
//  - chunk sizes are 1 to 15 hex digits, then optional chunk extensions (";name=value",
//    not interpreted), then CRLF;
//  - each chunk's data is followed by exactly CRLF;
//  - trailer fields are dropped (RFC 9112 7.1.2: a recipient may discard them; at most
//    kMaxTrailerBytes, each line ending in CRLF, no NUL or bare CR): httplib sees the
//    last chunk followed by the blank line alone.
// Anything else is Bad: the body is malformed and the connection cannot be read on.
#include <cstddef>
#include <cstdint>

namespace llmport::serve {

class ChunkedFraming {
 public:
  /// The trailer section's bytes together (as the header section's limit).
  static constexpr std::size_t kMaxTrailerBytes = 64 * 1024;

  enum class Byte {
    Pass,  ///< hand this byte on to httplib
    Drop,  ///< a trailer field's byte: consumed, not handed on
    Bad,   ///< not the chunked coding: the body is malformed
  };

  /// Bytes of chunk data that come next (handed on as they are, through took_data); 0 when
  /// the next byte is framing (next()).
  std::size_t data_left() const { return state_ == State::Data ? data_left_ : 0; }
  void took_data(std::size_t n);

  /// One framing byte (data_left() == 0).
  Byte next(char c);

  /// The body's last byte (the blank line after the last chunk) has been handed on.
  bool done() const { return state_ == State::Done; }

 private:
  enum class State { Size, Ext, SizeLf, Data, DataCr, DataLf, TrailerStart, TrailerLine, TrailerLf, EndLf, Done, Bad };
  Byte size_byte(char c);
  Byte trailer_byte(char c);

  State state_ = State::Size;
  std::uint64_t size_ = 0;
  int digits_ = 0;
  std::size_t data_left_ = 0;
  std::size_t trailer_bytes_ = 0;
};

}  // namespace llmport::serve
