// The libarchive pieces every tar reader and writer here shares: readers and
// writers, one data-block copy, one member name check, and one safe extractor
// (writing through a MemberWriter) that speaks in its caller's words.
#pragma once

#include <archive.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "templates/member_writer.h"

namespace abx::templates::archive_io {

namespace fs = std::filesystem;

using Reader = std::unique_ptr<archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<archive, decltype(&archive_write_free)>;

// A reader of tar archives (ustar, pax, gnu), compressed with anything libarchive reads.
Reader tar_reader();
// Opens `path` for `reader`; false leaves libarchive's error in the reader.
bool open_file(archive* reader, const fs::path& path);
// A writer of a new pax tar at `path`; false leaves libarchive's error in the writer.
Writer tar_file_writer();
bool open_file_for_writing(archive* writer, const fs::path& path);

// libarchive's text for the last error ("unknown libarchive error" when it has none).
std::string error_text(archive* a);
// libarchive's errno for the last error, EIO when it has none.
int error_number(archive* a);
// Error{step, error_number, "what: <libarchive's text>"}.
Error error(std::string step, archive* a, const std::string& what);

// A member name as a path below the dir it is unpacked into: "./a/b" → "a/b", "." → "";
// nullopt for an absolute path or any "..".
std::optional<std::string> relative_inside(std::string_view name);

// A member name fit for a one-line error: control characters replaced, long names cut.
std::string shown_name(std::string_view name);

// Where extraction failed, for the caller's wording.
enum class Stage {
  kFirstHeader,  // reading the first header: the file may be no tar at all
  kHeader,       // reading a later header: a damaged archive
  kData,         // reading a member's data
  kWrite,        // creating a member on disk or writing its data
  kClose,        // finishing the extraction (dir modes and times)
};

struct ExtractOptions {
  MemberOptions member;           // owners, set-id bits, xattrs
  bool files_dirs_links = false;  // skip every other kind of member (fifos)
  // The error for a failure at `stage`: `why` is libarchive's or the kernel's text, `errnum`
  // its errno, `name` the member as the tar names it ("" at kClose).
  std::function<Error(Stage stage, const std::string& why, int errnum, const std::string& name)>
      failed;
  // The error for a member whose name (link empty) or hard-link target leads out of the dir.
  std::function<Error(const std::string& name, const std::string& link)> outside;
};

// Unpacks the tar open in `reader` below `dir` through a MemberWriter (member_writer.h):
// names and hard links that lead out are refused, and symlinks in the dir are followed
// only inside it. Device nodes and sockets are skipped.
Status extract(archive* reader, const fs::path& dir, const ExtractOptions& options);

}  // namespace abx::templates::archive_io
