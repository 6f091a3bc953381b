#include "common/error.h"

#include <cstring>

namespace abx {

std::string Error::message() const {
  if (whole) return step;
  std::string out = step;
  if (errnum > 0) out += std::string(": ") + std::strerror(errnum);
  if (!detail.empty()) out += (errnum > 0 ? " (" : ": ") + detail + (errnum > 0 ? ")" : "");
  return out;
}

}  // namespace abx
