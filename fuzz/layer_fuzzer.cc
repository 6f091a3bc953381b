// Applying a tar layer onto a rootfs (layer.cc, archive_io.cc): member names,
// links, whiteouts and opaque dirs, owners shifted into the sandbox range.
// This is what template import and a Sandboxfile ADD of a local tar do with
// an image's layers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scratch_dir.h"
#include "templates/layer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fuzz = abx::fuzz;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto tar = fuzz::fresh_dir("in") / "layer.tar";
  fuzz::write_file(tar, fuzz::with_tar_checksums(input));
  const auto rootfs = fuzz::fresh_dir("rootfs");
  // A lower layer's files, for whiteouts to remove.
  fuzz::fresh_dir("rootfs/etc/apt");
  fuzz::write_file(rootfs / "etc/apt/sources.list", "deb x y\n");
  fuzz::write_file(rootfs / "etc/hostname", "base\n");
  fuzz::plant_canary();
  fuzz::report(abx::templates::apply_layer(tar, rootfs, abx::templates::IdShift{100000, 100000}));
  fuzz::check_canary();
  fuzz::clean_scratch();
  return 0;
}
