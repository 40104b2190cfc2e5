// Fuzz target: the bytes `llmport serve` checks itself before httplib parses a request
// (src/serve/http_connection.hpp, src/serve/chunked_framing.hpp): a raw header section
// (header_syntax_error, raw_header_values) and a chunked body through ChunkedFraming.
// Findings besides crashes and hangs (std::abort): the framing hands on more bytes than it
// was given, or what it hands on for a complete body is not itself a complete chunked body
// without trailers (a second pass over it must pass every byte and end at its last).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_util.hpp"
#include "serve/chunked_framing.hpp"
#include "serve/http_connection.hpp"

namespace {

using llmport::serve::ChunkedFraming;

// The bytes `framing` hands on from `in`, and whether it ended (done) before the input did.
struct Filtered {
  std::string out;
  bool done = false, bad = false;
  std::size_t dropped = 0;
};

Filtered filter(const std::string& in) {
  ChunkedFraming f;
  Filtered r;
  std::size_t i = 0;
  while (i < in.size() && !f.done()) {
    if (const std::size_t data = f.data_left()) {
      const std::size_t k = data < in.size() - i ? data : in.size() - i;
      r.out.append(in, i, k);
      f.took_data(k);
      i += k;
      continue;
    }
    const ChunkedFraming::Byte b = f.next(in[i]);
    if (b == ChunkedFraming::Byte::Bad) {
      r.bad = true;
      return r;
    }
    if (b == ChunkedFraming::Byte::Pass) r.out += in[i];
    else ++r.dropped;
    ++i;
  }
  r.done = f.done();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(llmport::fuzz::as_text(data, size));
  (void)llmport::serve::header_syntax_error(in);
  (void)llmport::serve::raw_header_values(in, "Host");
  const Filtered once = filter(in);
  if (once.out.size() + once.dropped > in.size()) std::abort();
  if (once.done) {
    const Filtered twice = filter(once.out);
    if (!twice.done || twice.bad || twice.dropped != 0 || twice.out != once.out) std::abort();
  }
  return 0;
}
