// Container images onto a template rootfs: OCI layouts, oci-archive and
// docker-save tars, multi-platform indexes, and images that must be refused.
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tar_fixture.h"
#include "temp_dir.h"
#include "templates/image_archive.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kLayerType = "application/vnd.oci.image.layer.v1.tar";
constexpr const char* kConfigType = "application/vnd.oci.image.config.v1+json";
constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kIndexType = "application/vnd.oci.image.index.v1+json";

// The host's architecture as OCI platforms name it (what unpack_image prefers).
std::string host_arch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "s390x";  // the tests below only need a name the other platforms do not use
#endif
}

// Two architectures that are not the host's.
std::vector<std::string> foreign_arches() {
  std::vector<std::string> out;
  for (const char* arch : {"amd64", "arm64", "ppc64le"}) {
    if (arch != host_arch() && out.size() < 2) out.push_back(arch);
  }
  return out;
}

using testing::TarEntry;
using testing::write_tar;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

// Tars the files and dirs under `dir` with names relative to it, prefixed by
// `prefix` ("" or "img/"), as skopeo and docker write image archives.
void tar_dir(const fs::path& dir, const fs::path& tar, const std::string& prefix = "") {
  std::vector<TarEntry> entries;
  for (const auto& item : fs::recursive_directory_iterator(dir)) {
    const std::string rel = prefix + fs::relative(item.path(), dir).string();
    if (item.is_directory()) {
      entries.push_back({rel + "/", AE_IFDIR, ""});
    } else {
      entries.push_back({rel, AE_IFREG, read_file(item.path())});
    }
  }
  write_tar(tar, entries);
}

json image_config(const std::string& arch, const json& defaults) {
  return {{"architecture", arch}, {"os", "linux"}, {"config", defaults}};
}

