#include "Executor.h"

#if KILN_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

namespace kiln::rt {

namespace {

// Makes `ctx` current for the scope and restores the caller's context afterwards, so the
// runtime never changes which context is current on the application's thread.
class ScopedContext {
 public:
  ScopedContext(const CudaDriver& cu, CUcontext ctx) : cu_(cu) { pushed_ = cu_.cuCtxPushCurrent(ctx) == CUDA_SUCCESS; }
  ~ScopedContext() {
    CUcontext popped;
    if (pushed_) cu_.cuCtxPopCurrent(&popped);
  }
  bool ok() const { return pushed_; }

 private:
  const CudaDriver& cu_;
  bool pushed_;
};

// Held while a context is created or destroyed, while it captures its CUDA graph and during its
// first (warm-up) enqueue: the steps that load code lazily (cuBLASLt's kernels load at their first
// launch), allocate, free or synchronise. Serialising them keeps one thread's set-up from
// invalidating another thread's capture; replays and later enqueues never take it.
std::mutex& setupMutex() {
  static std::mutex m;
  return m;
}

kiln_status codeFor(CUresult r) { return r == CUDA_ERROR_OUT_OF_MEMORY ? KILN_ERROR_OUT_OF_MEMORY : KILN_ERROR_CUDA; }

std::string smText(int sm) { return "sm_" + std::to_string(sm); }

bool archSpecific(const std::string& arch) { return !arch.empty() && (arch.back() == 'a' || arch.back() == 'f'); }

// An NVTX range in the "kiln" domain for the scope when `on` (nothing without an NVTX tool such
// as Nsight Systems attached: the calls then return at once).
class NvtxRange {
 public:
  NvtxRange(bool on, const char* name) : on_(on) {
#if KILN_HAVE_NVTX
    if (!on_) return;
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    nvtxDomainRangePushEx(domain(), &a);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#if KILN_HAVE_NVTX
    if (on_) nvtxDomainRangePop(domain());
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
#if KILN_HAVE_NVTX
  static nvtxDomainHandle_t domain() {
    static nvtxDomainHandle_t d = nvtxDomainCreateA("kiln");
    return d;
  }
#endif
  bool on_;
};

bool nvtxFromEnvironment() {
  const char* v = std::getenv("KILN_NVTX");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

std::unique_ptr<Executor> Executor::create(std::shared_ptr<const LoadedEngine> engine, Status& status) {
  std::string why;
  const CudaDriver* cu = cudaDriver(why);
  if (!cu) {
    status = makeStatus(KILN_ERROR_NO_DEVICE, why);
    return nullptr;
  }
  std::unique_ptr<Executor> e(new Executor(*cu, std::move(engine)));
  e->nvtx_ = nvtxFromEnvironment();
  status = e->init();
  if (!status.ok()) return nullptr;  // the destructor frees whatever init made
  return e;
}

Status Executor::init() {
  std::lock_guard<std::mutex> lock(setupMutex());
  Status s = selectContext();
  if (!s.ok()) return s;
  ScopedContext scope(cu_, context_);
  if (!scope.ok()) return makeStatus(KILN_ERROR_CUDA, "cannot make the CUDA context current");
  // The context's own stream: uploads, the algorithm search and graph capture run on it, never on
  // the legacy default stream, which would synchronise with (and so invalidate) a capture that
  // another thread has under way on a blocking stream.
  CUresult r = cu_.cuStreamCreate(&work_, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    work_ = nullptr;
    return makeStatus(codeFor(r), "cuStreamCreate failed: " + cu_.describe(r));
  }
  image_ = engine_->images.acquire(
      cu_, context_, [this](DeviceImage& image) { return loadImage(image); }, s);
  if (!image_) return s;
  if ((s = allocate()).ok() && (s = prepareLaunches()).ok()) s = prepareGemms();
  return s;
}

Status Executor::selectContext() {
  CUresult r = cu_.cuCtxGetCurrent(&context_);
  if (r != CUDA_SUCCESS) return makeStatus(KILN_ERROR_CUDA, "cuCtxGetCurrent failed: " + cu_.describe(r));
  if (!context_) {
    // No context on this thread: use device 0's primary context, the one the CUDA runtime API
    // (cudaMalloc, cudaStreamCreate, ...) uses too, so pointers and streams from it work here.
    if ((r = cu_.cuDeviceGet(&device_, 0)) != CUDA_SUCCESS)
      return makeStatus(KILN_ERROR_NO_DEVICE, "cuDeviceGet(0) failed: " + cu_.describe(r));
    if ((r = cu_.cuDevicePrimaryCtxRetain(&context_, device_)) != CUDA_SUCCESS) {
      context_ = nullptr;
      return makeStatus(codeFor(r), "cannot retain the primary context of device 0: " + cu_.describe(r));
    }
    ownsPrimaryContext_ = true;
  }
  ScopedContext scope(cu_, context_);
  if ((r = cu_.cuCtxGetDevice(&device_)) != CUDA_SUCCESS)
    return makeStatus(KILN_ERROR_CUDA, "cuCtxGetDevice failed: " + cu_.describe(r));
  int major = 0, minor = 0;
  if ((r = cu_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_)) != CUDA_SUCCESS ||
      (r = cu_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_)) != CUDA_SUCCESS)
    return makeStatus(KILN_ERROR_CUDA, "cannot read the device's compute capability: " + cu_.describe(r));
  deviceSm_ = major * 10 + minor;
  char name[256] = {0};
  if (cu_.cuDeviceGetName(name, sizeof name - 1, device_) == CUDA_SUCCESS) deviceName_ = name;
  return Status::success();
}

std::string Executor::deviceText() const {
  return "device " + std::to_string(device_) + (deviceName_.empty() ? "" : " (" + deviceName_ + ")") + ", " +
         smText(deviceSm_);
}

Status Executor::loadImage(DeviceImage& image) {
  const EngineDesc& d = engine_->desc;
  const bool exact = deviceSm_ == d.sm;
  // PTX compiled for sm_X runs on sm_X and newer, except arch-specific PTX (sm_90a), which
  // runs only on exactly sm_X. A cubin is used only for exactly its sm.
  const bool ptxRuns = exact || (deviceSm_ > d.sm && !archSpecific(d.arch));
  for (size_t i = 0; i < d.modules.size(); ++i) {
    const ModuleDesc& m = d.modules[i];
    CUmodule module = nullptr;
    CUresult r;
    std::string jitLog;
    if (exact && !m.cubin.empty()) {
      r = cu_.cuModuleLoadData(&module, m.cubin.data());
    } else if (ptxRuns && !m.ptx.empty()) {
      // JIT-compile the PTX, keeping the compiler's error log for the message.
      char log[4096] = {0};
      int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void* values[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log - 1))};
      r = cu_.cuModuleLoadDataEx(&module, m.ptx.c_str(), 2, options, values);
      jitLog = log;
    } else {
      std::string has = m.cubin.empty() ? "PTX only" : m.ptx.empty() ? "a cubin only" : "a cubin and PTX";
      std::string why = deviceSm_ < d.sm ? "the device is older than the target"
                        : archSpecific(d.arch)
                            ? "arch-specific code runs only on exactly " + smText(d.sm)
                            : "a cubin runs only on exactly " + smText(d.sm) + " and there is no PTX";
      return makeStatus(KILN_ERROR_ARCH, "the engine targets " + d.arch + " (module " + std::to_string(i) + " has " +
                                             has + ") but " + deviceText() + " cannot run it: " + why +
                                             "; rebuild the engine with --arch " + smText(deviceSm_));
    }
    if (r != CUDA_SUCCESS)
      return makeStatus(codeFor(r), "loading module " + std::to_string(i) + " on " + deviceText() + " failed: " +
                                        cu_.describe(r) + (jitLog.empty() ? "" : "\nPTX JIT log:\n" + jitLog));
    image.modules.push_back(module);
  }
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    CUfunction f = nullptr;
    CUresult r = cu_.cuModuleGetFunction(&f, image.modules[size_t(d.kernels[k].module)], d.kernels[k].entry.c_str());
    if (r != CUDA_SUCCESS)
      return makeStatus(KILN_ERROR_FORMAT, "kernel " + std::to_string(k) + ": module " +
                                               std::to_string(d.kernels[k].module) + " has no function '" +
                                               d.kernels[k].entry + "': " + cu_.describe(r));
    image.functions.push_back(f);
  }
  // Dynamic shared memory above 48 KiB must be opted into per function.
  std::map<int32_t, uint32_t> maxShared;
  for (size_t s = 0; s < d.numSpecialisations(); ++s)
    for (const Launch& l : d.launchesOf(s))
      if (l.kind == Launch::Kind::Kernel && l.sharedBytes > 48 * 1024)
        maxShared[l.kernel] = std::max(maxShared[l.kernel], l.sharedBytes);
  for (const auto& [kernel, bytes] : maxShared) {
    CUresult r = cu_.cuFuncSetAttribute(image.functions[size_t(kernel)],
                                        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
    if (r != CUDA_SUCCESS)
      return makeStatus(KILN_ERROR_CUDA, "kernel '" + d.kernels[size_t(kernel)].entry + "' needs " +
                                             std::to_string(bytes) + " bytes of shared memory, more than " +
                                             deviceText() + " allows: " + cu_.describe(r));
  }
  return uploadWeights(image);
}

