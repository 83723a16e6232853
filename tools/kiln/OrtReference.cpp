#include "tools/kiln/OrtReference.h"
#include "tools/kiln/OrtReferenceScript.h"  // kOrtReferenceScript: tools/kiln/ort_reference.py (generated)

#include "compiler/ops/Tensor.h"
#include "tuner/Child.h"
#include "tuner/TensorFiles.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kiln::cli {

namespace {

constexpr double kOrtSeconds = 3600;  // (onnxruntime on the CPU, graph optimizations off)

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
  tuner::Child child;
  int rc = 0;
  bool timedOut = false;
  if (!tuner::spawn({py, "-c", kOrtReferenceScript, model, dir + "/inputs.npz", dir + "/outputs.npz", marks}, {},
                    "/dev/null", errFile, kOrtSeconds, child, error, /*ownProcessGroup=*/false)) {
    error = "--ort: " + error;
    return false;
  }
  tuner::wait(child, rc, timedOut);
  if (timedOut) {
    error = "--ort: onnxruntime took more than " + std::to_string(int(kOrtSeconds)) + " s on " + model;
    return false;
  }
  if (rc != 0) {
    std::string why = lastLines(errFile, 4);
    if (why.find("No module named") != std::string::npos || why.find("cannot run " + py) != std::string::npos)
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
