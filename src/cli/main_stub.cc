#include "cli/cli.h"
namespace abx::cli {
int main(int, char**) { return 0; }
}  // namespace abx::cli
