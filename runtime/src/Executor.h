// Runs a loaded engine on one GPU through the CUDA driver API: module loading with the
// architecture check and the weights upload (into the device image that the engine's contexts on
// one CUDA context share), the arena, tensor bindings and the launch list.
#pragma once

#include "runtime/driver/CublasLt.h"
#include "runtime/driver/CudaDriver.h"
#include "LoadedEngine.h"
#include "Status.h"

#include <map>
#include <memory>
#include <set>
#include <vector>

namespace kiln::rt {

class Executor {
 public:
  // Everything that can fail happens here, so that enqueue only launches. Returns null on
  // failure, with `status` saying why; nothing is left allocated then.
  static std::unique_ptr<Executor> create(std::shared_ptr<const LoadedEngine> engine, Status& status);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const LoadedEngine& engine() const { return *engine_; }
  void bind(int32_t io, CUdeviceptr address) { ioAddress_[size_t(io)] = address; }
  // Dynamic shapes: an input's shape for the next enqueues. Each axis of a profile dim must lie
  // in its range and every other axis equal the engine's; whether inputs that share a dim agree
  // is checked when the shapes are used (resolveShapes).
  Status setInputShape(int32_t io, const int64_t* dims, int32_t rank);
  // Several profiles: the one whose ranges and specialisations the next shapes use (every
  // input's shape becomes its opt shape). Index checked by the caller.
  void setProfile(size_t profile);
  // Picks the specialisation for the inputs' shapes (and whether they are padded to it) and
  // derives the outputs' shapes; a no-op until an input shape changes.
  Status resolveShapes();
  // I/O tensor io's shape for the next enqueue (after resolveShapes).
  const std::vector<int64_t>& tensorShape(int32_t io) const { return shapes_[size_t(io)]; }
  size_t specialisation() const { return spec_; }
  Status enqueue(CUstream stream);
  // Runs the launches one by one on `stream` with an event between each and waits: ms[i] is
  // launch i's device time.
  Status profile(CUstream stream, std::vector<float>& ms);
  // CUDA graphs, unless NVTX ranges are wanted (each launch is then its own range).
  bool usesGraphs() const { return engine_->desc.cudaGraph && cu_.hasGraphs() && !nvtx_; }

 private:
  // A kernel argument that points into an I/O tensor: patched at enqueue time.
  struct IoPatch {
    size_t arg;
    int32_t io;
    uint64_t offset;
  };
  struct PreparedLaunch {
    size_t index;                    // into its specialisation's launches
    const Launch* launch = nullptr;  // the launch itself
    CUfunction function = nullptr;
    std::vector<uint64_t> slots;  // one 8-byte slot per argument, holding its value
    std::vector<void*> params;    // cuLaunchKernel's kernelParams: pointers to the slots
    std::vector<IoPatch> ioPatches;
    // Kind::TensorMap arguments: their encoded maps (the params point at them), and those over an
    // I/O tensor, encoded again at a launch when the tensor's address is not the one encoded.
    struct IoMap {
      size_t arg, map;
      CUdeviceptr encodedAt = ~CUdeviceptr(0);  // (no address yet)
    };
    std::vector<CUtensorMap> maps;
    std::vector<IoMap> ioMaps;
    // Kind::Gemm: cuBLASLt descriptors and the algorithm chosen for this device at create time.
    cublasLtMatmulDesc matmul = nullptr;
    cublasLtMatrixLayout layouts[4] = {nullptr, nullptr, nullptr, nullptr};  // A, B, C, D
    cublasLtMatmulAlgo algo{};
    // Pointer-array batches: the products' A, B, C and D addresses, four arrays of `batch`.
    CUdeviceptr batchPointers = 0;
  };

