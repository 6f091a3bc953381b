#include "daemon/gzip.h"

#include <zlib.h>

#include <array>
#include <cctype>
#include <stdexcept>

namespace abx::daemon {
namespace {

// Raw deflate (negative window bits): the gzip header and trailer are ours,
// so that zeros() can put blocks of its own between deflate's.
constexpr int kRawDeflate = -MAX_WBITS;
// RFC 1952: magic, deflate, no flags, no mtime, no extra flags, OS Unix.
constexpr std::string_view kHeader("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
// zeros() builds any run from blocks of 2^0 .. 2^kLargestZeroBlock zeros.
constexpr int kLargestZeroBlock = 20;

// The raw deflate of `count` zeros on its own, ending on a byte boundary
// and not final (Z_SYNC_FLUSH): its matches reach back only into itself,
// so it can be put anywhere between blocks of another stream.
std::string deflate_zeros(size_t count) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, kRawDeflate, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: cannot initialise zlib");
  const std::string input(count, '\0');
  std::string out(deflateBound(&z, count) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_SYNC_FLUSH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const std::array<std::string, kLargestZeroBlock + 1>& zero_blocks() {
  static const auto blocks = [] {
    std::array<std::string, kLargestZeroBlock + 1> out;
    for (int k = 0; k <= kLargestZeroBlock; ++k)
      out[static_cast<size_t>(k)] = deflate_zeros(size_t{1} << k);
    return out;
  }();
  return blocks;
}

// CRC-32 of `count` zero bytes, by doubling: O(log count) combines.
uLong crc_of_zeros(uint64_t count) {
  uLong crc = crc32(0L, Z_NULL, 0);
  uLong power_crc = crc32(0L, reinterpret_cast<const Bytef*>("\0"), 1);  // 2^0 zeros
  uint64_t power = 1;
  for (; count != 0; count >>= 1) {
    if (count & 1) crc = crc32_combine(crc, power_crc, static_cast<z_off_t>(power));
    power_crc = crc32_combine(power_crc, power_crc, static_cast<z_off_t>(power));
    power <<= 1;
  }
  return crc;
}

void append_le32(std::string& out, uLong value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

struct Gzip::State {
  z_stream stream{};
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t size = 0;
  bool header_sent = false;
};

Gzip::Gzip() : state_(std::make_unique<State>()) {
  if (deflateInit2(&state_->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kRawDeflate, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("gzip: cannot initialise zlib");
  }
}

Gzip::~Gzip() { deflateEnd(&state_->stream); }

std::string Gzip::run(std::string_view input, int flush) {
  State& s = *state_;
  z_stream& z = s.stream;
  std::string out;
  if (!s.header_sent) {
    out = kHeader;
    s.header_sent = true;
  }
  if (!input.empty())  // crc32() of a null buffer is 0, not the CRC so far
    s.crc =
        crc32(s.crc, reinterpret_cast<const Bytef*>(input.data()), static_cast<uInt>(input.size()));
  s.size += input.size();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
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

std::string Gzip::zeros(uint64_t count) {
  // A full flush ends deflate's pending block on a byte boundary and makes
  // it forget its history: its later matches never reach back over the
  // blocks put in here, which it does not know of.
  std::string out = run({}, Z_FULL_FLUSH);
  const auto& blocks = zero_blocks();
  for (uint64_t whole = count >> kLargestZeroBlock; whole > 0; --whole)
    out += blocks[kLargestZeroBlock];
  for (int k = kLargestZeroBlock - 1; k >= 0; --k)
    if ((count >> k) & 1) out += blocks[static_cast<size_t>(k)];
  State& s = *state_;
  s.crc = crc32_combine(s.crc, crc_of_zeros(count), static_cast<z_off_t>(count));
  s.size += count;
  return out;
}

std::string Gzip::finish() {
  std::string out = run({}, Z_FINISH);
  append_le32(out, state_->crc);
  append_le32(out, static_cast<uLong>(state_->size & 0xffffffffu));  // ISIZE: the size mod 2^32
  return out;
}

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
