// fp16 that stays right (see Passes.td): marks the ops a half-precision route must keep in fp32,
// by pattern and, given inputs, by the ranges the CPU evaluator sees. kiln-precision then runs
// them in fp32 (islands) and says why.
#include "compiler/eval/Evaluator.h"
#include "compiler/io/Npz.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <cstdio>

namespace kiln {
#define GEN_PASS_DEF_HALFSAFETY
#include "passes/Passes.h.inc"

KILN_KNOB(kHalfSafety, {"precision.safety",
                        {"on", "off"},
                        "on",
                        "Half-precision routes keep in fp32 what fp16 would get wrong: sums of squares (variances, "
                        "power spectra), exp feeding a sum, 1 - p of probabilities, and (with --check-inputs) every "
                        "op whose values leave fp16's range on those inputs; node.<name>.precision overrides it",
                        knobs::Tier::Mixed,
                        "passes/HalfSafety.cpp"});

namespace {

using namespace mlir;

constexpr double kF16Max = 65504.0;
constexpr double kF16MinSubnormal = 5.96e-8;  // smaller magnitudes round to zero

// The op defining `v`, seen through ops that only move data (reshapes, transposes, casts).
Operation *producerThroughLayout(Value v) {
  Operation *d = v.getDefiningOp();
  while (d && isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp, IdentityOp, CastOp>(d))
    d = d->getOperand(0).getDefiningOp();
  return d;
}

bool isConstantNear(Value v, double want, double tol) {
  auto c = constantValue(v);
  if (!c || c->size() == 0) return false;
  for (int64_t k = 0; k < c->size(); ++k)
    if (std::fabs(c->get(k) - want) > tol) return false;
  return true;
}

// x², as exporters write it: Pow(x, 2), Mul(x, x).
bool isSquare(Operation *op) {
  if (isa<PowOp>(op)) return isConstantNear(op->getOperand(1), 2.0, 0.0);
  if (isa<MulOp>(op)) return op->getOperand(0) == op->getOperand(1);
  return false;
}

bool isReduction(Operation *op) {
  return isa<ReduceSumOp, ReduceMeanOp, ReduceSumSquareOp, ReduceL2Op, ReduceL1Op, ReduceLogSumOp, ReduceLogSumExpOp>(
      op);
}

// Ops that end a statistics chain: their results are back in fp16's range (a standard deviation,
// a logarithm, a reciprocal square root).
bool endsStatistics(Operation *op) {
  return isa<SqrtOp, LogOp, ReciprocalOp>(op) || (isa<PowOp>(op) && (isConstantNear(op->getOperand(1), 0.5, 0.0) ||
                                                                     isConstantNear(op->getOperand(1), -0.5, 0.0)));
}

class Marker {
 public:
  explicit Marker(const knobs::Route &route) : route_(route) {}

  // Marks `op` unless the route sets its precision explicitly (then the user decides).
  void mark(Operation *op, const std::string &why) {
    if (op->hasAttr(kKeepFp32Attr) || explicitPrecision(op)) return;
    op->setAttr(kKeepFp32Attr, StringAttr::get(op->getContext(), why));
  }

  // A sum of squares and the statistics computed from it (a decomposed LayerNorm's variance,
  // RMSNorm, an L2 norm, a power spectrum re² + im²), up to where the values are back in range.
  void statistics(Operation *square) {
    const std::string why =
        "a sum of squares (normalisation statistics or a power spectrum): in fp16 it overflows above 65504 and "
        "squares below 6e-8 flush to zero";
    llvm::SetVector<Operation *> chain;
    chain.insert(square);
    for (size_t i = 0; i < chain.size(); ++i) {
      Operation *op = chain[i];
      if (i > 0 && endsStatistics(op)) continue;  // (the end is marked, its users are not)
      for (Operation *u : op->getUsers())
        if (isReduction(u) || isSquare(u) || isa<AddOp, SubOp, MulOp, DivOp>(u) || endsStatistics(u)) chain.insert(u);
    }
    // Only chains that reach a reduction or end in a logarithm are statistics (x² alone in an
    // activation stays half).
    bool statisticsChain = llvm::any_of(chain, [](Operation *op) { return isReduction(op) || isa<LogOp>(op); });
    if (!statisticsChain) return;
    for (Operation *op : chain) mark(op, why);
  }

  // exp feeding a sum (a softmax or log-sum-exp written out): exp overflows fp16 above 11.
  void expSum(Operation *exp) {
    for (Operation *u : exp->getUsers())
      if (isReduction(u) || isa<DivOp>(u)) {
        const std::string why =
            "exp feeding a sum (a softmax or log-sum-exp written out): fp16 overflows for inputs above 11";
        mark(exp, why);
        mark(u, why);
        for (Operation *v : u->getUsers())
          if (isa<LogOp, DivOp>(v)) mark(v, why);
      }
  }

