#include "cli/cli.h"

int main(int argc, char** argv) { return abx::cli::main(argc, argv); }
