#include "daemon/gzip.h"

#include <zlib.h>

#include <cctype>
#include <stdexcept>

namespace abx::daemon {

struct Gzip::State {
  z_stream stream{};
};

Gzip::Gzip() : state_(std::make_unique<State>()) {
  // 16 + MAX_WBITS: write a gzip header, not a raw zlib one.
  if (deflateInit2(&state_->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("gzip: cannot initialise zlib");
  }
}

Gzip::~Gzip() { deflateEnd(&state_->stream); }

std::string Gzip::run(std::string_view input, int flush) {
  z_stream& z = state_->stream;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  std::string out;
  char buffer[64 * 1024];
  do {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    deflate(&z, flush);
    out.append(buffer, sizeof buffer - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

std::string Gzip::feed(std::string_view input) { return run(input, Z_NO_FLUSH); }

std::string Gzip::finish() { return run({}, Z_FINISH); }

bool wants_gzip(std::string_view accept_encoding) {
  bool gzip = false;
  size_t start = 0;
  while (start < accept_encoding.size()) {
    size_t end = accept_encoding.find(',', start);
    if (end == std::string_view::npos) end = accept_encoding.size();
    std::string item;
    for (char c : accept_encoding.substr(start, end - start)) {
      if (c != ' ') item += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    start = end + 1;
    const size_t semi = item.find(';');
    if (item.empty() || (semi != std::string::npos && item.substr(semi) == ";q=0")) continue;
    if (item.substr(0, semi) != "gzip") return false;
    gzip = true;
  }
  return gzip;
}

}  // namespace abx::daemon