// An OCI image layout written by hand. Blobs get made-up but well-formed
// digests: unpack_image checks sizes, not digests.
class OciLayout {
 public:
  explicit OciLayout(fs::path dir) : dir_(std::move(dir)) {
    fs::create_directories(dir_ / "blobs" / "sha256");
    write_file(dir_ / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  }

  const fs::path& dir() const { return dir_; }

  json add_blob(const std::string& bytes, const std::string& media_type) {
    char hex[65];
    std::snprintf(hex, sizeof hex, "%064x", ++blobs_);
    write_file(dir_ / "blobs" / "sha256" / hex, bytes);
    return {{"mediaType", media_type},
            {"digest", std::string("sha256:") + hex},
            {"size", bytes.size()}};
  }

  json add_layer(const std::vector<TarEntry>& entries) {
    const fs::path tar = dir_.parent_path() / "layer.tmp.tar";
    write_tar(tar, entries);
    json descriptor = add_blob(read_file(tar), kLayerType);
    fs::remove(tar);
    return descriptor;
  }

  // Returns the manifest's descriptor, ready for an index.
  json add_image(const json& config, const std::vector<json>& layers) {
    const json manifest = {{"schemaVersion", 2},
                           {"mediaType", kManifestType},
                           {"config", add_blob(config.dump(), kConfigType)},
                           {"layers", layers}};
    json descriptor = add_blob(manifest.dump(), kManifestType);
    descriptor["platform"] = {{"os", "linux"}, {"architecture", config["architecture"]}};
    return descriptor;
  }

  json add_index(const std::vector<json>& manifests) {
    return add_blob(index_of(manifests).dump(), kIndexType);
  }

  void write_index(const std::vector<json>& manifests) {
    write_file(dir_ / "index.json", index_of(manifests).dump());
  }

  fs::path blob_path(const json& descriptor) const {
    const std::string digest = descriptor["digest"];
    return dir_ / "blobs" / "sha256" / digest.substr(7);
  }

 private:
  static json index_of(const std::vector<json>& manifests) {
    return {{"schemaVersion", 2}, {"mediaType", kIndexType}, {"manifests", manifests}};
  }

  fs::path dir_;
  unsigned blobs_ = 0;
};

const std::vector<TarEntry> kLowerLayer = {{"etc/", AE_IFDIR, ""},
                                           {"etc/kept", AE_IFREG, "from layer one"},
                                           {"etc/doomed", AE_IFREG, "whited out by layer two"},
                                           {"data/", AE_IFDIR, ""}};
const std::vector<TarEntry> kUpperLayer = {{"etc/", AE_IFDIR, ""},
                                           {"etc/.wh.doomed", AE_IFREG, ""},
                                           {"etc/added", AE_IFREG, "from layer two"}};
const json kDefaults = {
    {"Env", {"PATH=/usr/bin:/bin", "FOO=bar=baz"}}, {"WorkingDir", "/data"}, {"User", "1000:1000"}};

class ImageArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rootfs_ = dir_ / "rootfs";
    scratch_ = dir_ / "scratch";
    fs::create_directory(rootfs_);
    fs::create_directory(scratch_);
  }

  Result<ImageConfig> unpack(const fs::path& source) {
    return unpack_image(source, scratch_, rootfs_, {});
  }

  // The two-layer image every format test carries; its manifest is in index.json.
  OciLayout two_layer_layout() {
    OciLayout layout(dir_ / "layout");
    const json manifest =
        layout.add_image(image_config(host_arch(), kDefaults),
                         {layout.add_layer(kLowerLayer), layout.add_layer(kUpperLayer)});
    layout.write_index({manifest});
    return layout;
  }

  // The same two layers as `docker save` (before docker 25) writes them.
  fs::path two_layer_docker_dir() {
    const fs::path dir = dir_ / "docker";
    write_tar(dir_ / "lower.tar", kLowerLayer);
    write_tar(dir_ / "upper.tar", kUpperLayer);
    write_file(dir / "aaaa/layer.tar", read_file(dir_ / "lower.tar"));
    write_file(dir / "bbbb/layer.tar", read_file(dir_ / "upper.tar"));
    write_file(dir / "cccc.json", image_config(host_arch(), kDefaults).dump());
    write_docker_manifest(dir, "cccc.json", {"aaaa/layer.tar", "bbbb/layer.tar"});
    write_file(dir / "repositories", R"({"example":{"latest":"cccc"}})");
    return dir;
  }

  static void write_docker_manifest(const fs::path& dir, const std::string& config,
                                    const std::vector<std::string>& layers) {
    const json manifest =
        json::array({{{"Config", config}, {"RepoTags", {"example:latest"}}, {"Layers", layers}}});
    write_file(dir / "manifest.json", manifest.dump());
  }

  void expect_two_layer_result(const Result<ImageConfig>& unpacked, const std::string& format) {
    ASSERT_TRUE(unpacked.ok()) << unpacked.error().message();
    EXPECT_EQ(read_file(rootfs_ / "etc/kept"), "from layer one");
    EXPECT_EQ(read_file(rootfs_ / "etc/added"), "from layer two");
    EXPECT_FALSE(fs::exists(rootfs_ / "etc/doomed"));
    EXPECT_FALSE(fs::exists(rootfs_ / "etc/.wh.doomed"));
    EXPECT_TRUE(fs::is_directory(rootfs_ / "data"));
    const ImageConfig& config = unpacked.value();
    EXPECT_EQ(config.env.at("FOO"), "bar=baz");
    EXPECT_EQ(config.env.at("PATH"), "/usr/bin:/bin");
    EXPECT_EQ(config.workdir, "/data");
    EXPECT_EQ(config.user, "1000:1000");
    EXPECT_EQ(config.layers, 2u);
    EXPECT_EQ(config.format, format);
  }

  bool rootfs_is_empty() const { return fs::is_empty(rootfs_); }

  abx::testing::TempDir temp_{"abx-image-test"};
  fs::path dir_ = temp_.path();
  fs::path rootfs_, scratch_;
};

TEST_F(ImageArchiveTest, UnpacksAnOciLayoutLayerByLayer) {
  const OciLayout layout = two_layer_layout();
  expect_two_layer_result(unpack(layout.dir()), "oci layout");
  EXPECT_TRUE(fs::is_empty(scratch_)) << "a layout dir is read in place";
}

