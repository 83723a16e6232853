// Runs a loaded engine on one GPU through the CUDA driver API: module loading with the
// architecture check, the weights and arena allocations, tensor bindings and the launch list.
#pragma once

#include "CudaDriver.h"
#include "LoadedEngine.h"
#include "Status.h"

#include <memory>
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
  Status enqueue(CUstream stream);
  bool usesGraphs() const { return engine_->desc.cudaGraph && cu_.hasGraphs(); }

 private:
  // A kernel argument that points into an I/O tensor: patched at enqueue time.
  struct IoPatch {
    size_t arg;
    int32_t io;
    uint64_t offset;
  };
  struct PreparedLaunch {
    size_t index;  // into desc.launches
    CUfunction function = nullptr;
    std::vector<uint64_t> slots;  // one 8-byte slot per argument, holding its value
    std::vector<void*> params;    // cuLaunchKernel's kernelParams: pointers to the slots
    std::vector<IoPatch> ioPatches;
  };

  Executor(const CudaDriver& cu, std::shared_ptr<const LoadedEngine> engine) : cu_(cu), engine_(std::move(engine)) {}
  Status init();
  Status selectContext();
  Status loadModules();
  Status allocate();
  void prepareLaunches();
  Status launchAll(CUstream stream);
  Status captureGraph(CUstream stream);
  void dropGraph();
  CUdeviceptr resolve(const BufferRef& b) const;
  std::string deviceText() const;

  const CudaDriver& cu_;
  std::shared_ptr<const LoadedEngine> engine_;
  CUcontext context_ = nullptr;
  bool ownsPrimaryContext_ = false;
  CUdevice device_ = 0;
  int deviceSm_ = 0;
  std::string deviceName_;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;  // per kernel
  CUdeviceptr weights_ = 0, arena_ = 0;
  std::vector<CUdeviceptr> ioAddress_;
  std::vector<PreparedLaunch> launches_;  // one per launch of the plan, in order
  CUgraphExec graph_ = nullptr;
  std::vector<CUdeviceptr> graphAddresses_;  // the bindings graph_ was captured with
};

}  // namespace kiln::rt