Status Executor::deviceAlloc(CUdeviceptr& p, uint64_t bytes, const char* what) const {
  CUresult r = cu_.cuMemAlloc(&p, size_t(bytes));
  if (r == CUDA_SUCCESS) return Status::success();
  p = 0;
  return makeStatus(codeFor(r), "allocating the " + std::to_string(bytes) + "-byte " + what + " on " + deviceText() +
                                    ": " + cu_.describe(r));
}

Status Executor::uploadWeights(DeviceImage& image) {
  if (!engine_->weights.size) return Status::success();
  Status s = deviceAlloc(image.weights, engine_->weights.size, "weights");
  if (!s.ok()) return s;
  // Straight from the engine file's bytes.
  CUresult r = cu_.cuMemcpyHtoDAsync(image.weights, engine_->weightsData(), size_t(engine_->weights.size), work_);
  if (r == CUDA_SUCCESS) r = cu_.cuStreamSynchronize(work_);
  if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "uploading the weights: " + cu_.describe(r));
  return Status::success();
}

Status Executor::allocate() {
  const EngineDesc& d = engine_->desc;
  uint64_t arena = 0;
  for (size_t i = 0; i < d.numSpecialisations(); ++i) arena = std::max(arena, d.arenaOf(i));
  if (arena) {
    Status s = deviceAlloc(arena_, arena, "arena");
    if (!s.ok()) return s;
  }
  ioAddress_.assign(d.io.size(), 0);
  runAddress_.assign(d.io.size(), 0);
  padded_.assign(d.io.size(), false);
  staging_.assign(d.io.size(), 0);
  shapes_.clear();
  for (const IoTensor& t : d.io) shapes_.push_back(t.shape);
  profileDesc_ = d.profileAt(0);
  // Staging buffers, for the tensors that have an axis of a dim the runtime may pad: as large as
  // the tensor in the largest specialisation (sizes the checker bounds).
  for (size_t i = 0; i < d.io.size(); ++i) {
    bool pads = false;
    for (const ProfileDim& p : d.dims)
      for (const DimAxis& a : p.axes) pads = pads || (size_t(a.io) == i && p.pad);
    uint64_t bytes = 0;
    for (size_t sp = 0; pads && sp < d.numSpecialisations(); ++sp) {
      IoTensor t = d.io[i];
      t.shape = d.shapeOf(sp, i);
      bytes = std::max(bytes, ioTensorBytes(t));
    }
    if (!bytes) continue;  // (no padding, or an empty tensor: nothing to copy)
    Status s = deviceAlloc(staging_[i], bytes, "staging buffer of a padded I/O tensor");
    if (!s.ok()) return s;
  }
  return Status::success();
}

