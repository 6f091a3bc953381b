// Template import (image_archive.cc, image_extract.cc, image_dir.cc,
// image_oci_layout.cc, image_docker_save.cc): an image handed to
// `abx template import`. Two input forms:
//  - a tar (an oci-archive or a `docker save` tar), unpacked as given;
//  - an image directory written out from text: each file starts with a line
//    "==> path <==" and runs to the next one (an OCI layout's index.json,
//    oci-layout and blobs, or a docker-save manifest.json and layer tars),
//    so the JSON can mutate without a tar around it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "scratch_dir.h"
#include "templates/image_archive.h"

namespace {

namespace fs = std::filesystem;
namespace fuzz = abx::fuzz;

constexpr std::string_view kFileMark = "==> ";
constexpr std::string_view kFileMarkEnd = " <==\n";

// A path of the written dir: relative, with no "..", or nothing.
bool safe_relative(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  const fs::path path(name);
  for (const auto& part : path) {
    if (part == "..") return false;
  }
  return true;
}

// Writes the "==> path <==" files below `dir`.
void write_image_dir(std::string_view input, const fs::path& dir) {
  while (input.starts_with(kFileMark)) {
    input.remove_prefix(kFileMark.size());
    const size_t end = input.find(kFileMarkEnd);
    if (end == std::string_view::npos) return;
    const std::string_view name = input.substr(0, end);
    input.remove_prefix(end + kFileMarkEnd.size());
    const size_t next = input.find(std::string("\n") + std::string(kFileMark));
    const std::string_view content = input.substr(0, next);
    input = next == std::string_view::npos ? std::string_view{} : input.substr(next + 1);
    if (!safe_relative(name)) continue;
    const fs::path path = dir / name;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) continue;
    // Layers are tars inside the dir: put their checksums right too.
    fuzz::write_file(path, fuzz::with_tar_checksums(content));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  fs::path source;
  if (input.starts_with(kFileMark)) {
    source = fuzz::fresh_dir("image");
    write_image_dir(input, source);
  } else {
    source = fuzz::fresh_dir("in") / "image.tar";
    fuzz::write_file(source, fuzz::with_tar_checksums(input));
  }
  const auto scratch = fuzz::fresh_dir("scratch");
  const auto rootfs = fuzz::fresh_dir("rootfs");
  fuzz::plant_canary();
  fuzz::report(abx::templates::unpack_image(source, scratch, rootfs,
                                            abx::templates::IdShift{100000, 100000}));
  fuzz::check_canary();
  fuzz::clean_scratch();
  return 0;
}
