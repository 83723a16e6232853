#include "compiler/importer/Importer.h"

#include "compiler/ir/Builders.h"

#include "compiler/eval/Evaluator.h"
#include "compiler/importer/OpTable.h"
#include "compiler/importer/TensorProto.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/ops/OpSemantics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "onnx/onnx-ml.pb.h"

#include <map>
#include <set>
#include <sstream>

using namespace mlir;

namespace kiln {

void registerKilnDialects(MLIRContext &ctx) {
  ctx.getOrLoadDialect<KilnDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
}

std::string parseShapeOverrides(const std::string &spec, ImportOptions &opts) {
  auto number = [](const std::string &d, int64_t &v) {  // a whole non-negative decimal
    char *end = nullptr;
    long long x = std::strtoll(d.c_str(), &end, 10);
    v = x;
    return !d.empty() && *end == '\0' && x >= 0;
  };
  std::string item;
  std::stringstream ss(spec);
  while (std::getline(ss, item, item.find(';') != std::string::npos ? ';' : ',')) {
    for (std::string part; !item.empty();) {
      size_t sep = item.find_first_of(";,");
      part = item.substr(0, sep);
      item = sep == std::string::npos ? "" : item.substr(sep + 1);
      if (part.empty()) continue;
      size_t colon = part.rfind(':'), eq = part.find('=');
      if (colon == std::string::npos && eq != std::string::npos && eq > 0) {  // DIM=VALUE
        int64_t v;
        if (!number(part.substr(eq + 1), v) || v == 0)
          return "bad --shapes entry '" + part + "': a symbolic dimension takes a positive size (NAME=N)";
        opts.dims[part.substr(0, eq)] = v;
        continue;
      }
      if (colon == std::string::npos || colon == 0)
        return "bad --shapes entry '" + part + "': expected INPUT:D1xD2x... or DIM=N";
      std::string name = part.substr(0, colon), dims = part.substr(colon + 1);
      std::vector<int64_t> shape;
      std::stringstream ds(dims);
      for (std::string d; std::getline(ds, d, 'x');) {
        int64_t v;
        if (!number(d, v)) return "bad dimension '" + d + "' in --shapes entry '" + part + "'";
        shape.push_back(v);
      }
      if (dims == "scalar") shape.clear();
      opts.shapes[name] = shape;
    }
  }
  return "";
}

namespace {

std::string dirOf(const std::string &path) {
  size_t p = path.find_last_of('/');
  return p == std::string::npos ? "." : path.substr(0, p);
}

// A node's name for messages and locations: its name, else its first output, else its op type.
std::string displayName(const onnx::NodeProto &n) {
  if (!n.name().empty()) return n.name();
  return n.output_size() && !n.output(0).empty() ? n.output(0) : n.op_type();
}

std::string nodeLabel(const onnx::NodeProto &n) {
  std::string name = displayName(n);
  return "node '" + name + "' (" + (n.domain().empty() ? "" : n.domain() + "::") + n.op_type() + ")";
}

class GraphImporter {
 public:
  GraphImporter(MLIRContext &ctx, const ImportOptions &opts, std::string baseDir, std::string file)
      : ctx_(ctx), b_(&ctx), opts_(opts), baseDir_(std::move(baseDir)), file_(std::move(file)) {}

  ImportResult run(const onnx::ModelProto &model);

 private:
  std::string importInitializers(const onnx::GraphProto &g);
  std::string declareInputs(const onnx::GraphProto &g, SmallVectorImpl<Type> &types, std::vector<std::string> &names);
  std::string sortNodes(const onnx::GraphProto &g, std::vector<int> &order);
  std::string importNode(const onnx::NodeProto &n, ImportResult &result);
  std::string importConstantNode(const onnx::NodeProto &n);
  // Control flow (If, Loop, Scan), resolved at import: an If whose condition folds becomes its
  // branch, one whose condition is known only at run time runs both branches and selects each
  // output with Where (when the branches agree on types); Loop and Scan with trip counts known at
  // build time are unrolled. importSubgraph imports a subgraph's nodes into the current function
  // with its inputs bound to `inputs` (names it defines shadow outer ones while it is imported).
  std::string importControlFlow(const onnx::NodeProto &n, ImportResult &result);
  std::string importSubgraph(const onnx::GraphProto &g, ArrayRef<Value> inputs, SmallVectorImpl<Value> &outputs,
                             const std::string &scope, ImportResult &result);
  std::string convertAttribute(const onnx::AttributeProto &a, Attribute &out, bool forUnsupported);
  Location locFor(const std::string &name) {
    return NameLoc::get(b_.getStringAttr(scope_ + name), FileLineColLoc::get(b_.getStringAttr(file_), 0, 0));
  }
  Value constantFrom(const RawTensor &t, const std::string &name, Location loc);