Status Executor::setInputShape(int32_t io, const int64_t* dims, int32_t rank) {
  const EngineDesc& d = engine_->desc;
  const IoTensor& t = d.io[size_t(io)];
  auto text = [](const int64_t* v, size_t n) {
    std::string s;
    for (size_t k = 0; k < n; ++k) s += (k ? "x" : "") + std::to_string(v[k]);
    return s.empty() ? std::string("a scalar") : s;
  };
  if (size_t(rank) != t.shape.size())
    return makeStatus(KILN_ERROR_SHAPE, "input '" + t.name + "' has rank " + std::to_string(t.shape.size()) +
                                            ", got the shape " + text(dims, size_t(rank)));
  for (size_t k = 0; k < t.shape.size(); ++k) {
    const ProfileDim* dim = nullptr;
    size_t dimIndex = 0;
    for (size_t p = 0; p < d.dims.size(); ++p)
      for (const DimAxis& a : d.dims[p].axes)
        if (a.io == io && size_t(a.axis) == k) dim = &d.dims[p], dimIndex = p;
    if (!dim && dims[k] != t.shape[k])
      return makeStatus(KILN_ERROR_SHAPE,
                        "input '" + t.name + "' has " + (d.dims.empty() ? "the static shape " : "the shape ") +
                            text(t.shape.data(), t.shape.size()) + (d.dims.empty() ? "" : " outside its profile dims") +
                            ", got " + text(dims, size_t(rank)) + " (axis " + std::to_string(k) + " is fixed" +
                            (d.dims.empty() ? "; build the engine with --min/--opt/--max-shapes for a range)" : ")"));
    const int64_t lo = dim ? profileDesc_.min[dimIndex] : 0, hi = dim ? profileDesc_.max[dimIndex] : 0;
    if (dim && (dims[k] < lo || dims[k] > hi))
      return makeStatus(KILN_ERROR_SHAPE, "input '" + t.name + "' axis " + std::to_string(k) + " ('" + dim->name +
                                              "') = " + std::to_string(dims[k]) + " is outside the profile's " +
                                              std::to_string(lo) + ".." + std::to_string(hi) +
                                              (d.numProfiles() > 1 ? " (profile " + std::to_string(profile_) + " of " +
                                                                         std::to_string(d.numProfiles()) + ")"
                                                                   : std::string()));
  }
  std::vector<int64_t> shape(dims, dims + rank);
  if (shape != shapes_[size_t(io)]) shapes_[size_t(io)] = std::move(shape), shapesDirty_ = true;
  return Status::success();
}

void Executor::setProfile(size_t profile) {
  const EngineDesc& d = engine_->desc;
  profile_ = profile;
  profileDesc_ = d.profileAt(profile);
  for (size_t i = 0; i < d.io.size(); ++i)
    if (d.io[i].isInput) shapes_[i] = d.shapeWith(i, profileDesc_.opt);
  shapesDirty_ = true;
}

Status Executor::resolveShapes() {
  if (!shapesDirty_) return Status::success();
  const EngineDesc& d = engine_->desc;
  // Each dim's value, from the inputs (which must agree).
  std::vector<int64_t> value(d.dims.size(), -1);
  for (size_t k = 0; k < d.dims.size(); ++k) {
    int32_t from = -1;
    for (const DimAxis& a : d.dims[k].axes) {
      const int32_t io = a.io;
      if (!d.io[size_t(io)].isInput) continue;
      int64_t v = shapes_[size_t(io)][size_t(a.axis)];
      if (value[k] >= 0 && v != value[k])
        return makeStatus(KILN_ERROR_SHAPE, "inputs '" + d.io[size_t(from)].name + "' and '" + d.io[size_t(io)].name +
                                                "' share dim '" + d.dims[k].name + "' but were given " +
                                                std::to_string(value[k]) + " and " + std::to_string(v));
      value[k] = v, from = io;
    }
  }
  // The specialisation: for each dim its own value if one has it, else (a padded dim) the
  // smallest larger one; among those that fit, the one with the fewest padded elements.
  size_t best = SIZE_MAX;
  double bestCost = 0;
  for (int32_t spIndex : profileDesc_.specialisations) {
    const size_t sp = size_t(spIndex);
    std::vector<int64_t> v = d.valuesOf(sp);
    bool fits = true;
    double cost = 1;
    for (size_t k = 0; k < v.size() && fits; ++k) {
      fits = value[k] < 0 || v[k] == value[k] || (d.dims[k].pad && v[k] > value[k]);
      cost *= double(v[k]);
    }
    if (fits && (best == SIZE_MAX || cost < bestCost)) best = sp, bestCost = cost;
  }
  if (best == SIZE_MAX) {
    std::string why;
    for (size_t k = 0; k < d.dims.size(); ++k) {
      std::string have;
      std::set<int64_t> values;
      for (int32_t sp : profileDesc_.specialisations) values.insert(d.valuesOf(size_t(sp))[k]);
      for (int64_t v : values) have += (have.empty() ? "" : ", ") + std::to_string(v);
      if (!values.count(value[k]))
        why += (why.empty() ? "" : "; ") + std::string("dim '") + d.dims[k].name + "' = " + std::to_string(value[k]) +
               " (the engine was built for " + have +
               (d.dims[k].pad ? " and pads up to them)" : " and cannot pad it: its outputs depend on the padding)");
    }
    return makeStatus(KILN_ERROR_SHAPE, "no specialisation of the engine runs these shapes: " + why);
  }
  spec_ = best;
  launches_ = &plans_[best];
  // Outputs take the dims' values; a tensor is padded where its specialisation's shape is larger.
  for (size_t i = 0; i < d.io.size(); ++i) {
    std::vector<int64_t> shape = d.shapeOf(best, i);
    if (!d.io[i].isInput)
      for (size_t k = 0; k < d.dims.size(); ++k)
        for (const DimAxis& a : d.dims[k].axes)
          if (size_t(a.io) == i && value[k] >= 0) shapes_[i][size_t(a.axis)] = a.at(value[k]);
    padded_[i] = shape != shapes_[i];
  }
  shapesDirty_ = false;
  return Status::success();
}

Status Executor::copyRegion(CUdeviceptr dst, const std::vector<int64_t>& dstShape, CUdeviceptr src,
                            const std::vector<int64_t>& srcShape, size_t elementBytes, CUstream stream) {
  for (const RegionCopy& c : regionCopies(dstShape, srcShape, elementBytes)) {
    CUresult r;
    if (c.height == 1) {
      r = cu_.cuMemcpyDtoDAsync(dst + c.dstOffset, src + c.srcOffset, size_t(c.width), stream);
    } else if (!cu_.cuMemcpy2DAsync) {
      r = CUDA_ERROR_NOT_SUPPORTED;
    } else {
      CUDA_MEMCPY2D m{};
      m.srcMemoryType = CU_MEMORYTYPE_DEVICE, m.srcDevice = src + c.srcOffset, m.srcPitch = size_t(c.srcPitch);
      m.dstMemoryType = CU_MEMORYTYPE_DEVICE, m.dstDevice = dst + c.dstOffset, m.dstPitch = size_t(c.dstPitch);
      m.WidthInBytes = size_t(c.width), m.Height = size_t(c.height);
      r = cu_.cuMemcpy2DAsync(&m, stream);
    }
    if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "copying a padded tensor: " + cu_.describe(r));
  }
  return Status::success();
}

