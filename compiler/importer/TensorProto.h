// Reading ONNX TensorProtos (inline typed fields, raw_data, or external data files).
#pragma once

#include "compiler/ops/Tensor.h"

#include <string>
#include <vector>

namespace onnx {
class TensorProto;
class ModelProto;
}  // namespace onnx

namespace kiln {

// A tensor's dtype, shape and raw little-endian element bytes.
struct RawTensor {
  ops::DType dtype = ops::DType::Undefined;
  ops::Shape shape;
  std::vector<char> bytes;
};

// Decodes `proto`. External data is read from `baseDir` (the model's folder): its location must be
// relative, without a '..' component, and resolve beneath that folder (a symbolic link may point
// elsewhere inside it, never out), to a regular file (a FIFO or device is refused without
// blocking) whose size covers offset + length. `allowExternalOutside` lifts the folder rules
// (not the file checks). Returns "" on success, else the reason (naming the location).
std::string readTensorProto(const onnx::TensorProto &proto, const std::string &baseDir, RawTensor &out,
                            bool allowExternalOutside = false);

// Loads a model from binary protobuf or, for `.onnxtxt`/`.pbtxt`/`.txt`, protobuf text format.
// Returns "" on success, else the reason (names the file).
std::string loadModelFile(const std::string &path, onnx::ModelProto &model);
// The same from bytes in memory; `name` is used in messages.
std::string parseModel(const std::string &data, bool text, const std::string &name, onnx::ModelProto &model);
// A TensorProto file (as in the ONNX test data sets' input_0.pb).
std::string loadTensorFile(const std::string &path, ops::Tensor &out, std::string *name = nullptr);

}  // namespace kiln
