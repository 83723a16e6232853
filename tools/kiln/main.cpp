// The `kiln` command-line tool.
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>

namespace {

// --log-file: what goes to stderr also goes to the file, each line with a UTC time stamp.
class TeeBuf : public std::streambuf {
 public:
  TeeBuf(std::streambuf *out, std::ostream &log) : out_(out), log_(log) {}
  ~TeeBuf() override {
    if (!line_.empty()) log_ << stamp() << line_ << "\n";  // (a last line without its newline)
    log_.flush();
  }

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    char ch = char(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char *s, std::streamsize n) override {
    line_.append(s, size_t(n));
    for (size_t nl; (nl = line_.find('\n')) != std::string::npos; line_.erase(0, nl + 1))
      log_ << stamp() << line_.substr(0, nl + 1);
    return out_->sputn(s, n);
  }
  int sync() override {  // (std::cerr syncs after every <<: whole lines only go to the log)
    log_.flush();
    return out_->pubsync();
  }

 private:
  static std::string stamp() {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    return buf;
  }
  std::streambuf *out_;
  std::ostream &log_;
  std::string line_;
};

// Why `path` may not take the log: kiln's own binary formats (a model, engine, arrays, a cache),
// a file that is not text, which appending would damage, or something that is not a regular
// file (a FIFO would block).
std::string logFileProblem(const std::string &path) {
  for (const char *ext : {".onnx", ".onnxtxt", ".kiln", ".npz", ".npy", ".calib", ".db", ".html", ".json"})
    if (path.size() >= std::strlen(ext) && path.compare(path.size() - std::strlen(ext), std::string::npos, ext) == 0)
      return "'" + path + "' looks like one of kiln's inputs or outputs, not a log";
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";  // (made by the append)
  if (!S_ISREG(st.st_mode)) return "'" + path + "' is not a regular file";
  std::ifstream f(path, std::ios::binary);
  char head[4096];
  f.read(head, sizeof head);
  if (std::memchr(head, 0, size_t(f.gcount()))) return "'" + path + "' exists and is not a text file";
  return "";
}

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
  std::string logFile;
  app.add_option("--log-file", logFile,
                 "Also append the messages kiln prints on stderr (errors, warnings, notes, -v lines, the tuner's log; "
                 "not progress bars) to this file, each line time-stamped");
  app.fallthrough();  // (so they may also follow the subcommand)
  std::vector<kiln::cli::Runner> runners = {
      kiln::cli::addPlanCommand(app),      kiln::cli::addImportCommand(app),     kiln::cli::addCompileCommand(app),
      kiln::cli::addInspectCommand(app),   kiln::cli::addRunCommand(app),        kiln::cli::addCheckCommand(app),
      kiln::cli::addKnobsCommand(app),     kiln::cli::addTuneCommand(app),       kiln::cli::addCacheCommand(app),
      kiln::cli::addCalibrateCommand(app), kiln::cli::addEvalCommand(app),       kiln::cli::addDebugCommand(app),
      kiln::cli::addReportCommand(app),    kiln::cli::addCompletionCommand(app),
  };
  int rc = 2;
  std::ofstream log;
  std::unique_ptr<TeeBuf> tee;
  try {
    app.parse(argc, argv);
    kiln::cli::setVerbosity(quiet ? -1 : verbose);
    std::string logProblem = logFile.empty() ? "" : logFileProblem(logFile);
    if (!logFile.empty() && logProblem.empty() && !(log.open(logFile, std::ios::app), log))
      logProblem = "cannot open '" + logFile + "' for appending";
    if (!logProblem.empty()) {
      std::cerr << "kiln: error: --log-file: " << logProblem << "\n";
      runners.clear();
    } else if (log.is_open()) {
      tee = std::make_unique<TeeBuf>(&safeErr, log);
      std::cerr.rdbuf(tee.get());
    }
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
  if (tee) std::cerr.rdbuf(&safeErr), tee.reset();
  safeErr.flushAll();
  std::cerr.rdbuf(rawErr);
  return rc;
}
