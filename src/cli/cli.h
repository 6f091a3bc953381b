// The `abx` command line. `abx serve` runs the daemon in the foreground.
#pragma once

namespace abx::cli {

int main(int argc, char** argv);

}  // namespace abx::cli
