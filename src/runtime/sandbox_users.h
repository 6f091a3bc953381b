// Who a user spec ("root", "1000", "app:staff", as in a Dockerfile's USER or
// an image's config) is inside one sandbox, from that sandbox's own
// /etc/passwd and /etc/group.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::runtime {

struct SandboxUserIds {
  std::string name;  // the passwd name, or the number as given
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string home = "/";
};

// A name missing from /etc/passwd is an error that says so; a number is
// taken as is (primary group from passwd if listed there, else 0).
Result<SandboxUserIds> lookup_user(const Sandbox& sb, const std::string& spec);

}  // namespace abx::runtime
