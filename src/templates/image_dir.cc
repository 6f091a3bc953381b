#include "templates/image_dir.h"

#include <algorithm>
#include <optional>
#include <system_error>

#include "common/fd_io.h"
#include "common/json_text.h"
#include "templates/archive_io.h"

namespace abx::templates::image {
namespace {

// Indexes, manifests and configs are small; this keeps a mislabelled layer from being parsed.
constexpr uintmax_t kMaxJsonBytes = 16 << 20;

bool is_within(const fs::path& path, const fs::path& dir) {
  return std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end();
}

// "sha256:<64 hex>" → "blobs/sha256/<hex>"; nullopt for anything else, which
// also keeps a digest from naming a path out of the image.
std::optional<std::string> blob_rel_path(const std::string& digest) {
  const size_t colon = digest.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string algorithm = digest.substr(0, colon);
  const std::string hex = digest.substr(colon + 1);
  const size_t want = algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
  const auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (want == 0 || hex.size() != want || !std::all_of(hex.begin(), hex.end(), is_hex)) {
    return std::nullopt;
  }
  return "blobs/" + algorithm + "/" + hex;
}

}  // namespace

Error invalid(std::string detail) { return Error{kStep, EINVAL, std::move(detail)}; }
Error missing(std::string detail) { return Error{kStep, ENOENT, std::move(detail)}; }

Error not_an_image(const fs::path& source) {
  return invalid("'" + source.string() +
                 "' is neither an OCI image layout (no index.json) nor a docker-save archive (no "
                 "manifest.json)");
}

Result<json> read_json(const fs::path& path, const std::string& what) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return Error{kStep, ec.value(), "cannot read " + what + " (" + path.string() + ")"};
  if (size > kMaxJsonBytes) {
    return invalid(what + " is " + std::to_string(size) +
                   " bytes, too big to be JSON; the image is damaged");
  }
  auto text = read_file(path);
  if (!text)
    return Error{kStep, text.error().errnum, "cannot read " + what + " (" + path.string() + ")"};
  // An image's JSON is the image author's: copying a deeply nested value recurses.
  if (json_text::nested_deeper_than(*text, json_text::kMaxDepth))
    return invalid(what + " nests deeper than " + std::to_string(json_text::kMaxDepth) +
                   " levels; the image is damaged");
  json parsed = json::parse(*text, nullptr, false);
  if (parsed.is_discarded()) return invalid(what + " is not valid JSON; the image is damaged");
  return parsed;
}

Result<fs::path> ImageDir::file(const std::string& rel, const std::string& what) const {
  if (!archive_io::relative_inside(rel)) {
    return invalid(what + " points outside the image; refusing to import it");
  }
  std::error_code ec;
  const fs::path real = fs::canonical(root_ / rel, ec);
  if (ec) return missing(what + " is missing from the image; export the image again");
  if (!is_within(real, root_)) {
    return invalid(what + " is a symlink out of the image; refusing to import it");
  }
  if (!fs::is_regular_file(real, ec)) {
    return invalid(what + " is not a file; the image is damaged");
  }
  return real;
}

Result<fs::path> ImageDir::blob(const Descriptor& descriptor, const std::string& what) const {
  const auto rel = blob_rel_path(descriptor.digest);
  if (!rel) {
    return invalid(what + " has a malformed digest '" + descriptor.digest +
                   "' (want sha256:<64 hex>); refusing to import it");
  }
  const std::string named = what + " " + descriptor.digest;
  auto path = file(*rel, named);
  if (!path) return path;
  std::error_code ec;
  const uintmax_t size = fs::file_size(*path, ec);
  if (descriptor.size >= 0 && size != static_cast<uintmax_t>(descriptor.size)) {
    return invalid(named + " has " + std::to_string(size) + " bytes but the image says " +
                   std::to_string(descriptor.size) +
                   "; it was copied incompletely, export it again");
  }
  return path;
}

Result<json> ImageDir::blob_json(const Descriptor& descriptor, const std::string& what) const {
  auto path = blob(descriptor, what);
  if (!path) return path.error();
  return read_json(*path, what + " " + descriptor.digest);
}

}  // namespace abx::templates::image
