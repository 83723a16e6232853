// The reference semantics of every kiln op, in one registry keyed by ONNX op type ("Conv", "Add").
//
// Each op has a shape function (result dtypes and shapes from operand types, attributes and the
// values of operands that are constants), a reference kernel (the CPU evaluator), and a FLOP count
// (for `kiln plan`). The MLIR dialect, the constant folder, `kiln plan`, the conformance runner and
// the kernel tests all read this one table, so an op's meaning is written once.
//
// Semantics are those of the latest ONNX opset (≤ 21) of each op; the importer normalises older
// opsets (axes given as attributes vs inputs, Softmax's 2-D coercion before opset 13) before
// anything here sees them. Operations are registered by the file that implements them
// (KILN_REGISTER_OP), never in a central list.
//
// Errors: kernels and shape functions throw OpError (via `check`/`fail`); the public entry points
// below catch it and return the message, so MLIR code (built without exceptions) never sees one.
#pragma once

#include "compiler/ops/Tensor.h"

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace kiln::ops {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                               std::vector<std::string>, Tensor>;

// ONNX-style attributes by name; typed getters with defaults, and checks for required ones.
class Attrs {
 public:
  std::map<std::string, AttrValue> values;

  bool has(const std::string &name) const { return values.count(name) != 0; }
  int64_t getInt(const std::string &name, int64_t dflt) const;
  int64_t getInt(const std::string &name) const;  // required
  double getFloat(const std::string &name, double dflt) const;
  std::string getString(const std::string &name, const std::string &dflt) const;
  std::vector<int64_t> getInts(const std::string &name, const std::vector<int64_t> &dflt) const;
  std::vector<int64_t> getInts(const std::string &name) const;  // required
  std::vector<double> getFloats(const std::string &name, const std::vector<double> &dflt) const;
  const Tensor *getTensor(const std::string &name) const;  // nullptr if absent
  void set(const std::string &name, AttrValue v) { values[name] = std::move(v); }
};

struct TensorType {
  DType dtype = DType::Undefined;
  Shape shape;
  bool operator==(const TensorType &o) const { return dtype == o.dtype && shape == o.shape; }
};

// What a shape function sees. Optional ONNX inputs that are absent appear as a TensorType with
// dtype Undefined and a null value (so operand positions keep their ONNX meaning).
struct ShapeContext {
  std::vector<TensorType> inputs;
  std::vector<const Tensor *> values;  // per input: the constant value, or nullptr if not known
  const Attrs &attrs;
  int numOutputs;  // how many results the node declares
  bool present(size_t idx) const { return idx < inputs.size() && inputs[idx].dtype != DType::Undefined; }
};

struct EvalContext {
  std::vector<const Tensor *> inputs;  // nullptr for absent optional inputs
  const Attrs &attrs;
  int numOutputs;
  bool present(size_t idx) const { return idx < inputs.size() && inputs[idx] != nullptr; }
  const Tensor &in(size_t idx) const;  // checks presence
};

using ShapeFn = std::function<std::vector<TensorType>(const ShapeContext &)>;
using EvalFn = std::function<std::vector<Tensor>(const EvalContext &)>;
// Multiply-adds count as 2 FLOPs; elementwise ops count 1 per output element.
using FlopsFn = std::function<int64_t(const ShapeContext &, const std::vector<TensorType> &outputs)>;

struct OpDef {
  std::string name;  // ONNX op type
  ShapeFn shape;
  EvalFn eval;
  FlopsFn flops;  // may be empty: 0 FLOPs (pure data movement)
};

struct OpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string &msg);
inline void check(bool cond, const std::string &msg) {
  if (!cond) fail(msg);
}

// Shape functions that need an operand's value (Reshape's shape, Slice's starts…) fail with a
// message containing this phrase when it is not known; the verifier then accepts the declared
// result type (the IR before constant folding), while the importer reports the error.
constexpr const char *kNeedsConstantPhrase = "compile-time constant";
bool needsConstant(const std::string &error);

// Registry.
void registerOp(OpDef def);
const OpDef *findOp(const std::string &name);
std::vector<std::string> registeredOps();  // sorted

// Entry points that never throw: std::nullopt on success, else the error message.
std::optional<std::string> inferTypes(const std::string &op, const ShapeContext &ctx, std::vector<TensorType> &out);
std::optional<std::string> evaluate(const std::string &op, const EvalContext &ctx, std::vector<Tensor> &out);
int64_t countFlops(const std::string &op, const ShapeContext &ctx, const std::vector<TensorType> &outputs);

struct OpRegistrar {
  explicit OpRegistrar(OpDef def) { registerOp(std::move(def)); }
};
#define KILN_OP_CONCAT2(a, b) a##b
#define KILN_OP_CONCAT(a, b) KILN_OP_CONCAT2(a, b)
// KILN_REGISTER_OP({"Relu", shapeFn, evalFn, flopsFn});  at namespace scope in the defining file.
#define KILN_REGISTER_OP(...)                                                                                          \
  static ::kiln::ops::OpRegistrar KILN_OP_CONCAT(kiln_op_registrar_, __LINE__)(::kiln::ops::OpDef __VA_ARGS__)

// Shared helpers for kernels and shape functions.
Shape broadcastShapes(const std::vector<Shape> &shapes);  // numpy rules; fails if incompatible
// Index into `s` (broadcast to `out`) of the element at flat output index `outIdx`.
int64_t broadcastIndex(const Shape &s, const Shape &out, int64_t outIdx);
int64_t normalizeAxis(int64_t axis, int64_t rank);  // [-rank, rank) → [0, rank), fails otherwise

}  // namespace kiln::ops
