#include "passes/StridedViews.h"

#include "compiler/target/Products.h"
#include "compiler/ir/Builders.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <deque>
#include <optional>

namespace kiln {

KILN_KNOB(kBatchPointers, {"gemm.batch_pointers",
                           {"on", "off"},
                           "on",
                           "Batched cuBLASLt products whose operands no single batch stride walks (BERT's "
                           "batch-first attention heads read in place, broadcast batch dims) take cuBLASLt's "
                           "pointer-array batches, their addresses built once per context, instead of copying "
                           "the heads out (kiln-product-views) or running on kiln's kernel; not for operands "
                           "that are the engine's inputs or outputs",
                           knobs::Tier::Mixed,
                           "passes/StridedViews.cpp"});

using namespace mlir;

namespace {

using Shape = std::vector<int64_t>;

// A dim of a view may walk memory with more than one stride: it is then a row-major run of
// atoms (ViT's [S, B·H, D] heads of a [S, B, 3·H·D] projection: B·H is (B, 3·H·D)·(H, D)).
// Only the final view must give every dim one stride.
struct Atom {
  int64_t size, stride;
};
using Dim = std::vector<Atom>;

struct Layout {
  Value root;
  int64_t offset = 0;
  std::vector<Dim> dims;
  bool copies = false;
};

// Size-1 atoms dropped, neighbours that walk memory as one merged.
Dim collapsed(const Dim &d) {
  Dim r;
  for (const Atom &a : d) {
    if (a.size == 1) continue;
    if (!r.empty() && r.back().stride == a.size * a.stride)
      r.back() = {r.back().size * a.size, a.stride};
    else
      r.push_back(a);
  }
  if (r.empty()) r.push_back({1, 0});
  if (std::any_of(d.begin(), d.end(), [](const Atom &a) { return a.size == 0; })) r = {{0, 0}};
  return r;
}

// The same memory read as `to`: the atoms in row-major order, regrouped (and split where a new
// dim ends inside one).
std::optional<Layout> reshaped(Layout l, const Shape &to) {
  std::deque<Atom> atoms;
  for (const Dim &d : l.dims)
    for (const Atom &a : collapsed(d))
      if (a.size != 1) atoms.push_back(a);
  if (std::any_of(atoms.begin(), atoms.end(), [](const Atom &a) { return a.size == 0; })) return std::nullopt;
  l.dims.clear();
  for (int64_t n : to) {
    Dim d;
    for (int64_t need = n; need > 1;) {
      if (atoms.empty()) return std::nullopt;
      Atom a = atoms.front();
      if (need % a.size == 0) {
        d.push_back(a), need /= a.size, atoms.pop_front();
      } else if (a.size % need == 0) {
        d.push_back({need, a.stride * (a.size / need)}), atoms.front() = {a.size / need, a.stride}, need = 1;
      } else {
        return std::nullopt;
      }
    }
    l.dims.push_back(collapsed(d));
  }
  if (!atoms.empty()) return std::nullopt;
  return l;
}

int64_t normalized(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// The one-stride dim `axis` of `l` (null if it walks memory with several).
Atom *single(Layout &l, size_t axis) {
  if (axis >= l.dims.size()) return nullptr;
  l.dims[axis] = collapsed(l.dims[axis]);
  return l.dims[axis].size() == 1 ? &l.dims[axis][0] : nullptr;
}

std::optional<int64_t> constantAt(Value v, int64_t k) {
  auto t = constantValue(v, 64);
  if (!t || t->size() <= k) return std::nullopt;
  return t->getInt(k);
}

// The layout of producer `d`'s result `v`, given the layout of its operand 0.
std::optional<Layout> through(Operation *d, Value v, Layout l) {
  Shape out = shapeOf(v);
  if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(d)) return reshaped(l, out);
  l.copies = true;
  if (auto t = dyn_cast<TransposeOp>(d)) {
    std::vector<Dim> dims(l.dims.size());
    for (size_t k = 0; k < dims.size(); ++k) {
      size_t from = t.getPermAttr() ? size_t(t.getPermAttr().asArrayRef()[k]) : dims.size() - 1 - k;
      if (from >= dims.size()) return std::nullopt;
      dims[k] = l.dims[from];
    }
    l.dims = dims;
    return l;
  }
  if (auto g = dyn_cast<GatherOp>(d)) {
    auto idx = constantValue(g->getOperand(1), 1);
    size_t axis = size_t(normalized(g.getAxis().value_or(0), l.dims.size()));
    Atom *a = single(l, axis);
    if (!idx || idx->size() != 1 || idx->rank() > 1 || !a) return std::nullopt;
    int64_t i = idx->getInt(0) < 0 ? idx->getInt(0) + a->size : idx->getInt(0);
    if (i < 0 || i >= a->size) return std::nullopt;
    l.offset += i * a->stride;
    if (idx->rank() == 0)
      l.dims.erase(l.dims.begin() + long(axis));
    else
      l.dims[axis] = {{1, 0}};
    return l;
  }
  if (auto sl = dyn_cast<SliceOp>(d)) {
    auto starts = constantValue(sl.getStarts(), 64), ends = constantValue(sl.getEnds(), 64);
    if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
    for (int64_t k = 0; k < starts->size(); ++k) {
      auto axis = isa<NoneType>(sl.getAxes().getType()) ? std::optional<int64_t>(k) : constantAt(sl.getAxes(), k);
      auto step = isa<NoneType>(sl.getSteps().getType()) ? std::optional<int64_t>(1) : constantAt(sl.getSteps(), k);
      Atom *a = axis ? single(l, size_t(normalized(*axis, l.dims.size()))) : nullptr;
      if (!a || !step || *step < 1) return std::nullopt;
      int64_t dim = a->size;
      auto clampIndex = [dim](int64_t x) { return std::clamp<int64_t>(x < 0 ? x + dim : x, 0, dim); };
      int64_t s = clampIndex(starts->getInt(k)), e = clampIndex(ends->getInt(k));
      l.offset += s * a->stride;
      *a = {e > s ? (e - s + *step - 1) / *step : 0, a->stride * *step};
    }
    return l;
  }
  if (auto sp = dyn_cast<SplitOp>(d)) {
    size_t axis = size_t(normalized(sp.getAxis().value_or(0), l.dims.size()));
    Atom *a = single(l, axis);
    if (!a || axis >= out.size()) return std::nullopt;
    for (unsigned j = 0; j < cast<OpResult>(v).getResultNumber(); ++j)
      l.offset += shapeOf(d->getResult(j))[axis] * a->stride;
    a->size = out[axis];
    return l;
  }
  return std::nullopt;
}

}  // namespace

bool isLayoutOp(Operation *op) {
  return isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp, TransposeOp, GatherOp, SliceOp, SplitOp>(op);
}

namespace {

Layout layoutOf(Value v, int64_t rowLength) {
  Layout self{v, 0, {}, false};
  Shape shape = shapeOf(v);
  int64_t stride = 1;
  self.dims.resize(shape.size());
  for (size_t k = shape.size(); k-- > 0;)
    self.dims[k] = {{shape[k], stride}}, stride *= k + 1 == shape.size() && rowLength ? rowLength : shape[k];
  Operation *d = v.getDefiningOp();
  if (!d || !isLayoutOp(d)) return self;
  std::optional<Layout> l = through(d, v, layoutOf(d->getOperand(0), rowLength));
  if (!l) return self;
  // (the result type is the truth: a form read differently is left alone)
  if (l->dims.size() != shape.size()) return self;
  for (size_t k = 0; k < shape.size(); ++k) {
    int64_t n = 1;
    for (const Atom &a : l->dims[k]) n *= a.size;
    if (n != shape[k]) return self;
  }
  return *l;
}

}  // namespace

std::optional<StridedView> stridedViewOf(Value v, int64_t rootRowLength) {
  Layout l = layoutOf(v, rootRowLength);
  StridedView r{l.root, l.offset, {}, {}, l.copies};
  for (const Dim &d : l.dims) {
    Dim c = collapsed(d);
    if (c.size() != 1) return std::nullopt;  // a dim that walks memory with two strides
    r.shape.push_back(c[0].size);
    r.strides.push_back(c[0].stride);
  }
  return r;
}

Value createStridedView(OpBuilder &b, Location loc, const StridedView &view, Type type) {
  std::string err;
  Operation *sv = createInferred<StridedViewOp>(b, loc, {view.root},
                                                {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(view.shape)),
                                                 b.getNamedAttr("strides", b.getDenseI64ArrayAttr(view.strides)),
                                                 b.getNamedAttr("offset", b.getI64IntegerAttr(view.offset))},
                                                &err);
  if (sv && sv->getResult(0).getType() == type) return sv->getResult(0);
  if (sv) sv->erase();
  return {};
}

