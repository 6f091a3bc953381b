#include "egress/network_event.h"

namespace abx::egress {

const char* kind_name(NetworkEvent::Kind kind) {
  switch (kind) {
    case NetworkEvent::Kind::kDns:
      return "dns";
    case NetworkEvent::Kind::kConnection:
      return "connection";
    case NetworkEvent::Kind::kRequest:
      return "request";
  }
  return "unknown";
}

}  // namespace abx::egress
