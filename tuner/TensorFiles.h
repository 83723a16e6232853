// Host tensors ⇄ .npz/.npy files (numpy's format) for `kiln run --inputs/--outputs`,
// `kiln check --reference` and the tuner's reference outputs.
#pragma once

#include "tuner/EngineRunner.h"

#include <string>
#include <vector>

namespace kiln::tuner {

// Every array of the file as a tensor (error for dtypes an engine cannot hold).
bool readTensors(const std::string &path, std::vector<HostTensor> &out, std::string &error);
// Writes the tensors as NAME.npy entries (bfloat16 has no numpy dtype: an error).
// `path` must not be one of `inputs` (io::writeNpz).
bool writeTensors(const std::string &path, const std::vector<HostTensor> &tensors, std::string &error,
                  const std::vector<std::string> &inputs = {});

}  // namespace kiln::tuner