TEST_F(ImageArchiveTest, UnpacksAnOciArchiveTar) {
  const OciLayout layout = two_layer_layout();
  tar_dir(layout.dir(), dir_ / "image.tar");
  expect_two_layer_result(unpack(dir_ / "image.tar"), "oci layout");
}

TEST_F(ImageArchiveTest, UnpacksATarOfTheLayoutDirectoryItself) {
  const OciLayout layout = two_layer_layout();
  tar_dir(layout.dir(), dir_ / "image.tar", "layout/");
  expect_two_layer_result(unpack(dir_ / "image.tar"), "oci layout");
}

TEST_F(ImageArchiveTest, UnpacksADockerSaveTar) {
  tar_dir(two_layer_docker_dir(), dir_ / "image.tar");
  expect_two_layer_result(unpack(dir_ / "image.tar"), "docker save");
}

TEST_F(ImageArchiveTest, ReadsTheManifestJsonOfANewerDockerSaveLayout) {
  // Docker 25+ writes an OCI layout plus a manifest.json naming blobs; here
  // index.json is empty, so only manifest.json can give the layers.
  OciLayout layout(dir_ / "layout");
  const json lower = layout.add_layer(kLowerLayer);
  const json upper = layout.add_layer(kUpperLayer);
  const json config = layout.add_blob(image_config(host_arch(), kDefaults).dump(), kConfigType);
  layout.write_index({});
  const auto rel = [&](const json& d) {
    return fs::relative(layout.blob_path(d), layout.dir()).string();
  };
  write_docker_manifest(layout.dir(), rel(config), {rel(lower), rel(upper)});
  tar_dir(layout.dir(), dir_ / "image.tar");
  expect_two_layer_result(unpack(dir_ / "image.tar"), "docker save");
}

TEST_F(ImageArchiveTest, PicksTheHostPlatformThroughANestedIndex) {
  OciLayout layout(dir_ / "layout");
  std::vector<json> manifests;
  std::vector<std::string> arches = foreign_arches();
  arches.insert(arches.begin() + 1, host_arch());  // neither first nor last
  for (const std::string& arch : arches) {
    const json layer = layout.add_layer({{"arch", AE_IFREG, arch}});
    manifests.push_back(layout.add_image(image_config(arch, json::object()), {layer}));
  }
  // Docker's containerd store saves an index whose one entry is the real index.
  layout.write_index({layout.add_index(manifests)});

  auto unpacked = unpack(layout.dir());
  ASSERT_TRUE(unpacked.ok()) << unpacked.error().message();
  EXPECT_EQ(read_file(rootfs_ / "arch"), host_arch());
  EXPECT_EQ(unpacked->layers, 1u);
  EXPECT_TRUE(unpacked->env.empty());
  EXPECT_EQ(unpacked->workdir, "");
}

TEST_F(ImageArchiveTest, NamesThePlatformsItHasWhenNoneIsTheHosts) {
  OciLayout layout(dir_ / "layout");
  std::vector<json> manifests;
  for (const std::string& arch : foreign_arches()) {
    const json layer = layout.add_layer({{"arch", AE_IFREG, arch}});
    manifests.push_back(layout.add_image(image_config(arch, json::object()), {layer}));
  }
  layout.write_index(manifests);

  auto unpacked = unpack(layout.dir());
  ASSERT_FALSE(unpacked.ok());
  const std::string message = unpacked.error().message();
  EXPECT_NE(message.find("no manifest for linux/" + host_arch()), std::string::npos) << message;
  for (const std::string& arch : foreign_arches()) {
    EXPECT_NE(message.find("linux/" + arch), std::string::npos) << message;
  }
  EXPECT_TRUE(rootfs_is_empty());
}

TEST_F(ImageArchiveTest, RefusesWhatIsNotAnImage) {
  fs::create_directory(dir_ / "empty");
  auto empty = unpack(dir_ / "empty");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("is neither an OCI image layout (no index.json) nor a "
                                         "docker-save archive (no manifest.json)"),
            std::string::npos)
      << empty.error().message();

  write_file(dir_ / "notes.txt", "just some text, no tar header anywhere in here\n");
  auto text = unpack(dir_ / "notes.txt");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message().find("nor a tar archive"), std::string::npos)
      << text.error().message();

  auto absent = unpack(dir_ / "no-such-image.tar");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().errnum, ENOENT);
  EXPECT_NE(absent.error().message().find("does not exist"), std::string::npos);
}