  MLIRContext &ctx_;
  OpBuilder b_;
  const ImportOptions &opts_;
  std::string baseDir_, file_;
  int64_t opset_ = 0;
  std::map<std::string, int64_t> domainOpsets_;
  std::map<std::string, Value> values_;                       // ONNX tensor name → SSA value
  std::map<std::string, std::vector<std::string>> dimNames_;  // declareInputs: each input's dim_params
  Value none_;
  std::string scope_;  // prefix of node names imported from subgraphs ("loop/iter3/")
  int subgraphDepth_ = 0;
  size_t unrolledNodes_ = 0;  // nodes imported from subgraphs so far (bounded)
};

Value GraphImporter::constantFrom(const RawTensor &t, const std::string &name, Location loc) {
  RankedTensorType type = rankedTypeOf({t.dtype, t.shape}, &ctx_);
  ElementsAttr attr;
  int64_t n = ops::numElements(t.shape);
  if (n > kInlineConstantLimit && t.dtype != ops::DType::Bool) {
    // Resource blob names must be identifiers; MLIR uniquifies clashes.
    std::string blob;
    for (char c : name) blob += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (blob.empty() || std::isdigit(static_cast<unsigned char>(blob[0]))) blob = "w_" + blob;
    attr = resourceAttrFromBytes(type, blob, t.bytes);
  } else {
    attr = attrFromTensor(ops::tensorFromBytes(t.dtype, t.shape, t.bytes.data(), t.bytes.size()), &ctx_);
  }
  return b_.create<ConstantOp>(loc, attr);
}

std::string GraphImporter::importInitializers(const onnx::GraphProto &g) {
  for (const auto &init : g.initializer()) {
    if (init.name().empty()) return "an initializer has no name";
    if (values_.count(init.name())) return "initializer '" + init.name() + "' is defined twice";
    RawTensor raw;
    if (auto err = readTensorProto(init, baseDir_, raw, opts_.allowExternalOutside); !err.empty())
      return "initializer '" + init.name() + "': " + err;
    values_[init.name()] = constantFrom(raw, init.name(), locFor(init.name()));
  }
  if (g.sparse_initializer_size()) return "sparse initializers are not supported";
  return "";
}

std::string GraphImporter::declareInputs(const onnx::GraphProto &g, SmallVectorImpl<Type> &types,
                                         std::vector<std::string> &names) {
  std::set<std::string> seen, all, usedDims, symbolic;
  for (const auto &in : g.input()) all.insert(in.name());
  for (auto &kv : opts_.shapes)
    if (!all.count(kv.first)) return "--shapes names '" + kv.first + "', which is not a graph input";
  for (auto &kv : opts_.constantInputs)
    if (!all.count(kv.first)) return "constant input '" + kv.first + "' is not a graph input";
  for (const auto &in : g.input()) {
    if (values_.count(in.name())) continue;  // an initializer listed as an input: a constant
    if (!seen.insert(in.name()).second) return "graph input '" + in.name() + "' is declared twice";
    if (opts_.constantInputs.count(in.name())) continue;  // becomes a constant in the body
    if (!in.type().has_tensor_type())
      return "graph input '" + in.name() + "' is not a tensor (sequences, maps and optionals are not supported)";
    const auto &tt = in.type().tensor_type();
    ops::DType dt = static_cast<ops::DType>(tt.elem_type());
    Type et = elementTypeOf(dt, &ctx_);
    if (!et) return "graph input '" + in.name() + "' has unsupported element type " + std::to_string(tt.elem_type());
    std::vector<int64_t> shape;
    std::vector<std::string> &dimNames = dimNames_[in.name()];
    for (int k = 0; tt.has_shape() && k < tt.shape().dim_size(); ++k)
      dimNames.push_back(tt.shape().dim(k).has_dim_param() ? tt.shape().dim(k).dim_param() : "");
    auto ov = opts_.shapes.find(in.name());
    if (ov != opts_.shapes.end()) {
      shape = ov->second;
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(shape.size()))
        return "--shapes gives input '" + in.name() + "' rank " + std::to_string(shape.size()) +
               " but the model declares rank " + std::to_string(tt.shape().dim_size());
      for (int k = 0; tt.has_shape() && k < tt.shape().dim_size(); ++k) {
        const auto &d = tt.shape().dim(k);
        if (d.has_dim_param()) symbolic.insert(d.dim_param());
        if (d.has_dim_param() && opts_.dims.count(d.dim_param())) {
          usedDims.insert(d.dim_param());
          if (opts_.dims.at(d.dim_param()) != shape[k])
            return "--shapes gives input '" + in.name() + "' dimension " + std::to_string(k) + " ('" + d.dim_param() +
                   "') = " + std::to_string(shape[k]) + " but also " + d.dim_param() + "=" +
                   std::to_string(opts_.dims.at(d.dim_param()));
        }
        if (d.has_dim_value() && d.dim_value() > 0 && d.dim_value() != shape[k])
          return "--shapes gives input '" + in.name() + "' dimension " + std::to_string(k) + " = " +
                 std::to_string(shape[k]) + " but the model fixes it to " + std::to_string(d.dim_value()) +
                 " (onnxruntime refuses it too: free the dim in the model's declared input, e.g. with "
                 "onnx.tools.update_model_dims.update_inputs_outputs_dims)";
      }
    } else {
      if (!tt.has_shape())
        return "graph input '" + in.name() + "' has no shape: pass --shapes " + in.name() + ":D1xD2x...";
      for (int k = 0; k < tt.shape().dim_size(); ++k) {
        const auto &d = tt.shape().dim(k);
        if (d.has_dim_param()) symbolic.insert(d.dim_param());
        if (d.has_dim_param() && opts_.dims.count(d.dim_param())) {  // --shapes NAME=N
          usedDims.insert(d.dim_param());
          shape.push_back(opts_.dims.at(d.dim_param()));
          continue;
        }
        if (!d.has_dim_value() || d.dim_value() < 0) {
          std::string sym = d.has_dim_param()   ? "'" + d.dim_param() + "'"
                            : d.has_dim_value() ? "(declared " + std::to_string(d.dim_value()) + ")"
                                                : "unknown";
          return "graph input '" + in.name() + "' has symbolic dimension " + sym + " at axis " + std::to_string(k) +
                 " with no value: pass --shapes " + in.name() + ":" +
                 [&] {
                   std::string s;
                   for (int j = 0; j < tt.shape().dim_size(); ++j)
                     s += (j ? "x" : "") + (tt.shape().dim(j).has_dim_value() && tt.shape().dim(j).dim_value() >= 0
                                                ? std::to_string(tt.shape().dim(j).dim_value())
                                                : std::string("N"));
                   return s;
                 }() +
                 (d.has_dim_param() ? " or --shapes " + d.dim_param() + "=N" : "") +
                 " (kiln compile: or a range, --min-shapes/--opt-shapes/--max-shapes)";
        }
        shape.push_back(d.dim_value());
      }
    }
    types.push_back(RankedTensorType::get(shape, et));
    names.push_back(in.name());
  }
  for (const auto &[dim, value] : opts_.dims)
    if (!usedDims.count(dim)) {
      std::string known;
      for (const std::string &d : symbolic) known += (known.empty() ? "" : ", ") + d;
      return "--shapes sets dimension '" + dim + "', which no graph input has (" +
             (known.empty() ? std::string("the inputs have no named dimensions") : "their named dimensions: " + known) +
             ")";
    }
  return "";
}

// The names a subgraph reads from enclosing scopes (its implicit inputs), nested subgraphs included.
static void outerReads(const onnx::GraphProto &g, std::set<std::string> &out) {
  std::set<std::string> local;
  for (const auto &in : g.input()) local.insert(in.name());
  for (const auto &init : g.initializer()) local.insert(init.name());
  for (const auto &n : g.node())
    for (const auto &o : n.output()) local.insert(o);
  for (const auto &n : g.node()) {
    for (const auto &in : n.input())
      if (!in.empty() && !local.count(in)) out.insert(in);
    for (const auto &a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) outerReads(a.g(), inner);
      for (const auto &sub : a.graphs()) outerReads(sub, inner);
      for (const auto &name : inner)
        if (!local.count(name)) out.insert(name);
    }
  }
  for (const auto &o : g.output())
    if (!local.count(o.name())) out.insert(o.name());
}