CUdeviceptr Executor::resolve(const BufferRef& b) const {
  switch (b.space) {
    case BufferRef::Space::Arena: return arena_ + b.offset;
    case BufferRef::Space::Weights: return image_->weights + b.offset;
    case BufferRef::Space::Io: return runAddress_[size_t(b.io)] + b.offset;
  }
  return 0;
}

Status Executor::prepareLaunches() {
  const EngineDesc& d = engine_->desc;
  plans_.resize(d.numSpecialisations());
  for (size_t s = 0; s < plans_.size(); ++s) {
    const std::vector<Launch>& launches = d.launchesOf(s);
    plans_[s].resize(launches.size());
    for (size_t i = 0; i < launches.size(); ++i) {
      Status st = prepareLaunch(plans_[s][i], launches[i], i);
      if (!st.ok()) return st;
    }
  }
  launches_ = &plans_[0];
  return Status::success();
}

Status Executor::prepareLaunch(PreparedLaunch& p, const Launch& l, size_t i) {
  p.index = i;
  p.launch = &l;
  if (l.kind != Launch::Kind::Kernel) return Status::success();
  p.function = image_->functions[size_t(l.kernel)];
  p.slots.assign(l.args.size(), 0);
  p.params.resize(l.args.size());
  p.maps.reserve(size_t(std::count_if(l.args.begin(), l.args.end(),
                                      [](const LaunchArg& a) { return a.kind == LaunchArg::Kind::TensorMap; })));
  for (size_t a = 0; a < l.args.size(); ++a) {
    const LaunchArg& arg = l.args[a];
    uint64_t& slot = p.slots[a];
    p.params[a] = &slot;
    switch (arg.kind) {
      case LaunchArg::Kind::Buffer:
        if (arg.buffer.space == BufferRef::Space::Io)
          p.ioPatches.push_back({a, arg.buffer.io, arg.buffer.offset});
        else
          slot = resolve(arg.buffer);
        break;
      // The driver reads sizeof(parameter) bytes from each pointer; on little-endian x86-64
      // and aarch64 a 4-byte value sits at the start of its slot.
      case LaunchArg::Kind::I32: std::memcpy(&slot, &arg.i32, 4); break;
      case LaunchArg::Kind::I64: std::memcpy(&slot, &arg.i64, 8); break;
      case LaunchArg::Kind::F32: std::memcpy(&slot, &arg.f32, 4); break;
      case LaunchArg::Kind::TensorMap: {
        p.params[a] = &p.maps.emplace_back();
        if (arg.tensorMap.buffer.space == BufferRef::Space::Io) {
          p.ioMaps.push_back({a, p.maps.size() - 1});
          break;
        }
        Status s = encodeTensorMap(p, a, p.maps.back());
        if (!s.ok()) return s;
        break;
      }
    }
  }
  return Status::success();
}

// A tensor map argument over its buffer's current address (cuda.h's enums: the data type by
// element, no interleave, the swizzle, L2 promotion of 128 bytes, out-of-bounds elements zero).
Status Executor::encodeTensorMap(const PreparedLaunch& p, size_t arg, CUtensorMap& out) const {
  const Launch& l = *p.launch;
  const TensorMap& m = l.args[arg].tensorMap;
  std::string where = "launch " + std::to_string(p.index) + (l.node.empty() ? "" : " (node '" + l.node + "')") +
                      ", tensor map argument " + std::to_string(arg);
  if (!cu_.cuTensorMapEncodeTiled)
    return makeStatus(KILN_ERROR_CUDA, where + ": the driver lacks cuTensorMapEncodeTiled (CUDA 12 or newer)");
  int type = m.dtype == 1 ? 7 : m.dtype == 10 ? 6 : m.dtype == 16 ? 9 : m.dtype == 6 ? 3 : m.dtype == 12 ? 2 : 0;
  int swizzle = m.swizzle == 128 ? 3 : m.swizzle == 64 ? 2 : m.swizzle == 32 ? 1 : 0;
  const uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  CUdeviceptr base = resolve(m.buffer);
  CUresult r =
      cu_.cuTensorMapEncodeTiled(&out, type, uint32_t(m.dims.size()), reinterpret_cast<void*>(base), m.dims.data(),
                                 m.strides.data(), m.box.data(), elementStrides, 0, swizzle, 2, 0);
  if (r == CUDA_SUCCESS) return Status::success();
  std::string why = base % 16 ? " (its address is not 16-byte aligned)" : "";
  return makeStatus(codeFor(r), where + ": cuTensorMapEncodeTiled failed" + why + ": " + cu_.describe(r));
}

namespace {

int ltType(int32_t onnxDtype) {
  return onnxDtype == 10   ? lt::CUDA_R_16F
         : onnxDtype == 16 ? lt::CUDA_R_16BF
         : onnxDtype == 17 ? lt::CUDA_R_8F_E4M3
                           : lt::CUDA_R_32F;
}

}  // namespace

