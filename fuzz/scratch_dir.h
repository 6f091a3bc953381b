// A private temp dir for the targets that unpack files, emptied after every
// input so one input's files never meet the next's. fuzz/run.sh runs these
// targets with a read-only host and a private /tmp (bubblewrap): a layer that
// escapes its rootfs then fails on a read-only file system instead of
// changing the host.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace abx::fuzz {

namespace fs = std::filesystem;

// Made once per process under $TMPDIR (or /tmp), removed at exit.
inline const fs::path& scratch_root() {
  static const fs::path root = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/abx-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) std::abort();
    return fs::canonical(pattern);
  }();
  static const struct Remover {
    ~Remover() {
      std::error_code ignored;
      fs::remove_all(root, ignored);
    }
  } remover;
  return root;
}

// An empty dir `name` inside the scratch root.
inline fs::path fresh_dir(const std::string& name) {
  const fs::path dir = scratch_root() / name;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  fs::create_directories(dir);
  return dir;
}

inline void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Empties the scratch root: every dir an input made, whatever is in it.
inline void clean_scratch() {
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(scratch_root(), ignored)) {
    fs::remove_all(entry.path(), ignored);
  }
}

// A dir outside every rootfs, at a fixed path a hostile tar can name (a
// symlink to it, then whiteouts or files through that symlink). Unpacking
// must leave it as it was: check_canary() traps when a file in it went
// missing or a new one appeared, which makes an escape from the rootfs a
// crash the fuzzer reports. Under fuzz/run.sh /tmp is private to the run.
inline constexpr const char* kCanaryDir = "/tmp/abx-fuzz-canary";

inline void plant_canary() {
  const fs::path dir(kCanaryDir);
  fs::create_directories(dir / "sub");
  write_file(dir / "keep", "k");
  write_file(dir / "sub" / "keep", "k");
}

inline void check_canary() {
  const fs::path dir(kCanaryDir);
  std::error_code ec;
  size_t entries = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    (void)entry;
    ++entries;
  }
  const bool intact = !ec && entries == 3 && fs::is_regular_file(dir / "keep", ec) &&
                      fs::is_regular_file(dir / "sub" / "keep", ec);
  if (!intact) {
    std::fprintf(stderr, "abx-fuzz: unpacking changed %s, outside the rootfs\n", kCanaryDir);
    std::abort();
  }
}

// With ABX_FUZZ_VERBOSE set, says why an input was refused: to check that a
// seed gets as far as it should (`ABX_FUZZ_VERBOSE=1 fuzz_layer SEED`).
template <class R>
void report(const R& result) {
  if (std::getenv("ABX_FUZZ_VERBOSE")) {
    std::fprintf(stderr, "%s\n", result ? "ok" : result.error().message().c_str());
  }
}

// libFuzzer mutates bytes, and a tar header whose checksum no longer matches
// is all libarchive ever sees of a mutated one. Every 512-byte block that
// looks like a ustar header gets its checksum put right, so mutations reach
// the code behind the header.
inline std::string with_tar_checksums(std::string_view input) {
  std::string tar(input);
  for (size_t at = 0; at + 512 <= tar.size(); at += 512) {
    char* block = tar.data() + at;
    if (std::string_view(block + 257, 5) != "ustar") continue;
    std::fill(block + 148, block + 156, ' ');
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(block[i]);
    std::snprintf(block + 148, 8, "%06o", sum & 0777777u);
    block[155] = ' ';
  }
  return tar;
}

}  // namespace abx::fuzz
