#include "serve/chunked_framing.hpp"

namespace llmport::serve {

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

void ChunkedFraming::took_data(std::size_t n) {
  data_left_ -= n;
  if (data_left_ == 0) state_ = State::DataCr;
}

ChunkedFraming::Byte ChunkedFraming::next(char c) {
  switch (state_) {
    case State::Size:
    case State::Ext:
    case State::SizeLf:
      return size_byte(c);
    case State::DataCr:
      if (c != '\r') break;
      state_ = State::DataLf;
      return Byte::Pass;
    case State::DataLf:
      if (c != '\n') break;
      state_ = State::Size;
      size_ = 0;
      digits_ = 0;
      return Byte::Pass;
    case State::TrailerStart:
    case State::TrailerLine:
    case State::TrailerLf:
      return trailer_byte(c);
    case State::EndLf:
      if (c != '\n') break;
      state_ = State::Done;
      return Byte::Pass;
    case State::Data:
    case State::Done:
    case State::Bad:
      break;
  }
  state_ = State::Bad;
  return Byte::Bad;
}

// chunk-size [ chunk-ext ] CRLF. 15 hex digits at most: the size fits 60 bits.
ChunkedFraming::Byte ChunkedFraming::size_byte(char c) {
  if (state_ == State::Size && hex_value(c) >= 0 && digits_ < 15) {
    size_ = size_ * 16 + static_cast<std::uint64_t>(hex_value(c));
    ++digits_;
    return Byte::Pass;
  }
  if (state_ != State::SizeLf && digits_ > 0 && c == '\r') {
    state_ = State::SizeLf;
    return Byte::Pass;
  }
  if (state_ == State::Size && digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
    state_ = State::Ext;
    return Byte::Pass;
  }
  if (state_ == State::Ext && c != '\n' && c != '\0') return Byte::Pass;
  if (state_ == State::SizeLf && c == '\n') {
    if (size_ == 0) {
      state_ = State::TrailerStart;
    } else {
      state_ = State::Data;
      data_left_ = static_cast<std::size_t>(size_);
    }
    return Byte::Pass;
  }
  state_ = State::Bad;
  return Byte::Bad;
}

// *( field-line CRLF ) CRLF: the field lines dropped, the final CRLF handed on.
ChunkedFraming::Byte ChunkedFraming::trailer_byte(char c) {
  if (++trailer_bytes_ > kMaxTrailerBytes || c == '\0') {
    state_ = State::Bad;
    return Byte::Bad;
  }
  if (state_ == State::TrailerStart && c == '\r') {
    state_ = State::EndLf;
    return Byte::Pass;
  }
  if (state_ == State::TrailerLf) {
    if (c != '\n') {
      state_ = State::Bad;
      return Byte::Bad;
    }
    state_ = State::TrailerStart;
    return Byte::Drop;
  }
  if (c == '\n') {  // a bare LF
    state_ = State::Bad;
    return Byte::Bad;
  }
  state_ = c == '\r' ? State::TrailerLf : State::TrailerLine;
  return Byte::Drop;
}

}  // namespace llmport::serve
