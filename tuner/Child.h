// Child processes for isolated measurement: a candidate engine runs in `kiln run` exec'd in a
// fresh process (its own process group, so a terminal's Ctrl-C reaches only the tuner), with
// stdout and stderr in files and a wall-clock deadline. A crash, a hang or a corrupted CUDA
// context costs that one child.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <sys/types.h>

namespace kiln::tuner {

struct Child {
  pid_t pid = -1;
  std::chrono::steady_clock::time_point deadline;
  std::string outPath, errPath;
};

// Starts argv[0] (a path, or a name looked up on PATH) with the extra environment variables.
// False with `error` if it cannot fork; an argv[0] that cannot be executed ends the child with
// status 127 and "cannot run ARGV0: REASON" on its stderr. `ownProcessGroup`: the child leads
// a process group of its own (the tuner's measurements), else it stays in the caller's, so a
// terminal's Ctrl-C reaches it too (a helper the caller waits for).
bool spawn(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
           const std::string &outPath, const std::string &errPath, double timeoutSeconds, Child &child,
           std::string &error, bool ownProcessGroup = true);

// Non-blocking: true once the child has ended (killed at its deadline: timedOut). exitCode is
// the exit status, or 128 + signal.
bool finished(Child &child, int &exitCode, bool &timedOut);

// Blocks until the child ends.
void wait(Child &child, int &exitCode, bool &timedOut);

// The kiln executable itself (/proc/self/exe), to run `kiln run` as a child.
std::string selfExecutable();

std::string readText(const std::string &path, size_t limit = 1 << 20);

}  // namespace kiln::tuner