bool productReadable(const StridedView &view, std::vector<int64_t> perm, int64_t elemBytes, bool anyBatchStrides) {
  size_t n = view.shape.size();
  if (n < 2 || (view.offset * elemBytes) % 16) return false;
  if (perm.empty())
    for (size_t k = 0; k < n; ++k) perm.push_back(int64_t(k));
  std::vector<int64_t> shape(n), stride(n);
  for (size_t k = 0; k < n; ++k) shape[k] = view.shape[size_t(perm[k])], stride[k] = view.strides[size_t(perm[k])];
  bool rowMajor = stride[n - 1] == 1 && stride[n - 2] >= shape[n - 1];
  bool colMajor = stride[n - 2] == 1 && stride[n - 1] >= shape[n - 2];
  shape.resize(n - 2), stride.resize(n - 2);
  int64_t unit = 0;
  return (rowMajor || colMajor) && (anyBatchStrides || target::uniformBatchStride(shape, stride, unit));
}

bool batchPointers(const knobs::Route &route) { return route.get(kBatchPointers) == "on"; }

bool isEngineIo(Value v) {
  return isa<BlockArgument>(v) || llvm::any_of(v.getUsers(), [](Operation *u) { return isa<func::ReturnOp>(u); });
}

bool onlyThisChain(Value v, Value root) {
  for (; v != root; v = v.getDefiningOp()->getOperand(0))
    if (!v.hasOneUse()) return false;
  return true;
}