Status Executor::prepareGemms() {
  const EngineDesc& d = engine_->desc;
  std::map<std::string, cublasLtMatmulAlgo> searched;  // gemm_search: product → fastest algorithm
  bool any = false;
  for (const auto& plan : plans_)
    for (const PreparedLaunch& p : plan) any = any || p.launch->kind == Launch::Kind::Gemm;
  if (!any) return Status::success();
  std::string why;
  if (!(lt_ = cublasLt(why)))
    return makeStatus(KILN_ERROR_CUDA, "the engine runs matrix products with cuBLASLt (gemm.tactic=cublaslt): " + why);
  cublasStatus st = lt_->cublasLtCreate(&ltHandle_);
  if (st != 0) {
    ltHandle_ = nullptr;
    return makeStatus(KILN_ERROR_CUDA, "cublasLtCreate failed: " + lt_->describe(st));
  }
  CUresult r = cu_.cuMemAlloc(&ltWorkspace_, kLtWorkspaceBytes);
  if (r != CUDA_SUCCESS) {
    ltWorkspace_ = 0;
    return makeStatus(codeFor(r), "allocating the cuBLASLt workspace: " + cu_.describe(r));
  }
  for (auto& plan : plans_)
    for (PreparedLaunch& p : plan) {
      const Launch& l = *p.launch;
      if (l.kind != Launch::Kind::Gemm) continue;
      const GemmCall& g = l.gemm;
      std::string what = "launch " + std::to_string(p.index) + " (node '" + l.node + "'): ";
      auto check = [&](cublasStatus s, const char* call) {
        return s == 0 ? Status::success() : makeStatus(KILN_ERROR_CUDA, what + call + " failed: " + lt_->describe(s));
      };
      Status s =
          check(lt_->cublasLtMatmulDescCreate(
                    &p.matmul, g.tf32 ? lt::CUBLAS_COMPUTE_32F_FAST_TF32 : lt::CUBLAS_COMPUTE_32F, lt::CUDA_R_32F),
                "cublasLtMatmulDescCreate");
      if (!s.ok()) return s;
      int32_t ta = g.transA ? lt::OP_T : lt::OP_N, tb = g.transB ? lt::OP_T : lt::OP_N;
      uint32_t epi = g.epilogue == GemmCall::Relu       ? lt::EPILOGUE_RELU
                     : g.epilogue == GemmCall::Bias     ? lt::EPILOGUE_BIAS
                     : g.epilogue == GemmCall::ReluBias ? lt::EPILOGUE_RELU_BIAS
                                                        : lt::EPILOGUE_DEFAULT;
      lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_TRANSA, &ta, sizeof ta);
      lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_TRANSB, &tb, sizeof tb);
      lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_EPILOGUE, &epi, sizeof epi);
      if (g.epilogue & GemmCall::Bias) {
        int32_t bt = ltType(g.cdType);
        lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
      }
      if (g.fp8()) {  // per-row scales of op(A) and per-column of op(B) (pointers set at launch)
        int32_t mode = lt::MATRIX_SCALE_OUTER_VEC_32F;
        lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_A_SCALE_MODE, &mode, sizeof mode);
        lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_B_SCALE_MODE, &mode, sizeof mode);
        setScalePointers(p, g);
      }
      const int64_t rows[4] = {g.transA ? g.k : g.m, g.transB ? g.n : g.k, g.m, g.m};
      const int64_t cols[4] = {g.transA ? g.m : g.k, g.transB ? g.k : g.n, g.n, g.n};
      const int64_t lds[4] = {g.lda, g.ldb, g.ldc, g.ldc};
      const int64_t strides[4] = {g.strideA, g.strideB, g.strideC, g.strideC};
      const int32_t types[4] = {g.abType, g.abType, g.cdType, g.cdType};
      for (int k = 0; k < 4; ++k) {
        if (!(s = check(lt_->cublasLtMatrixLayoutCreate(&p.layouts[k], ltType(types[k]), uint64_t(rows[k]),
                                                        uint64_t(cols[k]), lds[k]),
                        "cublasLtMatrixLayoutCreate"))
                 .ok())
          return s;
        if (g.batch > 1 || g.pointerBatch()) {
          int32_t count = int32_t(g.batch);
          lt_->cublasLtMatrixLayoutSetAttribute(p.layouts[k], lt::LAYOUT_BATCH_COUNT, &count, sizeof count);
          if (g.pointerBatch())
            lt_->cublasLtMatrixLayoutSetAttribute(p.layouts[k], lt::LAYOUT_BATCH_MODE, &lt::BATCH_MODE_POINTER_ARRAY,
                                                  sizeof lt::BATCH_MODE_POINTER_ARRAY);
          else
            lt_->cublasLtMatrixLayoutSetAttribute(p.layouts[k], lt::LAYOUT_STRIDED_BATCH_OFFSET, &strides[k],
                                                  sizeof strides[k]);
        }
      }
      if (g.pointerBatch() && !(s = uploadBatchPointers(p, g)).ok()) return s;
      cublasLtMatmulPreference pref = nullptr;
      if (!(s = check(lt_->cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate")).ok()) return s;
      uint64_t ws = kLtWorkspaceBytes;
      lt_->cublasLtMatmulPreferenceSetAttribute(pref, lt::PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
      // An operand read in place (a head of a packed projection) may start inside its buffer: the
      // heuristic learns how aligned each pointer is (the arena and the weights start 256-byte
      // aligned; I/O buffers are taken to be, as cuMemAlloc's are, though the C API asks for less).
      // A pointer-array batch's products are as aligned as the least aligned of its first one and
      // its steps (the lowest bit set in any of them).
      auto aligned = [&](const BufferRef& ref, const std::vector<int64_t>& steps, int32_t type) {
        int64_t bits = int64_t(ref.offset);
        for (size_t d = 0; d < steps.size(); ++d)
          if (g.batchDims[d] > 1) bits |= steps[d] * int64_t(dtypeByteSize(type));
        return uint32_t(bits % 256 == 0 ? 256 : bits & -bits);
      };
      const uint32_t alignment[4] = {aligned(g.a, g.batchStepsA, g.abType), aligned(g.b, g.batchStepsB, g.abType),
                                     aligned(g.beta != 0.f ? g.c : g.d, g.batchStepsC, g.cdType),
                                     aligned(g.d, g.batchStepsC, g.cdType)};
      for (int k = 0; k < 4; ++k)
        lt_->cublasLtMatmulPreferenceSetAttribute(pref, lt::PREF_MIN_ALIGNMENT_A_BYTES + k, &alignment[k],
                                                  sizeof alignment[k]);
      cublasLtMatmulHeuristicResult results[kGemmCandidates]{};
      int found = 0;
      cublasStatus hs =
          lt_->cublasLtMatmulAlgoGetHeuristic(ltHandle_, p.matmul, p.layouts[0], p.layouts[1], p.layouts[2],
                                              p.layouts[3], pref, d.gemmSearch ? kGemmCandidates : 1, results, &found);
      lt_->cublasLtMatmulPreferenceDestroy(pref);
      if (hs != 0 || found == 0)
        return makeStatus(KILN_ERROR_CUDA, what + "cuBLASLt has no algorithm for this product on " + deviceText() +
                                               (hs != 0 ? ": " + lt_->describe(hs) : std::string()));
      p.algo = results[0].algo;
      if (found > 1) {  // runtime.gemm_search: one search per distinct product (BERT: 96 launches, 6 products)
        std::string key;
        for (int64_t v : {int64_t(g.abType), int64_t(g.cdType), int64_t(g.transA), int64_t(g.transB), g.m, g.n, g.k,
                          g.lda, g.ldb, g.ldc, g.batch, g.strideA, g.strideB, g.strideC, int64_t(g.beta != 0.f),
                          int64_t(g.epilogue), int64_t(g.tf32), int64_t(g.pointerBatch())})
          key += std::to_string(v) + ",";
        auto it = searched.find(key);
        if (it != searched.end())
          p.algo = it->second;
        else if (fastestAlgo(p, g, results, found, p.algo))
          searched.emplace(key, p.algo);
      }
    }
  if (scratch_) cu_.cuMemFree(scratch_);
  scratch_ = 0, scratchBytes_ = 0;
  return Status::success();
}

Status Executor::uploadBatchPointers(PreparedLaunch& p, const GemmCall& g) {
  const size_t n = size_t(g.batch);
  const uint64_t ab = dtypeByteSize(g.abType), cd = dtypeByteSize(g.cdType);
  const CUdeviceptr a = resolve(g.a), b = resolve(g.b), d = resolve(g.d), c = g.beta != 0.f ? resolve(g.c) : d;
  std::vector<uint64_t> host(4 * n);
  for (size_t i = 0; i < n; ++i) {
    host[i] = a + uint64_t(g.batchOffset(g.batchStepsA, int64_t(i))) * ab;
    host[n + i] = b + uint64_t(g.batchOffset(g.batchStepsB, int64_t(i))) * ab;
    host[2 * n + i] = c + uint64_t(g.batchOffset(g.batchStepsC, int64_t(i))) * cd;
    host[3 * n + i] = d + uint64_t(g.batchOffset(g.batchStepsC, int64_t(i))) * cd;
  }
  const size_t bytes = host.size() * sizeof host[0];
  CUresult r = cu_.cuMemAlloc(&p.batchPointers, bytes);
  if (r == CUDA_SUCCESS) r = cu_.cuMemcpyHtoDAsync(p.batchPointers, host.data(), bytes, work_);
  if (r == CUDA_SUCCESS) r = cu_.cuStreamSynchronize(work_);
  if (r == CUDA_SUCCESS) return Status::success();
  return makeStatus(codeFor(r), "launch " + std::to_string(p.index) + ": the " + std::to_string(n) +
                                    " products' addresses for cuBLASLt: " + cu_.describe(r));
}

void Executor::gemmOperands(const PreparedLaunch& p, const GemmCall& g, CUdeviceptr out[4]) const {
  if (p.batchPointers) {
    for (int k = 0; k < 4; ++k) out[k] = p.batchPointers + uint64_t(k) * uint64_t(g.batch) * sizeof(uint64_t);
    return;
  }
  out[0] = resolve(g.a), out[1] = resolve(g.b), out[3] = resolve(g.d), out[2] = g.beta != 0.f ? resolve(g.c) : out[3];
}

bool Executor::fastestAlgo(PreparedLaunch& p, const GemmCall& g, const cublasLtMatmulHeuristicResult* candidates,
                           int count, cublasLtMatmulAlgo& best) {
  if (!cu_.hasEvents()) return false;
  CUdeviceptr ops[4], bias = 0;  // A, B, C, D
  if (g.pointerBatch()) {
    // Timed on its own operands, in the arena and the weights: nothing is live in the arena
    // while a context is created.
    gemmOperands(p, g, ops);
    if (g.epilogue & GemmCall::Bias) {
      if (g.bias.space == BufferRef::Space::Io) return false;  // (not bound yet)
      bias = resolve(g.bias);
    }
  } else {
    // Scratch operands with the launch's strided extents (contents do not change the timing:
    // set to a small constant where the driver can); C is D, as at launch when beta is 0.
    auto extent = [](int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride, int32_t type) {
      uint64_t elems = uint64_t(batch - 1) * uint64_t(stride) + uint64_t(cols - 1) * uint64_t(ld) + uint64_t(rows);
      return (elems * dtypeByteSize(type) + 255) / 256 * 256;
    };
    const uint64_t aBytes = extent(g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.lda, g.batch, g.strideA, g.abType);
    const uint64_t bBytes = extent(g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.ldb, g.batch, g.strideB, g.abType);
    const uint64_t dBytes = extent(g.m, g.n, g.ldc, g.batch, g.strideC, g.cdType);
    const uint64_t need = aBytes + bBytes + dBytes + extent(g.m, 1, g.m, 1, 0, g.cdType);
    if (need > scratchBytes_) {
      if (scratch_) cu_.cuMemFree(scratch_);
      scratch_ = 0, scratchBytes_ = 0;
      if (cu_.cuMemAlloc(&scratch_, need) != CUDA_SUCCESS) {
        scratch_ = 0;
        return false;
      }
      scratchBytes_ = need;
      cu_.cuMemsetD8Async(scratch_, 0x3c, need, work_);  // fp16 1.06, fp32/bf16 0.0115
    }
    ops[0] = scratch_, ops[1] = scratch_ + aBytes, ops[2] = ops[3] = scratch_ + aBytes + bBytes;
    bias = scratch_ + aBytes + bBytes + dBytes;
  }
  if (g.epilogue & GemmCall::Bias)  // (launchGemm sets the real one at every launch)
    lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
  auto ptr = [&](int k) { return reinterpret_cast<void*>(ops[k]); };
  CUevent start = nullptr, stop = nullptr;
  if (cu_.cuEventCreate(&start, 0) != CUDA_SUCCESS || cu_.cuEventCreate(&stop, 0) != CUDA_SUCCESS) {
    if (start) cu_.cuEventDestroy(start);
    return false;
  }
  float bestMs = 0;
  bool any = false;
  for (int i = 0; i < count; ++i) {
    auto run = [&] {
      return lt_->cublasLtMatmul(ltHandle_, p.matmul, &g.alpha, ptr(0), p.layouts[0], ptr(1), p.layouts[1], &g.beta,
                                 ptr(2), p.layouts[2], ptr(3), p.layouts[3], &candidates[i].algo,
                                 reinterpret_cast<void*>(ltWorkspace_), kLtWorkspaceBytes, work_) == 0;
    };
    if (candidates[i].state != 0 || !run()) continue;  // (the first run warms up)
    bool ok = cu_.cuEventRecord(start, work_) == CUDA_SUCCESS;
    for (int r = 0; ok && r < kGemmSearchRuns; ++r) ok = run();
    float ms = 0;
    ok = ok && cu_.cuEventRecord(stop, work_) == CUDA_SUCCESS && cu_.cuEventSynchronize(stop) == CUDA_SUCCESS &&
         cu_.cuEventElapsedTime(&ms, start, stop) == CUDA_SUCCESS;
    if (ok && (!any || ms < bestMs)) best = candidates[i].algo, bestMs = ms, any = true;
  }
  cu_.cuEventDestroy(start);
  cu_.cuEventDestroy(stop);
  return any;
}

void Executor::setScalePointers(PreparedLaunch& p, const GemmCall& g) {
  CUdeviceptr sa = resolve(g.scaleA), sb = resolve(g.scaleB);
  lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_A_SCALE_POINTER, &sa, sizeof sa);
  lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_B_SCALE_POINTER, &sb, sizeof sb);
}

