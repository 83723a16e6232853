// Helpers shared by kiln's passes.
#pragma once

#include "compiler/ir/Builders.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/knobs/Knob.h"
#include "compiler/target/GpuTarget.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>
#include <vector>
#include <string>

namespace kiln {

// Parses a pass's `route` option; on a bad route emits an error at `op` and returns false.
inline bool readRoute(const std::string &text, mlir::Operation *op, knobs::Route &route) {
  std::string error;
  if (knobs::Route::parse(text, &route, &error)) return true;
  op->emitError("invalid route option: " + error);
  return false;
}

// Set by kiln-half-safety on ops a half-precision route must run in fp32; the value says why.
// kiln-precision reads (and removes) it.
constexpr const char *kKeepFp32Attr = "kiln.keep_fp32";

// The pass option `arch` as a target; false (with an error on `op`) for an unknown architecture.
inline bool readTarget(const std::string &arch, mlir::Operation *op, target::GpuTarget &t) {
  std::string error;
  if (auto parsed = target::GpuTarget::parse(arch, error)) {
    t = *parsed;
    return true;
  }
  op->emitError("invalid arch option: " + error);
  return false;
}

// A ranked tensor value's static shape.
inline std::vector<int64_t> shapeOf(mlir::Value v) {
  auto s = mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
  return std::vector<int64_t>(s.begin(), s.end());
}

// The value of a one-element constant (kiln.constant), float or integer (Pow's exponent may be
// an integer tensor); nullopt for anything else.
inline std::optional<double> scalarValue(mlir::Value v) {
  auto t = constantValue(v, 1);
  if (!t || t->size() != 1) return std::nullopt;
  return t->get(0);
}

// A ranked tensor of float32.
inline bool isF32Tensor(mlir::Type t) {
  auto r = mlir::dyn_cast<mlir::RankedTensorType>(t);
  return r && r.getElementType().isF32();
}

// kiln.cast of `v` to `to` at the builder's insertion point; null (with `error`) if it cannot be
// inferred.
inline mlir::Operation *createCast(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, ops::DType to,
                                   std::string *error) {
  return createInferred<CastOp>(b, loc, {v}, {b.getNamedAttr("to", b.getI64IntegerAttr(int64_t(to)))}, error);
}

// An op's integer-array attribute `name` (a permutation, axes); empty if it has none.
inline std::vector<int64_t> intsAttr(mlir::Operation *op, llvm::StringRef name) {
  auto a = op->getAttrOfType<mlir::DenseI64ArrayAttr>(name);
  return a ? std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()) : std::vector<int64_t>{};
}

// The ONNX op type of a kiln op ("" for structural ops such as kiln.constant or kiln.fused).
inline std::string onnxTypeOf(mlir::Operation *op) {
  if (auto s = mlir::dyn_cast<ShapeInferenceOpInterface>(op)) return s.getOnnxOpType().str();
  return "";
}

// " [a, b, c]": the node names a remark about products left float mentions (five at most).
inline std::string nameList(const std::vector<std::string> &names) {
  std::string s;
  for (size_t k = 0; k < names.size() && k < 5; ++k) s += (k ? ", " : " [") + names[k];
  if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
  return s.empty() ? s : s + "]";
}

// An op that only moves its operand's elements (no arithmetic): it never needs a precision of
// its own (kiln-precision keeps it with its neighbours; `kiln debug precision --bisect` never
// lists it).
inline bool movesElementsOnly(mlir::Operation *op) {
  return mlir::isa<IdentityOp, ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp>(op);
}

// The products int8/fp8 quantization rewrites (and calibration therefore observes): Conv, MatMul,
// TransposedMatMul, operand 0 the activation, operand 1 the weight.
inline bool isQuantizableProduct(mlir::Operation *op) {
  std::string t = onnxTypeOf(op);
  return t == "Conv" || t == "MatMul" || t == "TransposedMatMul";
}

// The storage axis of such a product's weight (rank `rank`) that indexes its output channels:
// Conv 0, MatMul rank − 1, TransposedMatMul perm_b[rank − 1]; nullopt for other ops.
inline std::optional<int64_t> weightChannelAxis(mlir::Operation *op, int64_t rank) {
  std::string type = onnxTypeOf(op);
  if (type == "Conv") return 0;
  if (rank < 2 || (type != "MatMul" && type != "TransposedMatMul")) return std::nullopt;
  if (auto perm = op->getAttrOfType<mlir::DenseI64ArrayAttr>("perm_b")) return perm.asArrayRef()[size_t(rank - 1)];
  return rank - 1;
}

// Whether the 8-bit (int8/fp8) tensor-core kernel (codegen/kernels/MatMul.h) can run this MatMul,
// TransposedMatMul or Conv once its operands are 8-bit: A and B of rank >= 2, K a multiple of 16,
// A read along K, B read along K or a 2-D constant (`constantB`: repacked at build time); a
// 2-D, ungrouped Conv with C % 16 == 0 and constant weights (NHWC implicit GEMM). Quantization
// and QDQ lowering leave other products float, so `kiln eval` and engines agree.
inline bool eightBitKernelTakes(mlir::Operation *op, bool constantB) {
  std::string type = onnxTypeOf(op);
  if (type == "Conv") {  // the NHWC implicit GEMM: 2-D, not grouped, C % 16 == 0, constant W
    auto xt = mlir::dyn_cast<mlir::RankedTensorType>(op->getOperand(0).getType());
    auto g = op->getAttrOfType<mlir::IntegerAttr>("group");
    return constantB && xt && xt.getRank() == 4 && (!g || g.getInt() == 1) && xt.getDimSize(1) % 16 == 0;
  }
  if (type != "MatMul" && type != "TransposedMatMul") return false;
  auto at = mlir::dyn_cast<mlir::RankedTensorType>(op->getOperand(0).getType());
  auto bt = mlir::dyn_cast<mlir::RankedTensorType>(op->getOperand(1).getType());
  if (!at || !bt || at.getRank() < 2 || bt.getRank() < 2) return false;
  auto perm = [&](const char *name, int64_t rank) {
    std::vector<int64_t> p;
    if (auto a = op->getAttrOfType<mlir::DenseI64ArrayAttr>(name))
      p.assign(a.asArrayRef().begin(), a.asArrayRef().end());
    if (p.empty())
      for (int64_t d = 0; d < rank; ++d) p.push_back(d);
    return p;
  };
  int64_t ra = at.getRank(), rb = bt.getRank();
  std::vector<int64_t> pa = perm("perm_a", ra), pb = perm("perm_b", rb);
  int64_t k = at.getDimSize(pa[size_t(ra - 1)]);
  bool aAlongK = pa[size_t(ra - 1)] == ra - 1;
  bool bAlongK = pb[size_t(rb - 2)] == rb - 1 || (constantB && rb == 2);
  return aAlongK && bAlongK && k % 16 == 0;
}

}  // namespace kiln
