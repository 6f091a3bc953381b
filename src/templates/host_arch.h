// The host's architecture as OCI platforms and Docker's platform ARGs spell it
// (Go's GOARCH names): sandboxes run the host's architecture.
#pragma once

namespace abx::templates {

constexpr const char* host_goarch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__i386__)
  return "386";
#elif defined(__arm__)
  return "arm";
#else
  return "unknown";
#endif
}

}  // namespace abx::templates
