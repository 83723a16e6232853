// Where every value lives: the I/O table, weights packed 64-byte aligned in first-use order, the
// arena (intermediates by liveness over launch order, compiler/analysis/MemoryPlan.h), and the
// final launch list with the copies into outputs not written in place.
#include "codegen/lowering/Lowering.h"

#include "compiler/analysis/MemoryPlan.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen {

void Lowering::declareIo(llvm::DenseMap<Value, int32_t> &writesOutput) {
  Block &body = f_.getBody().front();
  Operation *terminator = body.getTerminator();
  // I/O table: arguments, then results.
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    auto name = f_.getArgAttrOfType<StringAttr>(k, "kiln.name");
    ops::TensorType t = tensorTypeOf(body.getArgument(k).getType());
    desc_.io.push_back({name ? name.str() : "input" + std::to_string(k), static_cast<int32_t>(t.dtype), t.shape, true});
    placed_[body.getArgument(k)] = {rt::BufferRef::Space::Io, 0, static_cast<int32_t>(k)};
  }
  std::vector<Value> results(terminator->getOperands().begin(), terminator->getOperands().end());
  for (unsigned k = 0; k < results.size(); ++k) {
    auto name = f_.getResultAttrOfType<StringAttr>(k, "kiln.name");
    ops::TensorType t = tensorTypeOf(results[k].getType());
    int32_t io = static_cast<int32_t>(desc_.io.size());
    desc_.io.push_back(
        {name ? name.str() : "output" + std::to_string(k), static_cast<int32_t>(t.dtype), t.shape, false});
    Value v = results[k];
    Operation *d = v.getDefiningOp();
    if (d && !isAlias(d) && !isa<ConstantOp>(d) && !writesOutput.count(v)) writesOutput[v] = io;
  }
}

void Lowering::placeWeights(ConstantOp c) {
  if (placed_.count(c.getResult())) return;
  std::vector<uint8_t> bytes = bytesFromAttr(c.getValue());
  if (bytes.empty() && c.getValue().getNumElements() > 0) bytes = ops::tensorToBytes(tensorFromAttr(c.getValue()));
  size_t offset = (desc_.weights.size() + 63) / 64 * 64;
  desc_.weights.resize(offset);
  desc_.weights.insert(desc_.weights.end(), bytes.begin(), bytes.end());
  placed_[c.getResult()] = {rt::BufferRef::Space::Weights, offset, -1};
  weightStarts_.push_back(offset);
}

rt::BufferRef Lowering::bufferOf(Value v, int64_t extraOffset) {
  auto it = placed_.find(root(v));
  if (it == placed_.end()) throw std::logic_error("value has no buffer");
  rt::BufferRef b = it->second;
  b.offset += extraOffset;
  return b;
}

void Lowering::placeBuffers(const llvm::DenseMap<Value, int32_t> &writesOutput) {
  Operation *terminator = f_.getBody().front().getTerminator();
  std::vector<Value> results(terminator->getOperands().begin(), terminator->getOperands().end());

  // Weights: every constant that a launch reads, 64-byte aligned (bytes as stored in the IR), in
  // first-use order.
  for (auto &l : launches_)
    for (Value param : l.params) {
      if (auto c = root(param).getDefiningOp<ConstantOp>()) placeWeights(c);
    }

  // Arena: intermediates, lifetimes over launch order (an alias extends its root's lifetime).
  llvm::DenseMap<Value, int64_t> firstUse, lastUse;
  for (size_t i = 0; i < launches_.size(); ++i)
    for (Value v : launches_[i].params) {
      Value r = root(v);
      if (!firstUse.count(r)) firstUse[r] = i;
      lastUse[r] = i;
    }
  int64_t end = static_cast<int64_t>(launches_.size());
  for (Value v : results) lastUse[root(v)] = end;  // copied into outputs after the last launch
  std::vector<Value> arenaValues;
  std::vector<BufferRequest> requests;
  for (auto &[v, first] : firstUse) {
    (void)first;
    if (placed_.count(v)) continue;
    if (writesOutput.count(v)) {
      placed_[v] = {rt::BufferRef::Space::Io, 0, writesOutput.lookup(v)};
      continue;
    }
    arenaValues.push_back(v);
  }
  // Deterministic order: by first use, then by result position.
  std::sort(arenaValues.begin(), arenaValues.end(), [&](Value a, Value b) {
    if (firstUse[a] != firstUse[b]) return firstUse[a] < firstUse[b];
    return cast<OpResult>(a).getResultNumber() < cast<OpResult>(b).getResultNumber();
  });
  for (Value v : arenaValues) requests.push_back({bytesOf(v), firstUse[v], lastUse[v]});
  MemoryPlan plan = planMemory(requests);
  for (size_t k = 0; k < arenaValues.size(); ++k)
    placed_[arenaValues[k]] = {rt::BufferRef::Space::Arena, static_cast<uint64_t>(plan.offsets[k]), -1};
  desc_.arenaBytes = plan.arenaBytes;
}

