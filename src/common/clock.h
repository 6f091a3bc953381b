// Wall-clock time as the API reports it: unix milliseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace abx {

inline int64_t unix_ms_now() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace abx
