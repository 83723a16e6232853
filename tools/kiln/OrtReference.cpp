#include "tools/kiln/OrtReference.h"
#include "tools/kiln/OrtReferenceScript.h"  // kOrtReferenceScript: tools/kiln/ort_reference.py (generated)

#include "compiler/ops/Tensor.h"
#include "tuner/TensorFiles.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char **environ;

namespace kiln::cli {

namespace {

std::string python() {
  if (const char *p = std::getenv("KILN_PYTHON"); p && *p) return p;
  std::string venv;
  if (const char *v = std::getenv("KILN_VENV"); v && *v)
    venv = v;
  else if (const char *home = std::getenv("HOME"); home && *home)
    venv = std::string(home) + "/.cache/kiln/venv";
  if (!venv.empty() && access((venv + "/bin/python").c_str(), X_OK) == 0) return venv + "/bin/python";
  return "python3";
}

// Runs argv with stderr to `errFile`; its exit status, or -1 when it could not start.
int runProcess(const std::vector<std::string> &args, const std::string &errFile) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  std::vector<char *> argv;
  for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string lastLines(const std::string &path, size_t n) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);)
    if (!l.empty()) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "\n  " + lines[i];
  return out;
}

}  // namespace

bool ortOutputs(const std::string &model, const std::vector<tuner::HostTensor> &inputs,
                const std::vector<std::string> &markedNodes, std::vector<tuner::HostTensor> &outputs,
                std::string &error) {
  char tmpl[] = "/tmp/kiln-ort-XXXXXX";
  if (!mkdtemp(tmpl)) {
    error = "--ort: cannot create a work folder in /tmp";
    return false;
  }
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  std::vector<tuner::HostTensor> feeds = inputs;
  for (tuner::HostTensor &t : feeds)  // (numpy has no bfloat16: sent as float32, exactly)
    if (t.dtype == int32_t(ops::DType::BF16)) tuner::convertFloat(t, int32_t(ops::DType::F32));
  if (!tuner::writeTensors(dir + "/inputs.npz", feeds, error)) {
    error = "--ort: " + error;
    return false;
  }
  std::string marks;
  for (const std::string &m : markedNodes) marks += m + "\n";
  const std::string py = python(), errFile = dir + "/stderr.txt";
  int rc =
      runProcess({py, "-c", kOrtReferenceScript, model, dir + "/inputs.npz", dir + "/outputs.npz", marks}, errFile);
  if (rc != 0) {
    std::string why = lastLines(errFile, 4);
    if (why.find("No module named 'onnxruntime'") != std::string::npos ||
        why.find("No module named 'onnx'") != std::string::npos || rc == -1)
      error = "--ort needs onnxruntime, onnx and numpy in " + py +
              " (pip install onnxruntime onnx numpy, or set KILN_PYTHON to a Python that has them)";
    else
      error = "--ort: onnxruntime failed on " + model + ":" + why;
    return false;
  }
  if (!tuner::readTensors(dir + "/outputs.npz", outputs, error)) {
    error = "--ort: " + error;
    return false;
  }
  return true;
}

}  // namespace kiln::cli
