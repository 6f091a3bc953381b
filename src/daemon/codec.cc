#include "daemon/codec.h"

#include <ctime>

namespace abx::daemon::codec {

std::string rfc3339(int64_t unix_sec, int64_t nsec, bool ms_precision) {
  const time_t t = static_cast<time_t>(unix_sec);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf, n);
  if (ms_precision) {
    char frac[8];
    snprintf(frac, sizeof frac, ".%03d", static_cast<int>(nsec / 1000000));
    out += frac;
  }
  return out + "Z";
}

}  // namespace abx::daemon::codec
