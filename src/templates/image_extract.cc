#include "templates/image_extract.h"

#include <cerrno>
#include <string>
#include <system_error>
#include <vector>

#include "templates/archive_io.h"
#include "templates/image_dir.h"

namespace abx::templates::image {
namespace {

using archive_io::Stage;

// Only what an image archive holds is written: files, dirs, symlinks (old docker save links
// repeated layers). No owners or set-id bits: the scratch copy is only read back by this code.
MemberOptions scratch_options() { return MemberOptions{}; }

Error not_a_tar(const fs::path& source, const std::string& why) {
  return invalid("'" + source.string() + "' is neither a directory nor a tar archive (" + why +
                 "); give an OCI image layout, an oci-archive or a docker-save tar");
}

// The errors of unpacking an image tar, in an import's words.
Error extract_failed(const fs::path& source, Stage stage, const std::string& text, int errnum,
                     const std::string& name) {
  switch (stage) {
    case Stage::kFirstHeader:
      return not_a_tar(source, text);
    case Stage::kHeader:
      return invalid("'" + source.string() + "' is a damaged tar archive (" + text + ")");
    case Stage::kData:
      return Error{
          kStep, EIO,
          "reading '" + source.string() + "' failed (" + text + "); copy the archive again"};
    case Stage::kWrite:
      return Error{kStep, errnum, "cannot unpack '" + archive_io::shown_name(name) + "': " + text};
    case Stage::kClose:
      return Error{kStep, errnum, "unpacking failed: " + text};
  }
  return Error{kStep, EIO, text};
}

Error outside_archive(const fs::path& source, const std::string& name, const std::string& link) {
  if (link.empty()) {
    return invalid("'" + source.string() + "' holds '" + name +
                   "', a path outside the archive; refusing to import it");
  }
  return invalid("'" + source.string() + "' links '" + name + "' to '" + link +
                 "', outside the archive; refusing to import it");
}

Status extract_archive(const fs::path& source, const fs::path& scratch) {
  archive_io::Reader reader = archive_io::tar_reader();
  if (!archive_io::open_file(reader.get(), source)) {
    // libarchive may already have looked at the first bytes and found no tar
    // (its ARCHIVE_ERRNO_FILE_FORMAT, which is EILSEQ and not in its public header).
    const std::string text = archive_io::error_text(reader.get());
    if (archive_errno(reader.get()) == EILSEQ) return not_a_tar(source, text);
    return Error{kStep, archive_io::error_number(reader.get()),
                 "cannot read '" + source.string() + "': " + text};
  }
  archive_io::ExtractOptions options;
  options.member = scratch_options();
  options.files_dirs_links = true;
  options.failed = [&](Stage stage, const std::string& text, int errnum, const std::string& name) {
    return extract_failed(source, stage, text, errnum, name);
  };
  options.outside = [&](const std::string& name, const std::string& link) {
    return outside_archive(source, name, link);
  };
  return archive_io::extract(reader.get(), scratch, options);
}

bool holds_image(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kIndexFile, ec) || fs::exists(dir / kDockerManifestFile, ec);
}

// A tar of a layout's directory ("img/index.json") has the image one level down.
Result<fs::path> find_image_root(const fs::path& dir, const fs::path& source) {
  if (holds_image(dir)) return dir;
  std::error_code ec;
  std::vector<fs::path> children;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    children.push_back(it->path());
  }
  if (children.size() == 1 && fs::is_directory(fs::symlink_status(children[0], ec)) &&
      holds_image(children[0])) {
    return children[0];
  }
  return not_an_image(source);
}

}  // namespace

Result<fs::path> locate_image(const fs::path& source, const fs::path& scratch) {
  std::error_code ec;
  const fs::file_status status = fs::status(source, ec);
  if (!fs::exists(status)) {
    return missing("'" + source.string() +
                   "' does not exist; give an OCI image layout dir or an image tar");
  }
  fs::path dir = source;
  if (!fs::is_directory(status)) {
    dir = fs::canonical(scratch, ec);
    if (ec) return Error{kStep, ec.value(), "scratch dir " + scratch.string()};
    if (auto st = extract_archive(source, dir); !st) return st.error();
  }
  const fs::path real = fs::canonical(dir, ec);
  if (ec) return Error{kStep, ec.value(), dir.string()};
  return find_image_root(real, source);
}

}  // namespace abx::templates::image