// A node's inputs, with what its subgraphs read from the enclosing graph.
static std::vector<std::string> nodeReads(const onnx::NodeProto &n) {
  std::vector<std::string> reads(n.input().begin(), n.input().end());
  std::set<std::string> inner;
  for (const auto &a : n.attribute()) {
    if (a.has_g()) outerReads(a.g(), inner);
    for (const auto &sub : a.graphs()) outerReads(sub, inner);
  }
  reads.insert(reads.end(), inner.begin(), inner.end());
  return reads;
}

std::string GraphImporter::sortNodes(const onnx::GraphProto &g, std::vector<int> &order) {
  std::map<std::string, int> producer;
  std::set<std::string> defined;
  for (auto &kv : values_) defined.insert(kv.first);
  for (const auto &in : g.input()) defined.insert(in.name());
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto &o : g.node(i).output()) {
      if (o.empty()) continue;
      if (defined.count(o))
        return nodeLabel(g.node(i)) + " produces '" + o + "', which is a graph input or initializer";
      auto [it, fresh] = producer.emplace(o, i);
      if (!fresh)
        return "tensor '" + o + "' is produced by both " + nodeLabel(g.node(it->second)) + " and " +
               nodeLabel(g.node(i));
    }
  }
  // Kahn's algorithm, stable: among ready nodes, the earliest in file order goes first.
  std::vector<int> pending(g.node_size(), 0);
  std::vector<std::vector<int>> users(g.node_size());
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto &in : nodeReads(g.node(i))) {
      if (in.empty() || defined.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return nodeLabel(g.node(i)) + " reads tensor '" + in + "', which no node, input or initializer defines";
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  std::set<int> ready;
  for (int i = 0; i < g.node_size(); ++i)
    if (!pending[i]) ready.insert(i);
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.insert(u);
  }
  if (static_cast<int>(order.size()) != g.node_size()) {
    std::string names;
    int shown = 0;
    for (int i = 0; i < g.node_size() && shown < 4; ++i)
      if (pending[i]) names += (shown++ ? ", " : "") + nodeLabel(g.node(i));
    return "the graph has a cycle through " + names;
  }
  return "";
}

std::string GraphImporter::convertAttribute(const onnx::AttributeProto &a, Attribute &out, bool forUnsupported) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: out = b_.getI64IntegerAttr(a.i()); return "";
    case A::FLOAT: out = b_.getF32FloatAttr(a.f()); return "";
    case A::STRING: out = b_.getStringAttr(a.s()); return "";
    case A::INTS: out = b_.getDenseI64ArrayAttr(std::vector<int64_t>(a.ints().begin(), a.ints().end())); return "";
    case A::FLOATS: out = b_.getDenseF32ArrayAttr(std::vector<float>(a.floats().begin(), a.floats().end())); return "";
    case A::STRINGS: {
      SmallVector<Attribute> s;
      for (auto &x : a.strings()) s.push_back(b_.getStringAttr(x));
      out = b_.getArrayAttr(s);
      return "";
    }
    case A::TENSOR: {
      RawTensor raw;
      if (auto err = readTensorProto(a.t(), baseDir_, raw, opts_.allowExternalOutside); !err.empty()) {
        if (!forUnsupported) return "attribute '" + a.name() + "': " + err;
        out = b_.getStringAttr("<unsupported tensor>");
        return "";
      }
      out = attrFromTensor(ops::tensorFromBytes(raw.dtype, raw.shape, raw.bytes.data(), raw.bytes.size()), &ctx_);
      return "";
    }
    default:
      if (forUnsupported) {
        out = b_.getStringAttr("<" + A::AttributeType_Name(a.type()) + ">");
        return "";
      }
      return "attribute '" + a.name() + "' has unsupported type " + A::AttributeType_Name(a.type());
  }
}

