#include "daemon/gunzip.h"

#include <zlib.h>

namespace abx::daemon {

struct Gunzip::State {
  z_stream stream{};
  bool ready = false;
};

Gunzip::Gunzip(uint64_t max_output) : state_(std::make_unique<State>()), max_output_(max_output) {
  // 16 + MAX_WBITS: expect a gzip header, not a raw zlib one.
  state_->ready = inflateInit2(&state_->stream, 16 + MAX_WBITS) == Z_OK;
  if (!state_->ready) error_ = "gzip: cannot initialise zlib";
}

Gunzip::~Gunzip() {
  if (state_->ready) inflateEnd(&state_->stream);
}

bool Gunzip::feed(std::string_view input, const std::function<bool(std::string_view)>& sink) {
  if (!error_.empty()) return false;
  z_stream& z = state_->stream;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  char out[64 * 1024];
  while (z.avail_in > 0 && !finished_) {
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = sizeof out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      error_ = std::string("gzip: corrupt data: ") + (z.msg ? z.msg : "inflate failed");
      return false;
    }
    const size_t produced = sizeof out - z.avail_out;
    output_ += produced;
    if (output_ > max_output_) {
      too_large_ = true;
      error_ = "gzip: decompresses to more than " + std::to_string(max_output_) + " bytes";
      return false;
    }
    if (produced > 0 && !sink(std::string_view(out, produced))) return false;
    if (rc == Z_STREAM_END) finished_ = true;
    if (rc == Z_BUF_ERROR && produced == 0) break;
  }
  return true;
}

}  // namespace abx::daemon
