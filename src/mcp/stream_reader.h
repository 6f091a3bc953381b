// Reading a streamed HTTP response so that a cancelled tool call stops at
// once instead of waiting for the next byte from the daemon.
#pragma once

#include <string>

#include "common/http_client.h"
#include "mcp/toolbox.h"

namespace abx::mcp {

// The next bytes of the body ("" once it is done), or an error once `cancel` is set.
Result<std::string> read_unless_cancelled(http::ResponseStream& stream, const CancelFlag& cancel);

}  // namespace abx::mcp