TEST_F(ImageArchiveTest, NamesAMissingLayerBlob) {
  OciLayout layout(dir_ / "layout");
  const json lower = layout.add_layer(kLowerLayer);
  const json upper = layout.add_layer(kUpperLayer);
  layout.write_index({layout.add_image(image_config(host_arch(), kDefaults), {lower, upper})});
  fs::remove(layout.blob_path(upper));

  auto unpacked = unpack(layout.dir());
  ASSERT_FALSE(unpacked.ok());
  EXPECT_EQ(unpacked.error().errnum, ENOENT);
  const std::string digest = upper["digest"];
  EXPECT_NE(unpacked.error().message().find("layer blob " + digest + " is missing from the image"),
            std::string::npos)
      << unpacked.error().message();
  EXPECT_TRUE(rootfs_is_empty()) << "nothing is applied before every layer is found";
}

TEST_F(ImageArchiveTest, CatchesATruncatedBlobBySize) {
  OciLayout layout(dir_ / "layout");
  const json layer = layout.add_layer(kLowerLayer);
  layout.write_index({layout.add_image(image_config(host_arch(), kDefaults), {layer})});
  fs::resize_file(layout.blob_path(layer), 512);

  auto unpacked = unpack(layout.dir());
  ASSERT_FALSE(unpacked.ok());
  EXPECT_NE(unpacked.error().message().find("copied incompletely"), std::string::npos)
      << unpacked.error().message();
}

TEST_F(ImageArchiveTest, RefusesDockerLayerPathsOutOfTheImage) {
  const fs::path dir = two_layer_docker_dir();
  write_tar(dir_ / "outside.tar", {{"stolen", AE_IFREG, "host file"}});
  for (const std::string& layer : {std::string("../outside.tar"), (dir_ / "outside.tar").string(),
                                   std::string("aaaa/../../outside.tar")}) {
    write_docker_manifest(dir, "cccc.json", {layer});
    auto unpacked = unpack(dir);
    ASSERT_FALSE(unpacked.ok()) << layer;
    EXPECT_EQ(unpacked.error().errnum, EINVAL);
    EXPECT_NE(unpacked.error().message().find("points outside the image"), std::string::npos)
        << unpacked.error().message();
  }
  fs::create_symlink(dir_ / "outside.tar", dir / "link.tar");
  write_docker_manifest(dir, "cccc.json", {"link.tar"});
  auto linked = unpack(dir);
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message().find("symlink out of the image"), std::string::npos)
      << linked.error().message();
  EXPECT_TRUE(rootfs_is_empty());
}

TEST_F(ImageArchiveTest, RefusesDigestsThatAreNotDigests) {
  OciLayout layout(dir_ / "layout");
  json layer = layout.add_layer(kLowerLayer);
  layer["digest"] = "sha256:../../../../etc/passwd";
  layout.write_index({layout.add_image(image_config(host_arch(), kDefaults), {layer})});

  auto unpacked = unpack(layout.dir());
  ASSERT_FALSE(unpacked.ok());
  EXPECT_NE(unpacked.error().message().find("malformed digest"), std::string::npos)
      << unpacked.error().message();
  EXPECT_TRUE(rootfs_is_empty());
}

TEST_F(ImageArchiveTest, RefusesArchiveMembersOutOfTheScratchDir) {
  write_tar(dir_ / "evil.tar", {{"index.json", AE_IFREG, "{}"}, {"../escaped", AE_IFREG, "x"}});
  auto unpacked = unpack(dir_ / "evil.tar");
  ASSERT_FALSE(unpacked.ok());
  EXPECT_NE(unpacked.error().message().find("outside the archive"), std::string::npos)
      << unpacked.error().message();
  EXPECT_FALSE(fs::exists(dir_ / "escaped"));
}

}  // namespace
}  // namespace abx::templates