Status Executor::launchGemm(PreparedLaunch& p, CUstream stream) {
  const Launch& l = *p.launch;
  const GemmCall& g = l.gemm;
  if (g.epilogue & GemmCall::Bias) {
    CUdeviceptr bias = resolve(g.bias);
    lt_->cublasLtMatmulDescSetAttribute(p.matmul, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  if (g.fp8()) setScalePointers(p, g);
  CUdeviceptr ops[4];
  gemmOperands(p, g, ops);
  auto ptr = [&](int k) { return reinterpret_cast<void*>(ops[k]); };
  cublasStatus s = lt_->cublasLtMatmul(ltHandle_, p.matmul, &g.alpha, ptr(0), p.layouts[0], ptr(1), p.layouts[1],
                                       &g.beta, ptr(2), p.layouts[2], ptr(3), p.layouts[3], &p.algo,
                                       reinterpret_cast<void*>(ltWorkspace_), kLtWorkspaceBytes, stream);
  if (s == 0) return Status::success();
  return makeStatus(KILN_ERROR_CUDA, "launch " + std::to_string(p.index) + " (cuBLASLt matmul, node '" + l.node +
                                         "') failed: " + lt_->describe(s));
}

Status Executor::checkBound() const {
  const EngineDesc& d = engine_->desc;
  std::string unbound;
  for (size_t i = 0; i < d.io.size(); ++i)
    if (!ioAddress_[i] && ioTensorBytes(d.io[i]) != 0)
      unbound +=
          std::string(unbound.empty() ? "" : ", ") + (d.io[i].isInput ? "input '" : "output '") + d.io[i].name + "'";
  if (!unbound.empty())
    return makeStatus(KILN_ERROR_UNBOUND,
                      "no device address bound for " + unbound + " (call kiln_context_set_tensor_address)");
  return Status::success();
}

Status Executor::profile(CUstream stream, std::vector<float>& ms) {
  Status s = checkBound();
  if (s.ok()) s = resolveShapes();
  if (!s.ok()) return s;
  if (!cu_.hasEvents()) return makeStatus(KILN_ERROR_CUDA, "the CUDA driver has no event functions");
  struct NvtxOn {  // profiled runs name their launches for Nsight Systems too
    bool& flag;
    bool was;
    ~NvtxOn() { flag = was; }
  } nvtxOn{nvtx_, nvtx_};
  nvtx_ = true;
  ScopedContext scope(cu_, context_);
  if (!scope.ok()) return makeStatus(KILN_ERROR_CUDA, "cannot make the context's CUDA context current");
  std::vector<CUevent> events(launches_->size() + 1, nullptr);
  auto cleanup = [&] {
    for (CUevent e : events)
      if (e) cu_.cuEventDestroy(e);
  };
  CUresult r = CUDA_SUCCESS;
  for (CUevent& e : events)
    if ((r = cu_.cuEventCreate(&e, 0)) != CUDA_SUCCESS) {
      e = nullptr;
      cleanup();
      return makeStatus(codeFor(r), "cuEventCreate failed: " + cu_.describe(r));
    }
  if (!(s = stageInputs(stream)).ok()) {
    cleanup();
    return s;
  }
  for (size_t i = 0; i < launches_->size() && r == CUDA_SUCCESS; ++i) {
    r = cu_.cuEventRecord(events[i], stream);
    if (r == CUDA_SUCCESS && !(s = launchOne((*launches_)[i], stream)).ok()) {
      cu_.cuEventSynchronize(events[i]);
      cleanup();
      return s;
    }
  }
  if (r == CUDA_SUCCESS) r = cu_.cuEventRecord(events.back(), stream);
  if (r == CUDA_SUCCESS && !(s = unstageOutputs(stream)).ok()) {
    cleanup();
    return s;
  }
  if (r == CUDA_SUCCESS) r = cu_.cuEventSynchronize(events.back());
  ms.assign(launches_->size(), 0.f);
  for (size_t i = 0; i < launches_->size() && r == CUDA_SUCCESS; ++i)
    r = cu_.cuEventElapsedTime(&ms[i], events[i], events[i + 1]);
  cleanup();
  if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "profiling failed: " + cu_.describe(r));
  return Status::success();
}

Status Executor::enqueue(CUstream stream) {
  Status bound = checkBound();
  if (bound.ok()) bound = resolveShapes();
  if (!bound.ok()) return bound;

  ScopedContext scope(cu_, context_);
  if (!scope.ok()) return makeStatus(KILN_ERROR_CUDA, "cannot make the context's CUDA context current");
  if (!usesGraphs()) return launchAll(stream);
  // A stream the application is capturing itself takes our launches into its own graph: launch
  // directly. (The legacy default stream is never capturing, and asking about it fails while
  // another stream captures; graphs are captured on work_ and may be launched on it: PyTorch's
  // default stream is this one.)
  const CUstream legacy = reinterpret_cast<CUstream>(uintptr_t(1));
  CUresult r = CUDA_SUCCESS;
  if (stream != nullptr && stream != legacy) {
    int capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    r = cu_.cuStreamIsCapturing(stream, &capturing);
    if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "cuStreamIsCapturing failed: " + cu_.describe(r));
    if (capturing != CU_STREAM_CAPTURE_STATUS_NONE) return launchAll(stream);
  }
  // One graph per binding and shapes, kept (up to kMaxGraphs) so that going back to earlier
  // shapes or buffers replays rather than captures again.
  std::vector<uint64_t> key(ioAddress_.begin(), ioAddress_.end());
  for (const std::vector<int64_t>& shape : shapes_) {
    key.push_back(shape.size());
    key.insert(key.end(), shape.begin(), shape.end());
  }
  auto graph = graphs_.find(key);
  if (graph == graphs_.end()) {
    std::lock_guard<std::mutex> lock(setupMutex());
    if (!warmed_.count(spec_)) {
      // A specialisation's first enqueue runs directly: whatever loads at a first launch
      // (cuBLASLt's kernels) loads now, outside any capture. Its graph is captured at the next.
      Status s = launchAll(stream);
      if (s.ok()) warmed_.insert(spec_);
      return s;
    }
    if (graphs_.size() >= kMaxGraphs) dropGraphs();
    CUgraphExec exec = nullptr;
    Status s = captureGraph(exec);
    if (!s.ok()) return s;
    graph = graphs_.emplace(std::move(key), exec).first;
  }
  r = cu_.cuGraphLaunch(graph->second, stream);
  if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "cuGraphLaunch failed: " + cu_.describe(r));
  return Status::success();
}