void Lowering::finishLaunches(const std::vector<int32_t> &kernelOf) {
  Block &body = f_.getBody().front();
  std::vector<Value> results(body.getTerminator()->getOperands().begin(), body.getTerminator()->getOperands().end());
  for (size_t i = 0; i < launches_.size(); ++i) {
    const PendingLaunch &p = launches_[i];
    rt::Launch l;
    l.node = p.node;
    l.flops = p.flops;
    llvm::SmallPtrSet<void *, 8> seen;  // (a tensor passed twice is moved once)
    for (Value v : p.params)
      if (seen.insert(v.getAsOpaquePointer()).second) l.trafficBytes += uint64_t(bytesOf(v));
    if (p.library) {
      l.kind = rt::Launch::Kind::Gemm;
      l.gemm = p.gemm;
      size_t k = 0;
      auto next = [&] {  // (an operand read through a view starts inside its buffer)
        size_t i = k++;
        return bufferOf(p.params[i], p.paramOffsets[i]);
      };
      l.gemm.a = next();
      l.gemm.b = next();
      if (p.gemm.beta != 0.f) l.gemm.c = next();
      if (p.gemm.epilogue & rt::GemmCall::Bias) l.gemm.bias = next();
      l.gemm.d = next();
      if (p.gemm.fp8()) l.gemm.scaleA = next(), l.gemm.scaleB = next();
      desc_.launches.push_back(std::move(l));
      continue;
    }
    l.kind = rt::Launch::Kind::Kernel;
    l.kernel = kernelOf[i];
    for (int d = 0; d < 3; ++d) l.grid[d] = p.kernel.grid[d], l.block[d] = p.kernel.block[d];
    l.sharedBytes = p.kernel.sharedBytes;
    for (size_t k = 0; k < p.params.size(); ++k) {
      rt::BufferRef b = bufferOf(p.params[k], p.paramOffsets[k]);
      auto map = p.kernel.tensorMaps.find(int(k));
      if (map == p.kernel.tensorMaps.end()) {
        l.args.push_back(rt::LaunchArg::buf(b));
        continue;
      }
      rt::TensorMap m = map->second;
      m.buffer = b;
      l.args.push_back(rt::LaunchArg::ofTensorMap(std::move(m)));
    }
    desc_.launches.push_back(std::move(l));
  }
  for (Value v : results)
    if (auto c = root(v).getDefiningOp<ConstantOp>()) placeWeights(c);  // a constant output
  // Outputs not written in place (aliases of inputs, weights or intermediates; repeated results).
  for (unsigned k = 0; k < results.size(); ++k) {
    int32_t io = static_cast<int32_t>(body.getNumArguments() + k);
    rt::BufferRef src = bufferOf(results[k]);
    if ((src.space == rt::BufferRef::Space::Io && src.io == io) || bytesOf(results[k]) == 0) continue;
    rt::Launch l;
    l.kind = rt::Launch::Kind::Copy;
    l.src = src;
    l.dst = {rt::BufferRef::Space::Io, 0, io};
    l.bytes = bytesOf(results[k]);
    l.trafficBytes = 2 * l.bytes;
    l.node = "output " + desc_.io[io].name;
    desc_.launches.push_back(std::move(l));
  }
}

}  // namespace kiln::codegen