  Executor(const CudaDriver& cu, std::shared_ptr<const LoadedEngine> engine) : cu_(cu), engine_(std::move(engine)) {}
  Status init();
  Status selectContext();
  // Fills a new device image: loads the modules (the architecture check) and uploads the weights.
  Status loadImage(DeviceImage& image);
  Status uploadWeights(DeviceImage& image);
  Status allocate();  // the arena
  Status deviceAlloc(CUdeviceptr& p, uint64_t bytes, const char* what) const;
  Status prepareLaunches();
  Status prepareLaunch(PreparedLaunch& p, const Launch& l, size_t index);
  Status encodeTensorMap(const PreparedLaunch& p, size_t arg, CUtensorMap& out) const;
  Status prepareGemms();  // loads cuBLASLt and picks algorithms, when the engine has library GEMMs
  // Zero-padded inputs and cut outputs: copies between a tensor of `from` and one of `to`
  // (row-major, same rank, each dim of the smaller no larger than the larger's) of the common part.
  Status copyRegion(CUdeviceptr dst, const std::vector<int64_t>& dstShape, CUdeviceptr src,
                    const std::vector<int64_t>& srcShape, size_t elementBytes, CUstream stream);
  Status launchGemm(PreparedLaunch& p, CUstream stream);
  // A pointer-array batch's address arrays, uploaded once (its operands never move).
  Status uploadBatchPointers(PreparedLaunch& p, const GemmCall& g);
  // The A, B, C and D arguments of p's cublasLtMatmul: the operands, or their address arrays.
  void gemmOperands(const PreparedLaunch& p, const GemmCall& g, CUdeviceptr out[4]) const;
  // runtime.gemm_search: the fastest of the heuristic's candidates for p's product, timed on
  // scratch memory (`scratch_`, grown as needed; a pointer-array batch on its own operands);
  // false when none could be timed.
  bool fastestAlgo(PreparedLaunch& p, const GemmCall& g, const cublasLtMatmulHeuristicResult* candidates, int count,
                   cublasLtMatmulAlgo& best);
  // An fp8 product's per-row and per-column scale vectors, set on its cuBLASLt descriptor.
  void setScalePointers(PreparedLaunch& p, const GemmCall& g);
  Status launchAll(CUstream stream);  // stageInputs, the current specialisation's launches, unstageOutputs
  // Padded shapes: each input zero-padded into its staging buffer (and every launch pointed at the
  // staging buffers of the padded tensors), then each output's real part copied out.
  Status stageInputs(CUstream stream);
  Status unstageOutputs(CUstream stream);
  Status launchOne(PreparedLaunch& p, CUstream stream);
  Status checkBound() const;
  Status captureGraph(CUgraphExec& exec);
  void dropGraphs();
  CUdeviceptr resolve(const BufferRef& b) const;
  std::string deviceText() const;

  const CudaDriver& cu_;
  std::shared_ptr<const LoadedEngine> engine_;
  CUcontext context_ = nullptr;
  bool ownsPrimaryContext_ = false;
  CUdevice device_ = 0;
  int deviceSm_ = 0;
  std::string deviceName_;
  std::shared_ptr<const DeviceImage> image_;  // modules and weights, shared with the engine's other
                                              // contexts on context_
  CUdeviceptr arena_ = 0;                     // as large as the largest specialisation's
  std::vector<CUdeviceptr> ioAddress_;        // the application's bindings
  std::vector<CUdeviceptr> runAddress_;       // what the launches use: a binding, or its staging buffer when padded
  // One per specialisation: one prepared launch per launch of its plan, in order.
  std::vector<std::vector<PreparedLaunch>> plans_;
  std::vector<PreparedLaunch>* launches_ = nullptr;  // the current specialisation's
  size_t spec_ = 0;
  size_t profile_ = 0;
  Profile profileDesc_;  // its ranges and specialisations
  // Dynamic shapes: each I/O tensor's shape for the next enqueue, whether it is padded to the
  // specialisation's (then it runs in its staging buffer, sized for the profile's max), and
  // whether an input shape changed since resolveShapes.
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<bool> padded_;
  std::vector<CUdeviceptr> staging_;
  bool shapesDirty_ = false;
  // An NVTX range named by its nodes around every launch (for Nsight Systems): set by KILN_NVTX=1
  // at creation; profile() turns it on for its run.
  bool nvtx_ = false;
  CUstream work_ = nullptr;  // the context's own non-blocking stream (set-up, capture)
  std::set<size_t> warmed_;  // specialisations whose first graph-mode enqueue ran directly
  // CUDA graphs by key: the bindings, then each tensor's rank and dims.
  std::map<std::vector<uint64_t>, CUgraphExec> graphs_;
  static constexpr size_t kMaxGraphs = 16;
  const CublasLt* lt_ = nullptr;
  cublasLtHandle ltHandle_ = nullptr;
  CUdeviceptr ltWorkspace_ = 0;
  CUdeviceptr scratch_ = 0;  // gemm_search's operands, freed when the search is done
  size_t scratchBytes_ = 0;
  static constexpr size_t kLtWorkspaceBytes = 32u << 20;
  static constexpr int kGemmCandidates = 8, kGemmSearchRuns = 5;  // runtime.gemm_search
};

}  // namespace kiln::rt
