#include "tuner/TensorFiles.h"

#include "compiler/io/Npz.h"

namespace kiln::tuner {

bool readTensors(const std::string &path, std::vector<HostTensor> &out, std::string &error) {
  io::Npz npz;
  if (!io::readNpz(path, npz, error)) return false;
  for (auto &[name, a] : npz.arrays) {
    int32_t dtype = io::onnxDtypeForDescr(a.descr);
    if (dtype == 0) {
      error = path + ": array '" + name + "' has dtype " + a.descr + ", which an engine cannot hold";
      return false;
    }
    out.push_back({name, dtype, a.shape, a.data});
  }
  return true;
}

bool writeTensors(const std::string &path, const std::vector<HostTensor> &tensors, std::string &error,
                  const std::vector<std::string> &inputs) {
  io::Npz npz;
  for (const HostTensor &t : tensors) {
    std::string descr = io::descrForOnnxDtype(t.dtype);
    if (descr.empty()) {
      error = "output '" + t.name + "' has dtype " + std::to_string(t.dtype) + ", which numpy cannot hold";
      return false;
    }
    npz.arrays.push_back({t.name, io::NpyArray{descr, t.shape, t.data}});
  }
  return io::writeNpz(path, npz, error, inputs);
}

}  // namespace kiln::tuner