Status Executor::launchOne(PreparedLaunch& p, CUstream stream) {
  const EngineDesc& d = engine_->desc;
  const Launch& l = *p.launch;
  NvtxRange range(nvtx_, !l.node.empty()                ? l.node.c_str()
                         : l.kind == Launch::Kind::Copy ? "copy"
                         : l.kind == Launch::Kind::Gemm ? "cublasLt_matmul"
                                                        : d.kernels[size_t(l.kernel)].entry.c_str());
  if (l.kind == Launch::Kind::Gemm) return launchGemm(p, stream);
  CUresult r;
  if (l.kind == Launch::Kind::Copy) {
    r = cu_.cuMemcpyDtoDAsync(resolve(l.dst), resolve(l.src), size_t(l.bytes), stream);
  } else {
    for (const IoPatch& patch : p.ioPatches) p.slots[patch.arg] = runAddress_[size_t(patch.io)] + patch.offset;
    for (PreparedLaunch::IoMap& m : p.ioMaps) {
      const CUdeviceptr at = resolve(l.args[m.arg].tensorMap.buffer);
      if (at == m.encodedAt) continue;
      Status s = encodeTensorMap(p, m.arg, p.maps[m.map]);
      if (!s.ok()) return s;
      m.encodedAt = at;
    }
    r = cu_.cuLaunchKernel(p.function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                           l.sharedBytes, stream, p.params.empty() ? nullptr : p.params.data(), nullptr);
  }
  if (r == CUDA_SUCCESS) return Status::success();
  std::string what = l.kind == Launch::Kind::Copy ? "copy" : "kernel '" + d.kernels[size_t(l.kernel)].entry + "'";
  return makeStatus(codeFor(r), "launch " + std::to_string(p.index) + " (" + what +
                                    (l.node.empty() ? "" : ", node '" + l.node + "'") + ") failed: " + cu_.describe(r));
}

