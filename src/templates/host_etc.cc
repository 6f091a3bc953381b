// The host template's /etc: account and network files written for the
// sandbox, plus copies of the host files programs need to run (dynamic
// linker cache, alternatives, certificates, time zone, Python config). The
// copy list is an allowlist; secrets (shadow, ssh keys, sudoers, machine-id,
// TLS private keys, credentials in tool configs) are never on it, and any
// file the host keeps from other users is skipped as well.
#include <sys/stat.h>

#include <string>

#include "templates/host_template.h"
#include "templates/tree_ops.h"

namespace abx::templates::host {
namespace {

struct SyntheticFile {
  const char* name;
  const char* text;
};

constexpr SyntheticFile kSynthetic[] = {
    {"passwd",
     "root:x:0:0:root:/root:/bin/bash\n"
     "user:x:1000:1000::/home/user:/bin/bash\n"
     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
    {"group",
     "root:x:0:\n"
     "tty:x:5:\n"
     "users:x:100:user\n"
     "user:x:1000:\n"
     "nogroup:x:65534:\n"},
    {"hostname", "sandbox\n"},
    {"hosts",
     "127.0.0.1\tlocalhost\n"
     "::1\tlocalhost ip6-localhost ip6-loopback\n"},
    // Sandboxes have no network unless created with internet access; the
    // runtime provides a resolver configuration in that case.
    {"resolv.conf", "# no network by default\n"},
    {"nsswitch.conf",
     "passwd:    files\n"
     "group:     files\n"
     "shadow:    files\n"
     "hosts:     files dns\n"
     "networks:  files\n"
     "protocols: files\n"
     "services:  files\n"
     "ethers:    files\n"
     "rpc:       files\n"},
    // Commands run as `bash -l -c`, so this is what sets PATH.
    {"profile",
     "# /etc/profile: environment for login shells (commands run as bash -l -c).\n"
     "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
     "export PATH\n"
     "if [ -z \"$HOME\" ]; then\n"
     "  if [ \"$(id -u)\" = 0 ]; then HOME=/root; else HOME=/home/user; fi\n"
     "fi\n"
     "export HOME\n"
     "if [ \"${PS1-}\" ]; then\n"
     "  if [ \"${BASH-}\" ] && [ \"$BASH\" != /bin/sh ] && [ -f /etc/bash.bashrc ]; then\n"
     "    . /etc/bash.bashrc\n"
     "  else\n"
     "    PS1='$ '\n"
     "  fi\n"
     "fi\n"},
    {"bash.bashrc",
     "# /etc/bash.bashrc: interactive bash shells.\n"
     "[ -z \"$PS1\" ] && return\n"
     "shopt -s checkwinsize\n"
     "PS1='\\u@\\h:\\w\\$ '\n"},
};

// Host files copied verbatim (symlinks stay symlinks; those pointing into
// /usr resolve through the /usr bind).
constexpr const char* kCopied[] = {
    "ld.so.cache",     "ld.so.conf",           "ld.so.conf.d", "alternatives", "ssl",
    "ca-certificates", "ca-certificates.conf", "mime.types",   "localtime",    "timezone",
    "debian_version",  "os-release",           "protocols",    "services",     "inputrc",
    "shells",          "locale.alias",         "gai.conf",     "host.conf",
};

// Copied when their name starts with this: python3, python3.11, ...
constexpr const char* kCopiedPrefix = "python3";

// TLS private keys live here; it is also unreadable to others on Debian.
constexpr const char* kNeverCopied = "private";

// Anything the host hides from other users is private to the host.
bool hidden_from_others(const fs::path& host_path) {
  struct stat st {};
  if (::lstat(host_path.c_str(), &st) != 0) return true;
  if (S_ISDIR(st.st_mode)) return (st.st_mode & S_IXOTH) == 0 || (st.st_mode & S_IROTH) == 0;
  if (S_ISREG(st.st_mode)) return (st.st_mode & S_IROTH) == 0;
  return false;
}

bool skip(const fs::path& host_path) {
  return host_path.filename() == kNeverCopied || hidden_from_others(host_path);
}

Status copy_host_file(const fs::path& etc, const std::string& name) {
  const fs::path host_path = fs::path("/etc") / name;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(host_path, ec))) return {};
  return tree::copy(host_path, etc / name, skip);
}

Status copy_prefixed_host_dirs(const fs::path& etc) {
  std::error_code ec;
  for (fs::directory_iterator it("/etc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kCopiedPrefix)) continue;
    if (auto st = copy_host_file(etc, name); !st) return st;
  }
  if (ec) return Error{"copy", ec.value(), "/etc"};
  return {};
}

}  // namespace

Status write_etc(const fs::path& etc) {
  for (const auto& file : kSynthetic) {
    if (auto st = tree::write_text(etc / file.name, file.text); !st) return st;
  }
  for (const char* name : kCopied) {
    if (auto st = copy_host_file(etc, name); !st) return st;
  }
  return copy_prefixed_host_dirs(etc);
}

}  // namespace abx::templates::host
