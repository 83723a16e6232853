#include "compiler/ops/OpSemantics.h"

#include <algorithm>
#include <memory>

namespace kiln::ops {

void fail(const std::string &msg) { throw OpError(msg); }

bool needsConstant(const std::string &error) { return error.find(kNeedsConstantPhrase) != std::string::npos; }

// The registry is a function-local static so registration from static initialisers in any
// translation unit is safe regardless of initialisation order.
static std::map<std::string, OpDef> &registry() {
  static std::map<std::string, OpDef> r;
  return r;
}

void registerOp(OpDef def) {
  std::string name = def.name;
  registry()[name] = std::move(def);
}

const OpDef *findOp(const std::string &name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> registeredOps() {
  std::vector<std::string> r;
  for (auto &kv : registry()) r.push_back(kv.first);
  return r;
}

std::optional<std::string> inferTypes(const std::string &op, const ShapeContext &ctx, std::vector<TensorType> &out) {
  const OpDef *def = findOp(op);
  if (!def) return "no semantics registered for op '" + op + "'";
  try {
    out = def->shape(ctx);
  } catch (const std::exception &e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

std::optional<std::string> evaluate(const std::string &op, const EvalContext &ctx, std::vector<Tensor> &out) {
  const OpDef *def = findOp(op);
  if (!def || !def->eval) return "no reference kernel for op '" + op + "'";
  try {
    out = def->eval(ctx);
  } catch (const std::exception &e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

int64_t countFlops(const std::string &op, const ShapeContext &ctx, const std::vector<TensorType> &outputs) {
  const OpDef *def = findOp(op);
  if (!def || !def->flops) return 0;
  try {
    return def->flops(ctx, outputs);
  } catch (const std::exception &) {
    return 0;
  }
}

const Tensor &EvalContext::in(size_t idx) const {
  check(present(idx), "missing required input #" + std::to_string(idx));
  return *inputs[idx];
}

template <typename T> static const T *getAs(const Attrs &a, const std::string &name) {
  auto it = a.values.find(name);
  if (it == a.values.end()) return nullptr;
  const T *v = std::get_if<T>(&it->second);
  check(v != nullptr, "attribute '" + name + "' has the wrong type");
  return v;
}

int64_t Attrs::getInt(const std::string &name, int64_t dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto *d = std::get_if<double>(&it->second)) return static_cast<int64_t>(*d);
  auto *v = getAs<int64_t>(*this, name);
  return *v;
}
int64_t Attrs::getInt(const std::string &name) const {
  check(has(name), "missing required attribute '" + name + "'");
  return getInt(name, 0);
}
double Attrs::getFloat(const std::string &name, double dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto *i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return *getAs<double>(*this, name);
}
std::string Attrs::getString(const std::string &name, const std::string &dflt) const {
  auto *v = getAs<std::string>(*this, name);
  return v ? *v : dflt;
}
std::vector<int64_t> Attrs::getInts(const std::string &name, const std::vector<int64_t> &dflt) const {
  auto *v = getAs<std::vector<int64_t>>(*this, name);
  return v ? *v : dflt;
}
std::vector<int64_t> Attrs::getInts(const std::string &name) const {
  check(has(name), "missing required attribute '" + name + "'");
  return getInts(name, {});
}
std::vector<double> Attrs::getFloats(const std::string &name, const std::vector<double> &dflt) const {
  auto *v = getAs<std::vector<double>>(*this, name);
  return v ? *v : dflt;
}
const Tensor *Attrs::getTensor(const std::string &name) const { return getAs<Tensor>(*this, name); }

Shape broadcastShapes(const std::vector<Shape> &shapes) {
  size_t rank = 0;
  for (auto &s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto &s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t &o = out[rank - s.size() + k];
      int64_t d = s[k];
      if (d == o || d == 1) continue;
      check(
          o == 1, "shapes cannot be broadcast together: " + [&] {
            std::string r;
            for (auto &x : shapes) r += (r.empty() ? "" : " vs ") + shapeString(x);
            return r;
          }());
      o = d;
    }
  }
  return out;
}

int64_t broadcastIndex(const Shape &s, const Shape &out, int64_t outIdx) {
  int64_t idx = 0, stride = 1;
  int64_t off = static_cast<int64_t>(out.size()) - static_cast<int64_t>(s.size());
  for (int64_t k = static_cast<int64_t>(out.size()) - 1; k >= 0; --k) {
    int64_t coord = outIdx % out[k];
    outIdx /= out[k];
    int64_t sk = k - off;
    if (sk < 0) break;
    if (s[sk] != 1) idx += coord * stride;
    stride *= s[sk];
  }
  return idx;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  check(axis >= -rank && axis < std::max<int64_t>(rank, 1),
        "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace kiln::ops
