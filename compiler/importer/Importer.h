// ONNX → kiln dialect. Static shapes only: symbolic input dimensions must be given by --shapes
// (an input's shape, or the dimension's value by name).
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "compiler/ops/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct ImportOptions {
  // Input shape overrides by graph input name ("x" → {1,3,224,224}).
  std::map<std::string, std::vector<int64_t>> shapes;
  // Values of symbolic dimensions by name ("batch" → 8), for the inputs `shapes` does not name.
  std::map<std::string, int64_t> dims;
  // Ops whose operands are all constants are folded while importing (Shape→Gather→Concat→
  // Reshape chains must be, for Reshape's shape to be known); results above this many elements
  // stay as ops.
  int64_t foldLimit = 1 << 22;
  // Graph inputs whose values are fixed at build time (like TensorRT's shape tensors): they
  // become constants, so ops whose result shapes depend on them (Reshape, Resize, Slice…) have
  // static shapes. The tensor's dtype and shape must match the declared input.
  std::map<std::string, ops::Tensor> constantInputs;
  // External data may lie outside the model's folder (absolute locations, '..', symbolic links
  // leading out): `--allow-external-outside`. Off, a model can only make kiln read files in its
  // own folder.
  bool allowExternalOutside = false;
};

struct ImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string error;  // non-empty on failure; names the node or tensor
  // Every node kiln does not support, as "name (domain::OpType): reason" (import still succeeds).
  std::vector<std::string> unsupported;
  // Exporter quirks that onnxruntime accepts and kiln works around (a declared output shape the
  // graph does not compute, a dimension declared -1): one line each, naming the tensor.
  std::vector<std::string> warnings;
  // Each graph input's declared symbolic dims (ONNX dim_param, "" for a fixed or unnamed axis).
  std::map<std::string, std::vector<std::string>> inputDimNames;
};

// Parses --shapes into `opts`: "x:1x3x224x224,mask:1x128" (an input's whole shape) and
// "batch=8,sequence=128" (a symbolic dimension by name, for every input that has it), mixed as
// needed, ','- or ';'-separated. Returns "" or an error.
std::string parseShapeOverrides(const std::string &spec, ImportOptions &opts);

void registerKilnDialects(mlir::MLIRContext &ctx);

ImportResult importModelFile(const std::string &path, mlir::MLIRContext &ctx, const ImportOptions &opts = {});
// From bytes in memory (binary or text format); external data is read relative to `baseDir`.
ImportResult importModelBytes(const std::string &data, bool text, const std::string &baseDir, mlir::MLIRContext &ctx,
                              const ImportOptions &opts = {});

}  // namespace kiln
