#include "compiler/importer/Importer.h"

#include "compiler/eval/Evaluator.h"
#include "compiler/importer/OpTable.h"
#include "compiler/importer/TensorProto.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"

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

std::string parseShapeOverrides(const std::string &spec,
                                std::map<std::string, std::vector<int64_t>> &out) {
  std::string item;
  std::stringstream ss(spec);
  while (std::getline(ss, item, item.find(';') != std::string::npos ? ';' : ',')) {
    for (std::string part; !item.empty();) {
      size_t sep = item.find_first_of(";,");
      part = item.substr(0, sep);
      item = sep == std::string::npos ? "" : item.substr(sep + 1);
      if (part.empty()) continue;
      size_t colon = part.rfind(':');
      if (colon == std::string::npos || colon == 0)
        return "bad --shapes entry '" + part + "': expected NAME:D1xD2x...";
      std::string name = part.substr(0, colon), dims = part.substr(colon + 1);
      std::vector<int64_t> shape;
      std::stringstream ds(dims);
      for (std::string d; std::getline(ds, d, 'x');) {
        char *end = nullptr;
        long long v = std::strtoll(d.c_str(), &end, 10);
        if (d.empty() || *end != '\0' || v < 0)
          return "bad dimension '" + d + "' in --shapes entry '" + part + "'";
        shape.push_back(v);
      }
      if (dims == "scalar") shape.clear();
      out[name] = shape;
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
  std::string declareInputs(const onnx::GraphProto &g, SmallVectorImpl<Type> &types,
                            std::vector<std::string> &names);
  std::string sortNodes(const onnx::GraphProto &g, std::vector<int> &order);
  std::string importNode(const onnx::NodeProto &n, ImportResult &result);
  std::string importConstantNode(const onnx::NodeProto &n);
  std::string convertAttribute(const onnx::AttributeProto &a, Attribute &out, bool forUnsupported);
  Location locFor(const std::string &name) {
    return NameLoc::get(b_.getStringAttr(name), FileLineColLoc::get(b_.getStringAttr(file_), 0, 0));
  }
  Value constantFrom(const RawTensor &t, const std::string &name, Location loc);

  MLIRContext &ctx_;
  OpBuilder b_;
  const ImportOptions &opts_;
  std::string baseDir_, file_;
  int64_t opset_ = 0;
  std::map<std::string, int64_t> domainOpsets_;
  std::map<std::string, Value> values_;  // ONNX tensor name → SSA value
  Value none_;
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
  std::set<std::string> seen, all;
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
    auto ov = opts_.shapes.find(in.name());
    if (ov != opts_.shapes.end()) {
      shape = ov->second;
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(shape.size()))
        return "--shapes gives input '" + in.name() + "' rank " + std::to_string(shape.size()) +
               " but the model declares rank " + std::to_string(tt.shape().dim_size());
      for (int k = 0; tt.has_shape() && k < tt.shape().dim_size(); ++k) {
        const auto &d = tt.shape().dim(k);
        if (d.has_dim_value() && d.dim_value() != shape[k])
          return "--shapes gives input '" + in.name() + "' dimension " + std::to_string(k) + " = " +
                 std::to_string(shape[k]) + " but the model fixes it to " + std::to_string(d.dim_value());
      }
    } else {
      if (!tt.has_shape())
        return "graph input '" + in.name() + "' has no shape: pass --shapes " + in.name() + ":D1xD2x...";
      for (int k = 0; k < tt.shape().dim_size(); ++k) {
        const auto &d = tt.shape().dim(k);
        if (!d.has_dim_value() || d.dim_value() < 0) {
          std::string sym = d.has_dim_param() ? "'" + d.dim_param() + "'" : "unknown";
          return "graph input '" + in.name() + "' has symbolic dimension " + sym + " at axis " +
                 std::to_string(k) + "; dynamic shapes are not supported: pass --shapes " + in.name() + ":" +
                 [&] {
                   std::string s;
                   for (int j = 0; j < tt.shape().dim_size(); ++j)
                     s += (j ? "x" : "") + (tt.shape().dim(j).has_dim_value()
                                                ? std::to_string(tt.shape().dim(j).dim_value())
                                                : std::string("N"));
                   return s;
                 }();
        }
        shape.push_back(d.dim_value());
      }
    }
    types.push_back(RankedTensorType::get(shape, et));
    names.push_back(in.name());
  }
  return "";
}