Operation *productOf(Operation *op, int operandOf[2]) {
  operandOf[0] = operandOf[1] = -1;
  Operation *mm = op;
  if (auto f = dyn_cast<FusedOp>(op)) {
    Block &body = f.getBody().front();
    if (f.getKind() != FusedKind::Epilogue || body.empty()) return nullptr;
    mm = epilogueProduct(f);
    if (!isa_and_nonnull<MatMulOp, TransposedMatMulOp>(mm)) return nullptr;
    for (unsigned k = 0; k < 2; ++k) {
      auto arg = dyn_cast<BlockArgument>(mm->getOperand(k));
      // (an argument the region reads elsewhere too keeps its contiguous input)
      if (arg && arg.getOwner() == &body && arg.hasOneUse()) operandOf[k] = int(arg.getArgNumber());
    }
    return mm;
  }
  if (!isa<MatMulOp, TransposedMatMulOp>(op) || op->getParentOfType<FusedOp>()) return nullptr;
  operandOf[0] = 0, operandOf[1] = 1;
  return mm;
}

void eraseDeadViews(Value v) {
  Operation *d = v.getDefiningOp();
  if (!d || !isLayoutOp(d) || !d->use_empty()) return;
  Value up = d->getOperand(0);
  d->erase();
  eraseDeadViews(up);
}

}  // namespace kiln
