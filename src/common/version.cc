#include "common/version.h"

namespace abx::version {

std::string text() { return std::string(kNumber) + " (commit " + commit() + ")"; }

}  // namespace abx::version
