// onnxruntime as a reference (`kiln check --ort`): the model run by onnxruntime's CPU provider in
// a Python process, since onnxruntime is a PyPI package (models/realmodels/requirements.txt).
// The interpreter: $KILN_PYTHON, else the virtual environment tools/setup-debian.sh makes
// ($KILN_VENV, default ~/.cache/kiln/venv), else python3 on PATH.
#pragma once

#include "tuner/EngineRunner.h"

#include <string>
#include <vector>

namespace kiln::cli {

// The model's outputs on `inputs` (bound by name; float16/bfloat16 arrays of an engine built with
// --io-dtype are converted to the model's declared float type), named as the graph names them.
// `markedNodes`: nodes (kiln's names: the node's name, else its first output's, else its op type)
// whose first output is returned too, named by the node. False with `error` (onnxruntime
// missing, the model refused) otherwise.
bool ortOutputs(const std::string &model, const std::vector<tuner::HostTensor> &inputs,
                const std::vector<std::string> &markedNodes, std::vector<tuner::HostTensor> &outputs,
                std::string &error);

}  // namespace kiln::cli