std::string GraphImporter::importConstantNode(const onnx::NodeProto &n) {
  if (n.attribute_size() != 1 || n.output_size() != 1)
    return nodeLabel(n) + " must have exactly one attribute and one output";
  const auto &a = n.attribute(0);
  Location loc = locFor(displayName(n));
  RawTensor raw;
  if (a.name() == "value") {
    if (auto err = readTensorProto(a.t(), baseDir_, raw, opts_.allowExternalOutside); !err.empty())
      return nodeLabel(n) + ": " + err;
    values_[n.output(0)] = constantFrom(raw, n.output(0), loc);
    return "";
  }
  ops::Tensor t;
  if (a.name() == "value_float")
    t = ops::Tensor::scalar(ops::DType::F32, a.f());
  else if (a.name() == "value_int")
    t = ops::Tensor::fromInts(ops::DType::I64, {}, {a.i()});
  else if (a.name() == "value_floats")
    t = ops::Tensor::fromDoubles(ops::DType::F32, {a.floats_size()},
                                 std::vector<double>(a.floats().begin(), a.floats().end()));
  else if (a.name() == "value_ints")
    t = ops::Tensor::fromInts(ops::DType::I64, {a.ints_size()}, std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  else
    return nodeLabel(n) + ": Constant attribute '" + a.name() + "' is not supported";
  values_[n.output(0)] = b_.create<ConstantOp>(loc, attrFromTensor(t, &ctx_));
  return "";
}

std::string GraphImporter::importNode(const onnx::NodeProto &n, ImportResult &result) {
  std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
  if (domain.empty() && n.op_type() == "Constant") return importConstantNode(n);
  if (domain.empty() && (n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan"))
    return importControlFlow(n, result);

  Location loc = locFor(displayName(n));
  std::vector<Value> operands;
  bool unknownInput = false;
  for (const auto &in : n.input()) {
    Value v = in.empty() ? none_ : values_.at(in);
    unknownInput |= isa<UnrankedTensorType>(v.getType());
    operands.push_back(v);
  }
  int64_t opset = domain.empty() ? opset_ : (domainOpsets_.count(domain) ? domainOpsets_[domain] : 1);
  bool known = false;  // the table has entries for the op type (at some opset)
  const OpEntry *entry = findOpEntry(domain, n.op_type(), opset, &known);
  bool domainHasOps = domain.empty();  // the dialect has ops of this domain (com.microsoft's quantized ops)
  std::optional<OperationName> kilnOp =
      n.op_type().find("::") != std::string::npos
          ? std::nullopt
          : importableOp(*b_.getContext(), domain.empty() ? n.op_type() : domain + "::" + n.op_type(), &domainHasOps);

  auto makeUnsupported = [&](const std::string &reason) {
    SmallVector<NamedAttribute> attrs;
    for (const auto &a : n.attribute()) {
      Attribute v;
      convertAttribute(a, v, /*forUnsupported=*/true);
      attrs.push_back(b_.getNamedAttr(a.name(), v));
    }
    SmallVector<Type> resultTypes(n.output_size(), UnrankedTensorType::get(b_.getF32Type()));
    auto op =
        b_.create<UnsupportedOp>(loc, resultTypes, operands, b_.getStringAttr(n.op_type()), b_.getStringAttr(domain),
                                 b_.getI64IntegerAttr(opset), b_.getStringAttr(reason), b_.getDictionaryAttr(attrs));
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) values_[n.output(k)] = op->getResult(k);
    result.unsupported.push_back(displayName(n) + " (" + (domain.empty() ? "" : domain + "::") + n.op_type() +
                                 "): " + reason);
    return std::string();
  };

  if (!kilnOp || (known && !entry) || (domain.empty() && opset < kMinOpset && !entry)) {
    std::string reason;
    if (!domain.empty() && domain != "ai.onnx.ml" && !known && !domainHasOps)
      reason = "custom domain '" + domain + "'";
    else if (kilnOp && (known || opset < kMinOpset))
      reason = "not supported at opset " + std::to_string(opset);
    else
      reason = "no kiln op for " + (domain.empty() ? std::string("ai.onnx") : domain) + "::" + n.op_type();
    return makeUnsupported(reason);
  }

  NodeImport ni{n, opset, b_, loc, none_, operands, {}, ""};
  for (const auto &a : n.attribute()) {
    Attribute v;
    if (auto err = convertAttribute(a, v, false); !err.empty()) return nodeLabel(n) + ": " + err;
    ni.attrs.set(a.name(), v);
  }
  // A value that must be known at build time but is not (a shape, axes, the data of an op whose
  // result shape depends on it): the node is unsupported as given, like an op kiln lacks, so one
  // import lists every such node (`kiln plan` exits 1 naming them); --constant-inputs binds them.
  if (entry && entry->normalize && !entry->normalize(ni))
    return ops::needsConstant(ni.error) ? makeUnsupported(ni.error) : nodeLabel(n) + ": " + ni.error;

  OperationState state(loc, *kilnOp);
  state.addOperands(ni.operands);
  state.addAttributes(ni.attrs);
  state.addTypes(SmallVector<Type>(n.output_size(), UnrankedTensorType::get(b_.getF32Type())));
  Operation *op = b_.create(state);
  if (!unknownInput) {
    auto sem = cast<ShapeInferenceOpInterface>(op);
    SmallVector<Type> types;
    std::string error;
    if (failed(sem.inferResultTypes(types, error))) {
      op->erase();
      if (ops::needsConstant(error)) return makeUnsupported(error);
      return nodeLabel(n) + ": " + error;
    }
    if (types.size() != op->getNumResults()) {
      size_t declared = op->getNumResults();
      op->erase();
      return nodeLabel(n) + ": the node has " + std::to_string(declared) + " outputs, kiln's " + n.op_type() +
             " produces " + std::to_string(types.size());
    }
    for (unsigned k = 0; k < types.size(); ++k) op->getResult(k).setType(types[k]);
  }
  std::vector<Value> outs(op->getResults().begin(), op->getResults().end());
  // DequantizeLinear of int8 weights stays: the compile pipeline turns QDQ products into int8
  // kernels (kiln-lower-qdq) and folds the rest later.
  if (!unknownInput && !isa<DequantizeLinearOp>(op)) {
    FoldResult fr = foldWithEvaluator(op, b_, opts_.foldLimit);
    if (!fr.error.empty()) {
      op->erase();
      return fr.error;
    }
    if (fr.folded()) {
      outs = fr.values;
      op->erase();
    }
  }
  for (int k = 0; k < n.output_size(); ++k)
    if (!n.output(k).empty()) values_[n.output(k)] = outs[k];
  return "";
}

//===--- Control flow --------------------------------------------------------------------------===//

namespace {

constexpr int kMaxSubgraphDepth = 64;             // nested If/Loop/Scan bodies
constexpr int64_t kMaxUnrolledIterations = 4096;  // Loop/Scan iterations unrolled at import
constexpr size_t kMaxUnrolledNodes = 1 << 20;     // nodes imported from subgraphs in all

const onnx::GraphProto *graphAttr(const onnx::NodeProto &n, const char *name) {
  for (const auto &a : n.attribute())
    if (a.name() == name && a.has_g()) return &a.g();
  return nullptr;
}

std::vector<int64_t> intsAttrOf(const onnx::NodeProto &n, const char *name, size_t count, int64_t dflt) {
  for (const auto &a : n.attribute())
    if (a.name() == name) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  return std::vector<int64_t>(count, dflt);
}

int64_t intAttrOf(const onnx::NodeProto &n, const char *name, int64_t dflt) {
  for (const auto &a : n.attribute())
    if (a.name() == name) return a.i();
  return dflt;
}

std::string typeText(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return std::string(ops::dtypeName(dtypeOf(t.getElementType()))) + " " + ops::shapeString(tensorTypeOf(t).shape);
  return "an unknown type";
}

}  // namespace

std::string GraphImporter::importSubgraph(const onnx::GraphProto &g, ArrayRef<Value> inputs,
                                          SmallVectorImpl<Value> &outputs, const std::string &scope,
                                          ImportResult &result) {
  if (subgraphDepth_ >= kMaxSubgraphDepth)
    return "subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth) + " levels";
  if (int(inputs.size()) != g.input_size())
    return "the subgraph takes " + std::to_string(g.input_size()) + " inputs, the node gives " +
           std::to_string(inputs.size());
  unrolledNodes_ += size_t(g.node_size());
  if (unrolledNodes_ > kMaxUnrolledNodes)
    return "unrolling control flow would import more than " + std::to_string(kMaxUnrolledNodes) + " nodes";
  // Names the subgraph defines shadow the enclosing scope's until it is imported.
  std::map<std::string, std::optional<Value>> saved;
  auto shadow = [&](const std::string &name) {
    if (name.empty() || saved.count(name)) return;
    auto it = values_.find(name);
    saved[name] = it == values_.end() ? std::nullopt : std::optional<Value>(it->second);
    values_.erase(name);
  };
  for (const auto &in : g.input()) shadow(in.name());
  for (const auto &init : g.initializer()) shadow(init.name());
  for (const auto &node : g.node())
    for (const auto &o : node.output()) shadow(o);
  std::string outerScope = scope_;
  scope_ += scope;
  ++subgraphDepth_;
  std::string err;
  for (int k = 0; k < g.input_size(); ++k) values_[g.input(k).name()] = inputs[size_t(k)];
  std::vector<int> order;
  if (err.empty()) err = importInitializers(g);
  if (err.empty()) err = sortNodes(g, order);
  for (int i : order) {
    if (!err.empty()) break;
    err = importNode(g.node(i), result);
  }
  outputs.clear();
  for (int k = 0; err.empty() && k < g.output_size(); ++k) {
    auto it = values_.find(g.output(k).name());
    if (it == values_.end())
      err = "subgraph output '" + g.output(k).name() + "' is not produced by any node";
    else
      outputs.push_back(it->second);
  }
  --subgraphDepth_;
  scope_ = outerScope;
  for (auto &[name, v] : saved) {
    if (v)
      values_[name] = *v;
    else
      values_.erase(name);
  }
  return err;
}

std::string GraphImporter::importControlFlow(const onnx::NodeProto &n, ImportResult &result) {
  const std::string name = displayName(n);
  Location loc = locFor(name);
  auto fail = [&](const std::string &why) { return nodeLabel(n) + ": " + why; };
  auto input = [&](int k) -> Value {
    if (k >= n.input_size() || n.input(k).empty()) return Value();
    return values_.at(n.input(k));
  };
  auto bind = [&](ArrayRef<Value> outs) -> std::string {
    if (int(outs.size()) < n.output_size())
      return fail("the subgraph computes " + std::to_string(outs.size()) + " outputs, the node declares " +
                  std::to_string(n.output_size()));
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) values_[n.output(k)] = outs[size_t(k)];
    return "";
  };
  // Downstream of an unsupported node what the control flow does is unknown: its outputs are of
  // unknown type like any such op's (the unsupported node is what the import reports).
  auto unknown = [&]() -> std::string {
    SmallVector<Value> operands;
    for (const auto &in : n.input()) operands.push_back(in.empty() ? none_ : values_.at(in));
    SmallVector<Type> types(n.output_size(), UnrankedTensorType::get(b_.getF32Type()));
    auto op = b_.create<UnsupportedOp>(loc, types, operands, b_.getStringAttr(n.op_type()), b_.getStringAttr(""),
                                       b_.getI64IntegerAttr(opset_), b_.getStringAttr(kDownstreamOfUnsupported),
                                       b_.getDictionaryAttr({}));
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) values_[n.output(k)] = op->getResult(k);
    return "";
  };
  auto unranked = [](Value v) { return v && isa<UnrankedTensorType>(v.getType()); };
  std::string err;
  auto create = [&](auto tag, ValueRange operands, ArrayRef<NamedAttribute> attrs) -> Value {
    using OpT = decltype(tag);
    Operation *op = createInferred<OpT>(b_, loc, operands, attrs, &err);
    if (!op) return Value();
    FoldResult fr = foldWithEvaluator(op, b_, opts_.foldLimit);
    if (!fr.error.empty()) {
      err = fr.error;
      op->erase();
      return Value();
    }
    if (!fr.folded()) return op->getResult(0);
    op->erase();
    return fr.values[0];
  };
  // Stacks per-iteration values along a new `axis` (Loop and Scan outputs).
  auto stack = [&](std::vector<Value> parts, int64_t axis) -> Value {
    SmallVector<Value> expanded;
    for (Value p : parts) {
      Value u = create(UnsqueezeOp(), {p}, {b_.getNamedAttr("axes", b_.getDenseI64ArrayAttr({axis}))});
      if (!u) return Value();
      expanded.push_back(u);
    }
    if (expanded.size() == 1) return expanded[0];
    return create(ConcatOp(), expanded, {b_.getNamedAttr("axis", b_.getI64IntegerAttr(axis))});
  };

  if (n.op_type() == "If") {
    const onnx::GraphProto *thenG = graphAttr(n, "then_branch"), *elseG = graphAttr(n, "else_branch");
    Value cond = input(0);
    if (!thenG || !elseG || !cond) return fail("needs a condition and both branches");
    if (unranked(cond)) return unknown();
    if (auto c = constantValue(cond)) {  // known at build time: the taken branch alone
      if (c->size() != 1) return fail("the condition must have one element");
      SmallVector<Value> outs;
      bool taken = c->getInt(0) != 0;
      if (auto e = importSubgraph(taken ? *thenG : *elseG, {}, outs, name + (taken ? "/then/" : "/else/"), result);
          !e.empty())
        return fail(e);
      return bind(outs);
    }
    // Known only at run time: both branches run (ONNX ops have no side effects) and Where picks.
    SmallVector<Value> thenOuts, elseOuts, outs;
    if (auto e = importSubgraph(*thenG, {}, thenOuts, name + "/then/", result); !e.empty()) return fail(e);
    if (auto e = importSubgraph(*elseG, {}, elseOuts, name + "/else/", result); !e.empty()) return fail(e);
    if (thenOuts.size() != elseOuts.size()) return fail("the branches compute different numbers of outputs");
    for (size_t k = 0; k < thenOuts.size(); ++k)
      if (unranked(thenOuts[k]) || unranked(elseOuts[k])) return unknown();
    for (size_t k = 0; k < thenOuts.size(); ++k) {
      if (thenOuts[k].getType() != elseOuts[k].getType())
        return fail("the condition must be a compile-time constant here: it is known only at run time and output " +
                    std::to_string(k) + " is " + typeText(thenOuts[k]) + " in the then branch but " +
                    typeText(elseOuts[k]) +
                    " in the else branch (bind the inputs it depends on with --constant-inputs)");
      Value w = create(WhereOp(), {cond, thenOuts[k], elseOuts[k]}, {});
      if (!w) return fail(err);
      outs.push_back(w);
    }
    return bind(outs);
  }

  if (n.op_type() == "Loop") {
    const onnx::GraphProto *body = graphAttr(n, "body");
    if (!body) return fail("has no body");
    for (int k = 0; k < n.input_size(); ++k)
      if (unranked(input(k))) return unknown();
    std::optional<int64_t> trips;
    if (Value m = input(0)) {
      auto c = constantValue(m);
      if (!c || c->size() != 1) return fail("the trip count M must be a compile-time constant (kiln unrolls loops)");
      trips = c->getInt(0);
    }
    bool cond = true;
    if (Value c0 = input(1)) {
      auto c = constantValue(c0);
      if (!c || c->size() != 1)
        return fail("the initial condition must be a compile-time constant (kiln unrolls loops)");
      cond = c->getInt(0) != 0;
    }
    if (!trips && !cond) trips = 0;
    std::vector<Value> carried;
    for (int k = 2; k < n.input_size(); ++k) carried.push_back(input(k));
    const size_t nCarried = carried.size();
    std::vector<std::vector<Value>> scans;
    int64_t i = 0;
    for (; cond && (!trips || i < *trips); ++i) {
      if (i >= kMaxUnrolledIterations)
        return fail("more than " + std::to_string(kMaxUnrolledIterations) + " iterations to unroll");
      SmallVector<Value> ins = {
          b_.create<ConstantOp>(loc, attrFromTensor(ops::Tensor::fromInts(ops::DType::I64, {}, {i}), &ctx_)),
          b_.create<ConstantOp>(loc, attrFromTensor(ops::Tensor::fromInts(ops::DType::Bool, {}, {1}), &ctx_))};
      ins.append(carried.begin(), carried.end());
      SmallVector<Value> outs;
      if (auto e = importSubgraph(*body, ins, outs, name + "/iter" + std::to_string(i) + "/", result); !e.empty())
        return fail(e);
      if (outs.size() < 1 + nCarried) return fail("the body computes fewer outputs than the loop carries");
      auto c = constantValue(outs[0]);
      if (!c || c->size() != 1)
        return fail("whether the loop continues must be a compile-time constant (it depends on run-time data, and kiln "
                    "unrolls loops)");
      cond = c->getInt(0) != 0;
      for (size_t k = 0; k < nCarried; ++k) carried[k] = outs[1 + k];
      if (scans.empty()) scans.resize(outs.size() - 1 - nCarried);
      for (size_t k = 0; k < scans.size(); ++k) scans[k].push_back(outs[1 + nCarried + k]);
    }
    SmallVector<Value> results(carried.begin(), carried.end());
    for (int k = int(nCarried); k < n.output_size(); ++k) {
      size_t s = size_t(k) - nCarried;
      if (s >= scans.size() || scans[s].empty())
        return fail("a scan output of a loop that runs no iteration has no shape kiln can know");
      Value v = stack(scans[s], 0);
      if (!v) return fail(err);
      results.push_back(v);
    }
    return bind(results);
  }

  // Scan (opset 9 and later): unrolled over the scan axis, which shapes make static.
  int64_t opset = opset_;
  if (opset < 9) return fail("Scan before opset 9 (with batch axis and sequence_lens) is not supported");
  const onnx::GraphProto *body = graphAttr(n, "body");
  if (!body) return fail("has no body");
  const int64_t nScan = intAttrOf(n, "num_scan_inputs", 0);
  const int64_t nState = n.input_size() - nScan;
  if (nScan < 1 || nState < 0) return fail("num_scan_inputs does not fit the inputs");
  const int64_t nScanOut = n.output_size() - nState;
  auto inAxes = intsAttrOf(n, "scan_input_axes", size_t(nScan), 0),
       inDirs = intsAttrOf(n, "scan_input_directions", size_t(nScan), 0);
  auto outAxes = intsAttrOf(n, "scan_output_axes", size_t(nScanOut), 0),
       outDirs = intsAttrOf(n, "scan_output_directions", size_t(nScanOut), 0);
  if (int64_t(inAxes.size()) != nScan || int64_t(inDirs.size()) != nScan || int64_t(outAxes.size()) != nScanOut ||
      int64_t(outDirs.size()) != nScanOut)
    return fail("scan axes and directions must have one entry per scan input and output");
  for (int k = 0; k < n.input_size(); ++k)
    if (unranked(input(k))) return unknown();
  std::vector<Value> state, scanIn;
  for (int64_t k = 0; k < nState; ++k) state.push_back(input(int(k)));
  int64_t length = -1;
  for (int64_t k = 0; k < nScan; ++k) {
    Value v = input(int(nState + k));
    auto t = cast<RankedTensorType>(v.getType());
    int64_t axis = inAxes[size_t(k)] < 0 ? inAxes[size_t(k)] + t.getRank() : inAxes[size_t(k)];
    if (axis < 0 || axis >= t.getRank()) return fail("a scan input axis is out of range");
    inAxes[size_t(k)] = axis;
    if (length >= 0 && t.getDimSize(axis) != length) return fail("the scan inputs have different lengths");
    length = t.getDimSize(axis);
    scanIn.push_back(v);
  }
  if (length > kMaxUnrolledIterations)
    return fail("more than " + std::to_string(kMaxUnrolledIterations) + " iterations to unroll");
  std::vector<std::vector<Value>> scans(static_cast<size_t>(nScanOut));
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> ins(state.begin(), state.end());
    for (int64_t k = 0; k < nScan; ++k) {
      int64_t at = inDirs[size_t(k)] ? length - 1 - t : t;
      Value index = b_.create<ConstantOp>(loc, attrFromTensor(ops::Tensor::fromInts(ops::DType::I64, {}, {at}), &ctx_));
      Value slice = create(GatherOp(), {scanIn[size_t(k)], index},
                           {b_.getNamedAttr("axis", b_.getI64IntegerAttr(inAxes[size_t(k)]))});
      if (!slice) return fail(err);
      ins.push_back(slice);
    }
    SmallVector<Value> outs;
    if (auto e = importSubgraph(*body, ins, outs, name + "/step" + std::to_string(t) + "/", result); !e.empty())
      return fail(e);
    if (int64_t(outs.size()) != nState + nScanOut) return fail("the body's outputs do not match the node's");
    for (int64_t k = 0; k < nState; ++k) state[size_t(k)] = outs[size_t(k)];
    for (int64_t k = 0; k < nScanOut; ++k) scans[size_t(k)].push_back(outs[size_t(nState + k)]);
  }
  SmallVector<Value> results(state.begin(), state.end());
  for (int64_t k = 0; k < nScanOut; ++k) {
    if (scans[size_t(k)].empty()) return fail("a scan over an empty axis has outputs of no shape kiln can know");
    auto parts = scans[size_t(k)];
    if (outDirs[size_t(k)]) std::reverse(parts.begin(), parts.end());
    int64_t rank = cast<RankedTensorType>(parts[0].getType()).getRank() + 1;
    int64_t axis = outAxes[size_t(k)] < 0 ? outAxes[size_t(k)] + rank : outAxes[size_t(k)];
    Value v = stack(parts, axis);
    if (!v) return fail(err);
    results.push_back(v);
  }
  return bind(results);
}

