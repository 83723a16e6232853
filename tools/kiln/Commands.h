// The `kiln` subcommands. Each registers its options on the CLI11 app and returns its runner.
#pragma once

#include "compiler/importer/Importer.h"
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace kiln::cli {

using Runner = std::function<int()>;

Runner addPlanCommand(CLI::App &app);
Runner addImportCommand(CLI::App &app);
Runner addCompileCommand(CLI::App &app);
Runner addInspectCommand(CLI::App &app);
Runner addRunCommand(CLI::App &app);
Runner addCheckCommand(CLI::App &app);
Runner addKnobsCommand(CLI::App &app);
Runner addTuneCommand(CLI::App &app);
Runner addCacheCommand(CLI::App &app);
Runner addCalibrateCommand(CLI::App &app);
Runner addEvalCommand(CLI::App &app);
Runner addDebugCommand(CLI::App &app);
Runner addReportCommand(CLI::App &app);
// Last: it prints a completion script from every subcommand registered before it.
Runner addCompletionCommand(CLI::App &app);

// How much the tool says on stderr: -q (-1) errors only; 0 (default) also warnings, notes and
// progress; -v (1) also each phase's time; -vv (2) also MLIR's per-pass timing of compiles.
int verbosity();
void setVerbosity(int level);
// "kiln: warning: TEXT" / "kiln: note: TEXT" unless -q; "kiln: TEXT" at verbosity `level` or more.
void warning(const std::string &text);
void note(const std::string &text);
void info(int level, const std::string &text);

// Shared by commands that read a model.
struct ModelOptions {
  std::string model;
  std::string shapes;          // "x:1x3x224x224,..."
  std::string constantInputs;  // .npz of graph inputs bound at build time
  bool allowExternalOutside = false;
  void add(CLI::App &cmd);
  // Adds --allow-external-outside alone (for commands that name the model differently).
  void addExternalFlag(CLI::App &cmd);
  // The importer's options from --shapes, --constant-inputs and --allow-external-outside; the
  // error, else "".
  std::string importOptions(ImportOptions &io) const;
};

}  // namespace kiln::cli