Status Executor::launchAll(CUstream stream) {
  Status s = stageInputs(stream);
  for (size_t i = 0; i < launches_->size() && s.ok(); ++i) s = launchOne((*launches_)[i], stream);
  return s.ok() ? unstageOutputs(stream) : s;
}

Status Executor::stageInputs(CUstream stream) {
  // Padded tensors run in their staging buffers: inputs zero-padded in, outputs cut out after.
  const EngineDesc& d = engine_->desc;
  for (size_t i = 0; i < d.io.size(); ++i) {
    runAddress_[i] = padded_[i] ? staging_[i] : ioAddress_[i];
    if (!padded_[i] || !d.io[i].isInput) continue;
    IoTensor t = d.io[i];
    t.shape = d.shapeOf(spec_, i);
    CUresult r = cu_.cuMemsetD8Async(staging_[i], 0, size_t(ioTensorBytes(t)), stream);
    if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "clearing a padded input: " + cu_.describe(r));
    Status s = copyRegion(staging_[i], t.shape, ioAddress_[i], shapes_[i], dtypeByteSize(t.dtype), stream);
    if (!s.ok()) return s;
  }
  return Status::success();
}

Status Executor::unstageOutputs(CUstream stream) {
  const EngineDesc& d = engine_->desc;
  for (size_t i = 0; i < d.io.size(); ++i)
    if (padded_[i] && !d.io[i].isInput) {
      Status s =
          copyRegion(ioAddress_[i], shapes_[i], staging_[i], d.shapeOf(spec_, i), dtypeByteSize(d.io[i].dtype), stream);
      if (!s.ok()) return s;
    }
  return Status::success();
}

// Records the launch list into a graph (nothing runs while capturing) and instantiates it. The
// graph bakes in the bound addresses and shapes, hence graphs_'s key. It is captured on the
// context's own non-blocking stream, so nothing the application does on its streams or on the
// legacy default stream can invalidate the capture, and launched on the caller's stream.
Status Executor::captureGraph(CUgraphExec& exec) {
  CUresult r = cu_.cuStreamBeginCapture(work_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS) return makeStatus(codeFor(r), "cuStreamBeginCapture failed: " + cu_.describe(r));
  Status launched = launchAll(work_);
  CUgraph graph = nullptr;
  r = cu_.cuStreamEndCapture(work_, &graph);  // always ends the capture, even after a failure
  if (!launched.ok() || r != CUDA_SUCCESS) {
    if (graph) cu_.cuGraphDestroy(graph);
    return launched.ok() ? makeStatus(codeFor(r), "capturing the launches as a CUDA graph failed: " + cu_.describe(r))
                         : launched;
  }
  r = cu_.cuGraphInstantiateWithFlags(&exec, graph, 0);
  cu_.cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS) {
    exec = nullptr;
    return makeStatus(codeFor(r), "instantiating the CUDA graph failed: " + cu_.describe(r));
  }
  return Status::success();
}

void Executor::dropGraphs() {
  for (auto& [key, exec] : graphs_) cu_.cuGraphExecDestroy(exec);
  graphs_.clear();
}

Executor::~Executor() {
  if (!context_) return;
  std::lock_guard<std::mutex> lock(setupMutex());
  {
    ScopedContext scope(cu_, context_);
    if (scope.ok()) {
      dropGraphs();
      for (auto& plan : plans_)
        for (PreparedLaunch& p : plan) {
          if (p.matmul) lt_->cublasLtMatmulDescDestroy(p.matmul);
          if (p.batchPointers) cu_.cuMemFree(p.batchPointers);
          for (cublasLtMatrixLayout layout : p.layouts)
            if (layout) lt_->cublasLtMatrixLayoutDestroy(layout);
        }
      if (ltHandle_) lt_->cublasLtDestroy(ltHandle_);
      if (ltWorkspace_) cu_.cuMemFree(ltWorkspace_);
      if (scratch_) cu_.cuMemFree(scratch_);  // (a gemm_search that stopped on an error)
      if (arena_) cu_.cuMemFree(arena_);
      for (CUdeviceptr p : staging_)
        if (p) cu_.cuMemFree(p);
      image_.reset();  // (frees the modules and weights if no other context of the engine uses them)
      if (work_) cu_.cuStreamDestroy(work_);
    }
  }
  image_.reset();  // (already, unless the context could not be made current: before it may go)
  if (ownsPrimaryContext_) cu_.cuDevicePrimaryCtxRelease(device_);
}

}  // namespace kiln::rt
