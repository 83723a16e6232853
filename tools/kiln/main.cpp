// The `kiln` command-line tool.
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <iostream>

namespace {

// Whether everything a command printed reached standard output (a full disk or /dev/full is an
// error, not a silent success): std::cout, C stdio and LLVM's outs() (kiln import).
bool stdoutWritten() {
  llvm::outs().flush();
  bool llvmOk = !llvm::outs().has_error();
  std::string error;
  if (!llvmOk) {
    error = "cannot write to standard output: " + llvm::outs().error().message();
    llvm::outs().clear_error();  // (otherwise LLVM aborts when the stream is destroyed)
  }
  if (!kiln::support::flushStdout(error) || !llvmOk) {
    std::cerr << "kiln: error: " << error << "\n";
    return false;
  }
  return true;
}

}  // namespace

namespace kiln::cli {

static int level = 0;
int verbosity() { return level; }
void setVerbosity(int l) { level = l; }
void warning(const std::string &text) {
  if (level >= 0) std::cerr << "kiln: warning: " << text << "\n";
}
void note(const std::string &text) {
  if (level >= 0) std::cerr << "kiln: note: " << text << "\n";
}
void info(int at, const std::string &text) {
  if (level >= at) std::cerr << "kiln: " << text << "\n";
}

}  // namespace kiln::cli

int main(int argc, char **argv) {
  // Messages quote names from models, engines and caches: escape control characters in them.
  kiln::support::PrintableBuf safeErr(std::cerr.rdbuf());
  std::streambuf *rawErr = std::cerr.rdbuf(&safeErr);
  CLI::App app{"kiln: an ahead-of-time graph compiler and autotuner for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "Say more on stderr: -v each phase's time, -vv also every compile pass's");
  app.add_flag("-q,--quiet", quiet, "Print errors only (no warnings, notes or progress)")->excludes("--verbose");
  app.fallthrough();  // (so they may also follow the subcommand)
  std::vector<kiln::cli::Runner> runners = {
      kiln::cli::addPlanCommand(app),       kiln::cli::addImportCommand(app), kiln::cli::addCompileCommand(app),
      kiln::cli::addInspectCommand(app),    kiln::cli::addRunCommand(app),    kiln::cli::addCheckCommand(app),
      kiln::cli::addKnobsCommand(app),      kiln::cli::addTuneCommand(app),   kiln::cli::addCacheCommand(app),
      kiln::cli::addCalibrateCommand(app),  kiln::cli::addEvalCommand(app),   kiln::cli::addDebugCommand(app),
      kiln::cli::addCompletionCommand(app),
  };
  int rc = 2;
  try {
    app.parse(argc, argv);
    kiln::cli::setVerbosity(quiet ? -1 : verbose);
    for (auto &run : runners)
      if (int r = run(); r >= 0) {
        rc = r;
        break;
      }
  } catch (const CLI::ParseError &e) {
    rc = app.exit(e) == 0 ? 0 : 2;
  } catch (const std::bad_alloc &) {
    // Commands check sizes before allocating; this is the last line of defence, not a path.
    std::cerr << "kiln: error: out of memory\n";
    rc = 2;
  } catch (const std::exception &e) {
    std::cerr << "kiln: error: internal error: " << e.what() << "\n";
    rc = 2;
  }
  // A command that printed its result but could not deliver it has failed.
  if (!stdoutWritten() && rc != 2) rc = 2;
  safeErr.flushAll();
  std::cerr.rdbuf(rawErr);
  return rc;
}