std::string GraphImporter::sortNodes(const onnx::GraphProto &g, std::vector<int> &order) {
  std::map<std::string, int> producer;
  std::set<std::string> defined;
  for (auto &kv : values_) defined.insert(kv.first);
  for (const auto &in : g.input()) defined.insert(in.name());
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto &o : g.node(i).output()) {
      if (o.empty()) continue;
      if (defined.count(o)) return nodeLabel(g.node(i)) + " produces '" + o + "', which is a graph input or initializer";
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
    for (const auto &in : g.node(i).input()) {
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

std::string GraphImporter::convertAttribute(const onnx::AttributeProto &a, Attribute &out,
                                            bool forUnsupported) {
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
    if (auto err = readTensorProto(a.t(), baseDir_, raw, opts_.allowExternalOutside); !err.empty()) return nodeLabel(n) + ": " + err;
    values_[n.output(0)] = constantFrom(raw, n.output(0), loc);
    return "";
  }
  ops::Tensor t;
  if (a.name() == "value_float") t = ops::Tensor::scalar(ops::DType::F32, a.f());
  else if (a.name() == "value_int") t = ops::Tensor::fromInts(ops::DType::I64, {}, {a.i()});
  else if (a.name() == "value_floats")
    t = ops::Tensor::fromDoubles(ops::DType::F32, {a.floats_size()}, std::vector<double>(a.floats().begin(), a.floats().end()));
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

  Location loc = locFor(displayName(n));
  std::vector<Value> operands;
  bool unknownInput = false;
  for (const auto &in : n.input()) {
    Value v = in.empty() ? none_ : values_.at(in);
    unknownInput |= isa<UnrankedTensorType>(v.getType());
    operands.push_back(v);
  }
  int64_t opset = domain.empty() ? opset_ : (domainOpsets_.count(domain) ? domainOpsets_[domain] : 1);
  bool known = false;
  const OpEntry *entry = findOpEntry(domain, n.op_type(), opset, &known);

  auto makeUnsupported = [&](const std::string &reason) {
    SmallVector<NamedAttribute> attrs;
    for (const auto &a : n.attribute()) {
      Attribute v;
      convertAttribute(a, v, /*forUnsupported=*/true);
      attrs.push_back(b_.getNamedAttr(a.name(), v));
    }
    SmallVector<Type> resultTypes(n.output_size(), UnrankedTensorType::get(b_.getF32Type()));
    auto op = b_.create<UnsupportedOp>(loc, resultTypes, operands, b_.getStringAttr(n.op_type()),
                                       b_.getStringAttr(domain), b_.getI64IntegerAttr(opset),
                                       b_.getStringAttr(reason), b_.getDictionaryAttr(attrs));
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) values_[n.output(k)] = op->getResult(k);
    result.unsupported.push_back(displayName(n) + " (" +
                                 (domain.empty() ? "" : domain + "::") + n.op_type() + "): " + reason);
    return std::string();
  };

  if (!entry) {
    std::string reason;
    if (!domain.empty() && domain != "ai.onnx.ml" && !known) reason = "custom domain '" + domain + "'";
    else if (known) reason = "not supported at opset " + std::to_string(opset);
    else reason = "no kiln op for " + (domain.empty() ? std::string("ai.onnx") : domain) + "::" + n.op_type();
    return makeUnsupported(reason);
  }

  NodeImport ni{n, opset, b_, loc, none_, operands, {}, ""};
  for (const auto &a : n.attribute()) {
    Attribute v;
    if (auto err = convertAttribute(a, v, false); !err.empty()) return nodeLabel(n) + ": " + err;
    ni.attrs.set(a.name(), v);
  }
  if (entry->normalize && !entry->normalize(ni)) return nodeLabel(n) + ": " + ni.error;

  OperationState state(loc, "kiln." + entry->mnemonic);
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
      return nodeLabel(n) + ": " + error;
    }
    if (types.size() != op->getNumResults()) {
      size_t declared = op->getNumResults();
      op->erase();
      return nodeLabel(n) + ": the node has " + std::to_string(declared) + " outputs, kiln's " +
             n.op_type() + " produces " + std::to_string(types.size());
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
    if (model.ir_version() >= 3 || model.opset_import_size())
      return failWith("the model imports no ai.onnx opset");
    opset_ = 1;
  }
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    return failWith("the model uses ai.onnx opset " + std::to_string(opset_) + "; kiln supports opsets " +
                    std::to_string(kMinOpset) + "–" + std::to_string(kMaxOpset));
  const onnx::GraphProto &g = model.graph();
  if (g.output_size() == 0) return failWith("the graph has no outputs");

  result.module = ModuleOp::create(UnknownLoc::get(&ctx_));
  ModuleOp module = *result.module;
  module->setAttr("kiln.opset", b_.getI64IntegerAttr(opset_));
  if (!model.producer_name().empty())
    module->setAttr("kiln.producer", b_.getStringAttr(model.producer_version().empty() ? model.producer_name()
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
  }
  auto func = b_.create<func::FuncOp>(locFor(g.name().empty() ? "main" : g.name()), "main",
                                      b_.getFunctionType(argTypes, {}));
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
        match &= !tt.shape().dim(k).has_dim_value() || tt.shape().dim(k).dim_value() == it->second.shape[k];
    }
    if (!match) {
      auto text = [](ops::DType t, const std::vector<int64_t> &dims) {
        std::string r = std::string(ops::dtypeName(t)) + " [";
        for (size_t k = 0; k < dims.size(); ++k) r += (k ? "x" : "") + (dims[k] < 0 ? std::string("?") : std::to_string(dims[k]));
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
    if (auto rt = dyn_cast<RankedTensorType>(v.getType()); rt && o.type().has_tensor_type()) {
      const auto &tt = o.type().tensor_type();
      if (tt.elem_type() != 0 && elementTypeOf(static_cast<ops::DType>(tt.elem_type()), &ctx_) != rt.getElementType())
        return failWith("graph output '" + o.name() + "' is declared with element type " +
                        std::to_string(tt.elem_type()) + " but computes " + ops::dtypeName(dtypeOf(rt.getElementType())));
      if (tt.has_shape()) {
        bool mismatch = tt.shape().dim_size() != rt.getRank();
        for (int k = 0; !mismatch && k < tt.shape().dim_size(); ++k)
          mismatch = tt.shape().dim(k).has_dim_value() && tt.shape().dim(k).dim_value() != rt.getDimSize(k);
        if (mismatch)
          return failWith("graph output '" + o.name() + "' is declared with a shape other than the computed " +
                          ops::shapeString(tensorTypeOf(rt).shape));
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

ImportResult importModelBytes(const std::string &data, bool text, const std::string &baseDir,
                              MLIRContext &ctx, const ImportOptions &opts) {
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