  // 1 - p of probabilities: fp16 rounds 0.99998921 to 1.0, and 1 - p to 0.
  void oneMinus(SubOp sub) {
    if (!isConstantNear(sub.getA(), 1.0, 1e-6)) return;
    Operation *p = producerThroughLayout(sub.getB());
    if (!p || !isa<SigmoidOp, SoftmaxOp>(p)) return;
    const std::string why = "1 - p of a probability near 1: fp16 rounds 0.99998921 to 1.0";
    mark(p, why);
    mark(sub, why);
    for (Operation *u : sub->getUsers())
      if (isa<LogOp, DivOp>(u)) mark(u, why);
  }

 private:
  bool explicitPrecision(Operation *op) {
    std::string node = nodeName(op);
    return !node.empty() && route_.values().count("node." + node + ".precision");
  }
  const knobs::Route &route_;
};

// Evaluates `f` on the inputs in `path` and marks the producer of every value that leaves fp16's
// range there: above 65504, or mostly below what fp16 represents (flushed to zero).
LogicalResult markByRange(func::FuncOp f, const std::string &path, Marker &marker) {
  io::Npz npz;
  std::string error;
  if (!io::readNpz(path, npz, error)) return f.emitError("--check-inputs: " + error);
  std::vector<ops::Tensor> inputs;
  Block &body = f.getBody().front();
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    auto name = f.getArgAttrOfType<StringAttr>(k, "kiln.name");
    const io::NpyArray *a = name ? npz.find(name.str()) : nullptr;
    if (!a)
      return f.emitError("--check-inputs " + path + " has no array for input '" + (name ? name.str() : "?") + "'");
    ops::TensorType t = tensorTypeOf(body.getArgument(k).getType());
    if (io::onnxDtypeForDescr(a->descr) != int32_t(t.dtype) || a->shape != t.shape)
      return f.emitError("--check-inputs: array '" + name.str() + "' is not " + ops::dtypeName(t.dtype) + " " +
                         ops::shapeString(t.shape));
    inputs.push_back(ops::tensorFromBytes(t.dtype, t.shape, a->data.data(), a->data.size()));
  }
  std::vector<ops::Tensor> outputs;
  auto err = evaluateFunction(f, inputs, outputs, nullptr, [&](Operation *op, const std::vector<ops::Tensor> &results) {
    if (isa<FusedOp>(op)) return;
    for (const ops::Tensor &r : results) {
      if (!ops::isFloat(r.dtype) || r.size() == 0) continue;
      double maxAbs = 0;
      int64_t nonzero = 0, flushed = 0;
      for (int64_t k = 0; k < r.size(); ++k) {
        double a = std::fabs(r.f[size_t(k)]);
        if (!std::isfinite(a)) continue;
        maxAbs = std::max(maxAbs, a);
        if (a != 0) ++nonzero, flushed += a < kF16MinSubnormal;
      }
      char why[160];
      if (maxAbs > kF16Max) {
        // Its users read it in fp32 too: the cast down to fp16 happens after an op that brings
        // the values back into range.
        std::snprintf(why, sizeof why, "reaches %.3g on the check inputs, beyond fp16's 65504", maxAbs);
        marker.mark(op, why);
        std::snprintf(why, sizeof why, "reads values that reach %.3g on the check inputs, beyond fp16's 65504", maxAbs);
        for (Operation *u : op->getUsers())
          if (!isa<func::ReturnOp>(u)) marker.mark(u, why);
      } else if (nonzero > 0 && flushed * 2 > nonzero) {
        std::snprintf(why, sizeof why, "%lld of its %lld nonzero values on the check inputs are below fp16's 6e-8",
                      static_cast<long long>(flushed), static_cast<long long>(nonzero));
        marker.mark(op, why);
      }
    }
  });
  if (err) return f.emitError("--check-inputs: the CPU evaluator failed: " + *err);
  return success();
}

struct HalfSafetyPass : impl::HalfSafetyBase<HalfSafetyPass> {
  using HalfSafetyBase::HalfSafetyBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    knobs::Route r;
    if (!readRoute(route, f, r)) return signalPassFailure();
    std::string p = r.get(*knobs::findKnob("precision"));
    if (p != "fp16" && p != "bf16" && p != "int8" && p != "fp8") return;
    // bf16 has fp32's range: only its 8-bit mantissa matters (1 - p); fp16 (also the rest of an
    // int8/fp8 route) overflows above 65504 and flushes below 6e-8.
    const bool fp16 = p != "bf16";
    Marker marker(r);
    SmallVector<Operation *> ops;
    f.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : r.get(kHalfSafety) == "on" ? ops : SmallVector<Operation *>()) {
      if (fp16 && (isSquare(op) || isa<ReduceSumSquareOp, ReduceL2Op>(op)))
        marker.statistics(op);
      else if (fp16 && isa<ExpOp>(op))
        marker.expSum(op);
      else if (auto sub = dyn_cast<SubOp>(op))
        marker.oneMinus(sub);
    }
    if (fp16 && !checkInputs.empty() && failed(markByRange(f, checkInputs, marker))) return signalPassFailure();
  }
};

}  // namespace
}  // namespace kiln
