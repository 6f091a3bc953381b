#include "templates/build_context.h"

#include <archive.h>
#include <archive_entry.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/fd_io.h"
#include "common/sha256.h"

namespace abx::templates::build_context {
namespace {

// Entries are re-rooted under the context dir (so their paths become
// absolute); relative_inside() has checked each name first.
constexpr int kExtractFlags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                              ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT;

using Reader = std::unique_ptr<archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<archive, decltype(&archive_write_free)>;

Error archive_error(archive* a, const std::string& what) {
  const char* text = archive_error_string(a);
  return Error{"build context", archive_errno(a) > 0 ? archive_errno(a) : EIO,
               what + (text ? std::string(": ") + text : "")};
}

// A tar member name that stays below the dir it is unpacked into.
bool relative_inside(const char* name) {
  if (name == nullptr || name[0] == '/') return false;
  for (const auto& part : fs::path(name))
    if (part == "..") return false;
  return true;
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

Status extract(const fs::path& tar, const fs::path& dir) {
  Reader in(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  archive_read_support_filter_all(in.get());
  if (archive_read_open_filename(in.get(), tar.c_str(), 1 << 16) != ARCHIVE_OK)
    return archive_error(in.get(), "open the uploaded context");
  Writer out(archive_write_disk_new(), archive_write_free);
  archive_write_disk_set_options(out.get(), kExtractFlags);
  archive_entry* entry = nullptr;
  for (int r; (r = archive_read_next_header(in.get(), &entry)) != ARCHIVE_EOF;) {
    if (r != ARCHIVE_OK) return archive_error(in.get(), "read the uploaded context");
    const char* name = archive_entry_pathname(entry);
    const char* link = archive_entry_hardlink(entry);
    if (!relative_inside(name) || (link && !relative_inside(link)))
      return Error{
          "build context", EPERM,
          std::string("the upload names a path outside the context: ") + (name ? name : "")};
    const std::string path = (dir / name).string();
    archive_entry_set_pathname(entry, path.c_str());
    if (link) archive_entry_set_hardlink(entry, (dir / link).c_str());
    if (archive_write_header(out.get(), entry) != ARCHIVE_OK)
      return archive_error(out.get(), "unpack " + path);
    const void* block;
    size_t size;
    la_int64_t offset;
    while ((r = archive_read_data_block(in.get(), &block, &size, &offset)) == ARCHIVE_OK)
      if (archive_write_data_block(out.get(), block, size, offset) != ARCHIVE_OK)
        return archive_error(out.get(), "unpack " + path);
    if (r != ARCHIVE_EOF) return archive_error(in.get(), "read the uploaded context");
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    return archive_error(out.get(), "unpack the context");
  return {};
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
  auto text = read_file(real);
  if (!text)
    return Error{"template build", ENOENT,
                 "no " + sandboxfile + " in the build context; give one with -f"};
  return text;
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
