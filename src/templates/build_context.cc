#include "templates/build_context.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/fd_io.h"
#include "common/sha256.h"
#include "common/unique_fd.h"
#include "templates/archive_io.h"

namespace abx::templates::build_context {
namespace {

// The errors of extract() in a build's words.
Error extract_failed(archive_io::Stage stage, const std::string& text, int errnum,
                     const std::string& name) {
  using archive_io::Stage;
  switch (stage) {
    case Stage::kFirstHeader:
    case Stage::kHeader:
    case Stage::kData:
      return Error{"build context", errnum, "read the uploaded context: " + text};
    case Stage::kClose:
      return Error{"build context", errnum, "unpack the context: " + text};
    case Stage::kWrite:
      break;
  }
  // The member as the tar names it: the dir is the daemon's business.
  return Error{"build context", errnum, "unpack '" + archive_io::shown_name(name) + "': " + text};
}

// A Sandboxfile is text a person wrote; more than this is no Sandboxfile.
constexpr off_t kMaxSandboxfileBytes = 1 << 20;

Error no_sandboxfile(const std::string& name) {
  return Error{"template build", ENOENT, "no " + name + " in the build context; give one with -f"};
}

// The context is the caller's: its Sandboxfile may be a FIFO (O_NONBLOCK, so
// the open cannot block; then refused as no regular file) or a sparse file of
// terabytes that a few tar bytes describe (refused by its size, never read).
Result<std::string> read_sandboxfile(const fs::path& path, const std::string& name) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return no_sandboxfile(name);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Error{"template build", EINVAL, name + " in the build context is not a regular file"};
  if (st.st_size > kMaxSandboxfileBytes)
    return Error{"template build", EFBIG,
                 name + " in the build context is " + std::to_string(st.st_size) +
                     " bytes, more than a Sandboxfile may be (1 MiB)"};
  std::string text;
  const Status read = read_to_end(
      fd.get(),
      [&](std::string_view piece) {
        text += piece;
        return Status{};
      },
      path.string());
  if (!read) return read.error();
  return text;
}

// No file of the context can be larger than the disk it is unpacked on has free
// (0, no bound, if that cannot be told).
uint64_t free_bytes(const fs::path& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return 0;
  return std::max<uint64_t>(uint64_t{vfs.f_bavail} * vfs.f_frsize, 1);
}

bool inside(const fs::path& root, const fs::path& path) {
  const std::string r = root.native(), p = path.native();
  return p == r || (p.starts_with(r) && p[r.size()] == '/');
}

Status digest_entry(const fs::path& context, const fs::path& path, Sha256& sum) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Error::from_errno("stat", path.string());
  sum.update(fs::relative(path, context).native()).update("\n");
  sum.update(std::to_string(st.st_mode)).update("\n");
  if (S_ISLNK(st.st_mode)) {
    sum.update(fs::read_symlink(path).native()).update("\n");
  } else if (S_ISREG(st.st_mode)) {
    auto content = sha256_file(path);
    if (!content) return content.error();
    sum.update(*content).update("\n");
  }
  return {};
}

}  // namespace

Status extract(const fs::path& tar, const fs::path& dir, bool keep_set_id) {
  archive_io::Reader in = archive_io::tar_reader();
  if (!archive_io::open_file(in.get(), tar))
    return archive_io::error("build context", in.get(), "open the uploaded context");
  archive_io::ExtractOptions options;
  options.member.keep_set_id = keep_set_id;
  options.member.max_file_bytes = free_bytes(dir);
  options.failed = [&](archive_io::Stage stage, const std::string& text, int errnum,
                       const std::string& name) {
    return extract_failed(stage, text, errnum, name);
  };
  options.outside = [](const std::string& name, const std::string&) {
    return Error{"build context", EPERM,
                 "the upload names a path outside the context: " + archive_io::shown_name(name)};
  };
  return archive_io::extract(in.get(), dir, options);
}

Result<std::string> unpack(const fs::path& tar, const fs::path& dir,
                           const std::string& sandboxfile) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"mkdir", ec.value(), dir.string()};
  if (auto st = extract(tar, dir); !st) return st.error();
  fs::path file = dir / sandboxfile;
  if (sandboxfile == "Sandboxfile" && !fs::exists(file, ec)) file = dir / "Dockerfile";
  const fs::path root = fs::canonical(dir, ec);
  const fs::path real = fs::weakly_canonical(file, ec);
  if (ec || !inside(root, real.parent_path()))
    return Error{"template build", EINVAL, "the Sandboxfile must be inside the build context"};
  return read_sandboxfile(real, sandboxfile);
}

Result<std::vector<fs::path>> expand(const fs::path& context, const std::string& source) {
  std::error_code ec;
  const fs::path root = fs::canonical(context, ec);
  if (ec) return Error{"build context", ec.value(), context.string()};
  glob_t found{};
  const std::string pattern = (root / source).string();
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT | GLOB_PERIOD, nullptr, &found);
  std::vector<fs::path> paths;
  for (size_t i = 0; rc == 0 && i < found.gl_pathc; ++i) paths.emplace_back(found.gl_pathv[i]);
  ::globfree(&found);
  if (paths.empty())
    return Error{"COPY", ENOENT, "no file matches '" + source + "' in the build context"};
  std::sort(paths.begin(), paths.end());
  for (auto& path : paths) {
    // The entry itself may be a symlink (copied as one); its parents may not lead out.
    const fs::path parent = fs::canonical(path.parent_path(), ec);
    if (ec || !inside(root, parent))
      return Error{"COPY", EPERM, "'" + source + "' leads outside the build context"};
    path = parent / path.filename();
  }
  return paths;
}

Result<fs::path> file_inside(const fs::path& context, const std::string& name) {
  std::error_code ec;
  const fs::path root = fs::canonical(context, ec);
  if (ec) return Error{"build context", ec.value(), context.string()};
  const fs::path real = fs::canonical(root / fs::path(name).relative_path(), ec);
  if (ec) return Error{"build context", ec.value(), "no '" + name + "' in the build context"};
  if (!inside(root, real) || real == root)
    return Error{"build context", EPERM, "'" + name + "' leads outside the build context"};
  return real;
}

Result<std::string> digest(const fs::path& context, const std::vector<fs::path>& paths) {
  Sha256 sum;
  for (const auto& path : paths) {
    if (auto st = digest_entry(context, path, sum); !st) return st.error();
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(path, ec))) continue;
    std::vector<fs::path> below;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      below.push_back(it->path());
    if (ec) return Error{"read build context", ec.value(), path.string()};
    std::sort(below.begin(), below.end());
    for (const auto& entry : below)
      if (auto st = digest_entry(context, entry, sum); !st) return st.error();
  }
  return sum.hex();
}

}  // namespace abx::templates::build_context
