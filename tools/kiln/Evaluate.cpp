#include "tools/kiln/Evaluate.h"
#include "tools/kiln/ModelLoading.h"

#include "compiler/ir/TensorConversion.h"

#include <algorithm>
#include <iostream>

namespace kiln::cli {

mlir::func::FuncOp lowerForEvaluation(const ModelOptions &opts, mlir::MLIRContext &ctx,
                                      const std::function<void(mlir::OpPassManager &)> &pipeline,
                                      codegen::ModelBuild &lowered, bool notes) {
  ImportOptions io;
  if (auto e = opts.importOptions(io); !e.empty()) {
    std::cerr << "kiln: error: " << e << "\n";
    return nullptr;
  }
  lowered = codegen::lowerModelWith(opts.model, io, ctx, pipeline);
  if (notes) {
    for (auto &w : lowered.import.warnings) warning(w);
    for (auto &r : lowered.remarks) note(r);
  }
  if (!lowered.ok()) {
    std::cerr << "kiln: error: " << opts.model << ": " << lowered.error << "\n";
    return nullptr;
  }
  return (*lowered.import.module).lookupSymbol<mlir::func::FuncOp>("main");
}

std::vector<tuner::HostTensor> modelInputs(mlir::func::FuncOp f) {
  std::vector<tuner::HostTensor> r;
  for (unsigned k = 0; k < f.getNumArguments(); ++k) {
    auto name = f.getArgAttrOfType<mlir::StringAttr>(k, "kiln.name");
    ops::TensorType t = tensorTypeOf(f.getArgument(k).getType());
    r.push_back({name ? name.str() : "input" + std::to_string(k), int32_t(t.dtype), t.shape, {}});
  }
  return r;
}

bool evaluateModel(mlir::func::FuncOp f, const std::vector<tuner::HostTensor> &inputs,
                   std::vector<tuner::HostTensor> &outputs, std::string &error, const OpObserver &observe,
                   const ResultObserver &onResults) {
  std::vector<ops::Tensor> in, out;
  for (const tuner::HostTensor &want : modelInputs(f)) {
    auto it =
        std::find_if(inputs.begin(), inputs.end(), [&](const tuner::HostTensor &t) { return t.name == want.name; });
    if (it == inputs.end()) {
      error = "no value for the model's input '" + want.name + "'";
      return false;
    }
    if (it->dtype != want.dtype || it->shape != want.shape) {
      error = "input '" + want.name + "' is " + tuner::dtypeName(it->dtype) + " " + ops::shapeString(it->shape) +
              ", the model takes " + tuner::dtypeName(want.dtype) + " " + ops::shapeString(want.shape);
      return false;
    }
    in.push_back(ops::tensorFromBytes(static_cast<ops::DType>(it->dtype), it->shape, it->data.data(), it->data.size()));
  }
  if (auto e = evaluateFunction(f, in, out, observe, onResults)) {
    error = "evaluation: " + *e;
    return false;
  }
  outputs.clear();
  for (unsigned k = 0; k < out.size(); ++k) {
    auto name = f.getResultAttrOfType<mlir::StringAttr>(k, "kiln.name");
    outputs.push_back({name ? name.str() : "output" + std::to_string(k), int32_t(out[k].dtype), out[k].shape,
                       ops::tensorToBytes(out[k])});
  }
  return true;
}

}  // namespace kiln::cli
