// The CLI's name for the shared base64 codec (src/common/base64.h).
#pragma once

#include "common/base64.h"

namespace abx::cli {
namespace base64 = abx::base64;
}  // namespace abx::cli