ImportResult GraphImporter::run(const onnx::ModelProto &model) {
  ImportResult result;
  auto failWith = [&](std::string msg) {
    result.error = std::move(msg);
    result.module = nullptr;
    return std::move(result);
  };
  if (!model.has_graph()) return failWith("the model has no graph");
  bool haveDefault = false;
  for (const auto &o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset_ = o.version();
      haveDefault = true;
    } else {
      domainOpsets_[o.domain()] = o.version();
    }
  }
  if (!haveDefault) {
    if (model.ir_version() >= 3 || model.opset_import_size()) return failWith("the model imports no ai.onnx opset");
    opset_ = 1;
  }
  if (opset_ < kOldestOpset || opset_ > kMaxOpset)
    return failWith("the model uses ai.onnx opset " + std::to_string(opset_) + "; kiln supports opsets " +
                    std::to_string(kOldestOpset) + "–" + std::to_string(kMaxOpset) + " (before " +
                    std::to_string(kMinOpset) + " only ops whose meaning has not changed since)");
  const onnx::GraphProto &g = model.graph();
  if (g.output_size() == 0) return failWith("the graph has no outputs");

  result.module = ModuleOp::create(UnknownLoc::get(&ctx_));
  ModuleOp module = *result.module;
  module->setAttr("kiln.opset", b_.getI64IntegerAttr(opset_));
  if (!model.producer_name().empty())
    module->setAttr("kiln.producer", b_.getStringAttr(model.producer_version().empty()
                                                          ? model.producer_name()
                                                          : model.producer_name() + " " + model.producer_version()));

  b_.setInsertionPointToEnd(module.getBody());
  // Inputs first so the function signature is known; initializers become constants in its body.
  std::map<std::string, bool> initNames;
  for (const auto &init : g.initializer()) initNames[init.name()] = true;
  SmallVector<Type> argTypes;
  std::vector<std::string> argNames;
  {
    // declareInputs skips initializers, which it finds in values_: mark them first.
    for (auto &kv : initNames) values_[kv.first] = Value();
    std::string err = declareInputs(g, argTypes, argNames);
    values_.clear();
    if (!err.empty()) return failWith(err);
    result.inputDimNames = dimNames_;
  }
  auto func =
      b_.create<func::FuncOp>(locFor(g.name().empty() ? "main" : g.name()), "main", b_.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (unsigned k = 0; k < argNames.size(); ++k) {
    func.setArgAttr(k, "kiln.name", b_.getStringAttr(argNames[k]));
    body->getArgument(k).setLoc(locFor(argNames[k]));
    values_[argNames[k]] = body->getArgument(k);
  }
  b_.setInsertionPointToStart(body);
  none_ = b_.create<NoneOp>(UnknownLoc::get(&ctx_));
  if (auto err = importInitializers(g); !err.empty()) return failWith(err);
  for (const auto &in : g.input()) {
    auto it = opts_.constantInputs.find(in.name());
    if (it == opts_.constantInputs.end() || values_.count(in.name())) continue;
    const auto &tt = in.type().tensor_type();
    bool match = static_cast<ops::DType>(tt.elem_type()) == it->second.dtype;
    if (tt.has_shape()) {
      match &= tt.shape().dim_size() == it->second.rank();
      for (int k = 0; match && k < tt.shape().dim_size(); ++k)
        match &= !tt.shape().dim(k).has_dim_value() || tt.shape().dim(k).dim_value() < 0 ||
                 tt.shape().dim(k).dim_value() == it->second.shape[k];
    }
    if (!match) {
      auto text = [](ops::DType t, const std::vector<int64_t> &dims) {
        std::string r = std::string(ops::dtypeName(t)) + " [";
        for (size_t k = 0; k < dims.size(); ++k)
          r += (k ? "x" : "") + (dims[k] < 0 ? std::string("?") : std::to_string(dims[k]));
        return r + "]";
      };
      std::vector<int64_t> declared;
      for (int k = 0; tt.has_shape() && k < tt.shape().dim_size(); ++k)
        declared.push_back(tt.shape().dim(k).has_dim_value() ? tt.shape().dim(k).dim_value() : -1);
      return failWith("constant input '" + in.name() + "' is " + text(it->second.dtype, it->second.shape) +
                      ", the graph declares " + text(static_cast<ops::DType>(tt.elem_type()), declared));
    }
    values_[in.name()] = b_.create<ConstantOp>(locFor(in.name()), attrFromTensor(it->second, &ctx_));
  }

  std::vector<int> order;
  if (auto err = sortNodes(g, order); !err.empty()) return failWith(err);
  for (int i : order)
    if (auto err = importNode(g.node(i), result); !err.empty()) return failWith(err);

  SmallVector<Value> rets;
  SmallVector<Type> retTypes;
  for (const auto &o : g.output()) {
    auto it = values_.find(o.name());
    if (it == values_.end()) return failWith("graph output '" + o.name() + "' is not produced by any node");
    Value v = it->second;
    // A declared type or shape the graph does not compute is an exporter's mistake that onnxruntime
    // runs anyway: the computed one wins, with a warning naming the output and both.
    if (auto rt = dyn_cast<RankedTensorType>(v.getType()); rt && o.type().has_tensor_type()) {
      const auto &tt = o.type().tensor_type();
      std::string computed =
          std::string(ops::dtypeName(dtypeOf(rt.getElementType()))) + " " + ops::shapeString(tensorTypeOf(rt).shape);
      if (tt.elem_type() != 0 && elementTypeOf(static_cast<ops::DType>(tt.elem_type()), &ctx_) != rt.getElementType()) {
        std::string declared = onnx::TensorProto_DataType_IsValid(tt.elem_type())
                                   ? onnx::TensorProto_DataType_Name(tt.elem_type())
                                   : std::to_string(tt.elem_type());
        result.warnings.push_back("graph output '" + o.name() + "' is declared " + declared + " but computes " +
                                  computed + " (the computed type is used)");
      } else if (tt.has_shape()) {
        bool mismatch = tt.shape().dim_size() != rt.getRank();
        for (int k = 0; !mismatch && k < tt.shape().dim_size(); ++k)
          mismatch = tt.shape().dim(k).has_dim_value() && tt.shape().dim(k).dim_value() >= 0 &&
                     tt.shape().dim(k).dim_value() != rt.getDimSize(k);
        if (mismatch) {
          std::string declared;
          for (int k = 0; k < tt.shape().dim_size(); ++k) {
            const auto &d = tt.shape().dim(k);
            declared += (k ? "x" : "") + (d.has_dim_value()   ? std::to_string(d.dim_value())
                                          : d.has_dim_param() ? d.dim_param()
                                                              : std::string("?"));
          }
          result.warnings.push_back("graph output '" + o.name() + "' is declared with shape " +
                                    (declared.empty() ? std::string("[] (a scalar)") : declared) + " but computes " +
                                    computed + " (the computed shape is used)");
        }
      }
    }
    rets.push_back(v);
    retTypes.push_back(v.getType());
  }
  b_.setInsertionPointToEnd(body);
  b_.create<func::ReturnOp>(UnknownLoc::get(&ctx_), rets);
  func.setFunctionType(b_.getFunctionType(argTypes, retTypes));
  for (int k = 0; k < g.output_size(); ++k) func.setResultAttr(k, "kiln.name", b_.getStringAttr(g.output(k).name()));
  if (none_.use_empty()) none_.getDefiningOp()->erase();

  std::string diag;
  {
    ScopedDiagnosticHandler handler(&ctx_, [&](Diagnostic &d) {
      if (diag.empty()) {
        llvm::raw_string_ostream os(diag);
        os << d;
        if (auto n = dyn_cast<NameLoc>(d.getLocation())) os << " (at node '" << n.getName().str() << "')";
      }
      return success();
    });
    if (failed(verify(module))) return failWith("the imported IR does not verify: " + diag);
  }
  return result;
}

}  // namespace

ImportResult importModelFile(const std::string &path, MLIRContext &ctx, const ImportOptions &opts) {
  registerKilnDialects(ctx);
  onnx::ModelProto model;
  if (auto err = loadModelFile(path, model); !err.empty()) {
    ImportResult r;
    r.error = err;
    return r;
  }
  std::string file = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  GraphImporter imp(ctx, opts, dirOf(path), file);
  return imp.run(model);
}

ImportResult importModelBytes(const std::string &data, bool text, const std::string &baseDir, MLIRContext &ctx,
                              const ImportOptions &opts) {
  registerKilnDialects(ctx);
  onnx::ModelProto model;
  if (auto err = parseModel(data, text, "<memory>", model); !err.empty()) {
    ImportResult r;
    r.error = err;
    return r;
  }
  GraphImporter imp(ctx, opts, baseDir, "<memory>");
  return imp.run(model);
}

}  // namespace kiln
