#include "common/dir_tar.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx {
namespace {

constexpr size_t kBlock = 512;
constexpr size_t kFlushAt = 64 * 1024;

// The ustar header's fields (POSIX.1-2001, pax): offset and width.
struct Field {
  size_t offset, width;
};
constexpr Field kName{0, 100}, kMode{100, 8}, kUid{108, 8}, kGid{116, 8}, kSize{124, 12},
    kMtime{136, 12}, kChecksum{148, 8}, kType{156, 1}, kLink{157, 100}, kMagic{257, 6},
    kVersion{263, 2};

using Header = std::array<char, kBlock>;

void put_text(Header& header, Field field, std::string_view text) {
  std::copy_n(text.begin(), std::min(text.size(), field.width), header.begin() + field.offset);
}

// An octal number with its NUL; false when it does not fit (a pax record says it then).
bool put_octal(Header& header, Field field, unsigned long long value) {
  char text[24];
  const int n =
      std::snprintf(text, sizeof text, "%0*llo", static_cast<int>(field.width - 1), value);
  if (n < 0 || static_cast<size_t>(n) >= field.width) return false;
  put_text(header, field, text);
  return true;
}

void put_checksum(Header& header) {
  std::fill_n(header.begin() + kChecksum.offset, kChecksum.width, ' ');
  unsigned sum = 0;
  for (char c : header) sum += static_cast<unsigned char>(c);
  char text[8];
  std::snprintf(text, sizeof text, "%06o", sum);
  std::copy_n(text, 7, header.begin() + kChecksum.offset);  // six digits, NUL; the space stays
}

// "LEN key=value\n", LEN counting itself.
std::string pax_record(std::string_view key, std::string_view value) {
  const size_t base = key.size() + value.size() + 3;
  size_t length = base + std::to_string(base).size();
  if (std::to_string(length).size() > std::to_string(base).size()) ++length;
  return std::to_string(length) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

struct Member {
  std::string name;
  char type = '0';  // '0' file, '2' symlink, '5' dir
  unsigned mode = 0644;
  unsigned long long uid = 0, gid = 0, size = 0, mtime = 0;
  std::string link;
};

class TarWriter {
 public:
  TarWriter(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Status header(const Member& member) {
    Header head{};
    std::string pax;
    put_text(head, kName, member.name);
    if (member.name.size() > kName.width) pax += pax_record("path", member.name);
    put_text(head, kLink, member.link);
    if (member.link.size() > kLink.width) pax += pax_record("linkpath", member.link);
    put_octal(head, kMode, member.mode & 07777);
    if (!put_octal(head, kUid, member.uid)) pax += pax_record("uid", std::to_string(member.uid));
    if (!put_octal(head, kGid, member.gid)) pax += pax_record("gid", std::to_string(member.gid));
    if (!put_octal(head, kSize, member.size))
      pax += pax_record("size", std::to_string(member.size));
    put_octal(head, kMtime, member.mtime);
    head[kType.offset] = member.type;
    put_text(head, kMagic, std::string_view("ustar", 6));
    put_text(head, kVersion, "00");
    if (!pax.empty()) {
      Member ext{.name = "PaxHeader", .type = 'x', .size = pax.size()};
      if (auto st = header(ext); !st) return st;
      if (auto st = data(pax); !st) return st;
      if (auto st = pad(pax.size()); !st) return st;
    }
    put_checksum(head);
    return data({head.data(), head.size()});
  }

  Status data(std::string_view bytes) {
    buffer_.append(bytes);
    return buffer_.size() >= kFlushAt ? flush() : Status{};
  }

  // Zeros up to the block after `size` bytes of data.
  Status pad(unsigned long long size) {
    return data(std::string((kBlock - size % kBlock) % kBlock, '\0'));
  }

  Status finish() {
    if (auto st = data(std::string(2 * kBlock, '\0')); !st) return st;
    if (auto st = flush(); !st) return st;
    if (::close(fd_.release()) != 0) return Error::from_errno("pack: close", path_);
    return {};
  }

 private:
  Status flush() {
    auto st = write_all(fd_.get(), buffer_, "pack: write", path_);
    buffer_.clear();
    return st;
  }

  UniqueFd fd_;
  std::string path_;
  std::string buffer_;
};

// A file's bytes as its header said: a file that grew is cut there, one that
// shrank is padded with zeros, so the archive stays readable.
Status add_file_data(TarWriter& tar, const fs::path& path, unsigned long long size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", path.string());
  unsigned long long left = size;
  auto st = read_to_end(
      fd.get(),
      [&](std::string_view piece) -> Status {
        piece = piece.substr(0, std::min<unsigned long long>(piece.size(), left));
        left -= piece.size();
        return tar.data(piece);
      },
      path.string());
  if (!st) return st;
  if (left > 0) {
    if (auto filled = tar.data(std::string(left, '\0')); !filled) return filled;
  }
  return tar.pad(size);
}

Status add_path(TarWriter& tar, const fs::path& path, const std::string& name) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Error::from_errno("stat", path.string());
  Member member{.name = name,
                .mode = st.st_mode,
                .uid = st.st_uid,
                .gid = st.st_gid,
                .mtime = st.st_mtime > 0 ? static_cast<unsigned long long>(st.st_mtime) : 0};
  if (S_ISREG(st.st_mode)) {
    member.size = static_cast<unsigned long long>(st.st_size);
  } else if (S_ISDIR(st.st_mode)) {
    member.type = '5';
    member.name += "/";
  } else if (S_ISLNK(st.st_mode)) {
    member.type = '2';
    std::error_code ec;
    member.link = fs::read_symlink(path, ec).string();
    if (ec) return Error{"read link", ec.value(), path.string()};
  } else {
    return {};  // sockets, fifos, devices: nothing a build or a layout needs
  }
  if (auto written = tar.header(member); !written) return written;
  return S_ISREG(st.st_mode) ? add_file_data(tar, path, member.size) : Status{};
}

Status add_extra(TarWriter& tar, const TarExtra& extra) {
  if (auto st = tar.header({.name = extra.name, .size = extra.content.size()}); !st) return st;
  if (auto st = tar.data(extra.content); !st) return st;
  return tar.pad(extra.content.size());
}

}  // namespace

Status write_dir_tar(const fs::path& dir, const std::vector<TarExtra>& extras,
                     const fs::path& out) {
  UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return Error::from_errno("pack: open", out.string());
  TarWriter tar(std::move(fd), out.string());
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = fs::relative(it->path(), dir).string();
    if (auto st = add_path(tar, it->path(), name); !st) return st;
  }
  if (ec) return Error{"read", ec.value(), dir.string()};
  for (const auto& extra : extras)
    if (auto st = add_extra(tar, extra); !st) return st;
  return tar.finish();
}

}  // namespace abx
