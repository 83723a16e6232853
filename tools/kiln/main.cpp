// The `kiln` command-line tool.
#include "tools/kiln/Commands.h"

#include <iostream>

int main(int argc, char **argv) {
  CLI::App app{"kiln: an ahead-of-time graph compiler and autotuner for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  std::vector<kiln::cli::Runner> runners = {
      kiln::cli::addPlanCommand(app),
      kiln::cli::addImportCommand(app),
      kiln::cli::addCompileCommand(app),
      kiln::cli::addInspectCommand(app),
      kiln::cli::addRunCommand(app),
      kiln::cli::addCheckCommand(app),
      kiln::cli::addKnobsCommand(app),
      kiln::cli::addTuneCommand(app),
      kiln::cli::addCacheCommand(app),
      kiln::cli::addCalibrateCommand(app),
      kiln::cli::addEvalCommand(app),
      kiln::cli::addDebugCommand(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (auto &run : runners)
    if (int rc = run(); rc >= 0) return rc;
  return 2;
}
