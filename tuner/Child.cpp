#include "tuner/Child.h"

#include "compiler/support/Files.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kiln::tuner {

bool spawn(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
           const std::string &outPath, const std::string &errPath, double timeoutSeconds, Child &child,
           std::string &error, bool ownProcessGroup) {
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork failed: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    if (ownProcessGroup) setpgid(0, 0);  // Ctrl-C on the terminal stops the tuner, which then ends the candidate
    int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    for (auto &[k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(args[0], args.data());  // (an absolute path runs as given; a bare name is looked up on PATH)
    dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  child.pid = pid;
  child.outPath = outPath;
  child.errPath = errPath;
  child.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeoutSeconds * 1000));
  return true;
}

bool finished(Child &child, int &exitCode, bool &timedOut) {
  int status = 0;
  pid_t r = waitpid(child.pid, &status, WNOHANG);
  if (r == 0) {
    if (std::chrono::steady_clock::now() < child.deadline) return false;
    kill(-child.pid, SIGKILL);
    kill(child.pid, SIGKILL);
    waitpid(child.pid, &status, 0);
    timedOut = true;
  } else {
    timedOut = false;
  }
  exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  child.pid = -1;
  return true;
}

void wait(Child &child, int &exitCode, bool &timedOut) {
  while (!finished(child, exitCode, timedOut)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

std::string selfExecutable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : "kiln";
}

std::string readText(const std::string &path, size_t limit) {
  std::string s, ignored;
  support::readFile(path, s, ignored, "", uint64_t(1) << 30);  // (the tuner's own files: best effort)
  if (s.size() > limit) s = s.substr(s.size() - limit);
  return s;
}

}  // namespace kiln::tuner
