#include "tuner/EngineRunner.h"

#include "compiler/ops/Tensor.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/format/EngineFormat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

namespace kiln::tuner {

using namespace kiln::rt;

double Timing::mean() const {
  double s = 0;
  for (float v : ms) s += v;
  return ms.empty() ? 0 : s / double(ms.size());
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t dtypeSize(int32_t dtype) { return dtypeByteSize(dtype); }

namespace {

double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v = exp == 0 ? std::ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY) : std::ldexp(man + 1024, exp - 25);
  return sign ? -v : v;
}

}  // namespace

double elementAsDouble(const HostTensor &t, int64_t i) {
  const uint8_t *p = t.data.data() + size_t(i) * dtypeSize(t.dtype);
  auto get = [&](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t.dtype) {
    case 1: return get(float());
    case 11: return get(double());
    case 10: return halfToDouble(get(uint16_t()));
    case 16: {
      uint32_t u = uint32_t(get(uint16_t())) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case 2: return get(uint8_t());
    case 3: return get(int8_t());
    case 4: return get(uint16_t());
    case 5: return get(int16_t());
    case 6: return get(int32_t());
    case 7: return double(get(int64_t()));
    case 9: return get(uint8_t()) != 0;
    case 12: return get(uint32_t());
    case 13: return double(get(uint64_t()));
    default: return NAN;
  }
}

std::vector<HostTensor> randomInputs(const std::vector<HostTensor> &io, uint32_t seed, int64_t intHigh) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.25f, 1.0f);
  std::vector<HostTensor> out;
  for (const HostTensor &t : io) {
    HostTensor v = t;
    int64_t n = numElements(t.shape), row = t.shape.empty() ? 1 : std::max<int64_t>(t.shape.back(), 1);
    size_t es = dtypeSize(t.dtype);
    v.data.assign(size_t(n) * es, 0);
    bool mask = t.name.find("mask") != std::string::npos;
    for (int64_t i = 0; i < n; ++i) {
      uint8_t *p = v.data.data() + size_t(i) * es;
      float f = (rng() % 2 ? 1.f : -1.f) * mag(rng);
      int64_t k = mask ? int64_t(i % row < row - row / 4) : int64_t(rng() % uint64_t(std::max<int64_t>(intHigh, 1)));
      switch (t.dtype) {
        case 1: std::memcpy(p, &f, 4); break;
        case 11: {
          double d = f;
          std::memcpy(p, &d, 8);
          break;
        }
        case 10: {  // float16 by rounding through the bit pattern (|f| in [0.25, 1]: normal)
          uint32_t u;
          std::memcpy(&u, &f, 4);
          uint16_t h = uint16_t(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
          std::memcpy(p, &h, 2);
          break;
        }
        case 16: {
          uint16_t h = uint16_t(__builtin_bit_cast(uint32_t, f) >> 16);
          std::memcpy(p, &h, 2);
          break;
        }
        case 9: *p = uint8_t(k != 0); break;
        default: std::memcpy(p, &k, std::min<size_t>(es, 8)); break;
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

// One context of the engine with its stream and I/O buffers.
struct Lane {
  kiln_context *context = nullptr;
  CUstream stream = nullptr;
  std::vector<CUdeviceptr> buffers;  // per I/O index of the engine
};

struct EngineRunner::Impl {
  const CudaDriver *cu = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  kiln_engine *engine = nullptr;
  std::vector<Lane> lanes;
  std::vector<int32_t> ioIndex;  // inputs_ then outputs_ → engine I/O index
  std::vector<void *> pinned;    // page-locked copies of the I/O tensors (--host-io), by ioIndex order
  std::string deviceName;

  ~Impl() {
    for (Lane &l : lanes) {
      if (l.context) {
        if (l.stream) cu->cuStreamSynchronize(l.stream);
        kiln_context_destroy(l.context);
      }
      for (CUdeviceptr b : l.buffers)
        if (b) cu->cuMemFree(b);
      if (l.stream) cu->cuStreamDestroy(l.stream);
    }
    kiln_engine_destroy(engine);
    for (void *p : pinned)
      if (p) cu->cuMemFreeHost(p);
    if (ctx) cu->cuDevicePrimaryCtxRelease(device);
  }

  bool fail(CUresult r, const char *what, std::string &error) const {
    error = std::string(what) + " failed: " + cu->describe(r);
    return false;
  }
  bool enqueue(const Lane &l, std::string &error) const {
    if (kiln_status s = kiln_context_enqueue(l.context, l.stream)) {
      error = kiln_status_message(s);
      return false;
    }
    return true;
  }
};

std::unique_ptr<EngineRunner> EngineRunner::open(const std::vector<uint8_t> &engine, std::string &error, int device,
                                                 int streams,
                                                 const std::map<std::string, std::vector<int64_t>> &shapes) {
  std::unique_ptr<EngineRunner> r(new EngineRunner());
  r->impl_ = std::make_unique<Impl>();
  Impl &m = *r->impl_;
  // The engine is verified first: a corrupt file is reported as such, GPU or not.
  if (kiln_status s = kiln_engine_load_from_memory(engine.data(), engine.size(), &m.engine)) {
    error = kiln_status_message(s);
    return nullptr;
  }
  if (!(m.cu = cudaDriver(error))) return nullptr;
  const CudaDriver &cu = *m.cu;
  if (!cu.cuMemcpyDtoH || !cu.cuMemsetD8 || !cu.cuStreamCreate || !cu.cuStreamSynchronize || !cu.hasEvents()) {
    error = "the NVIDIA driver lacks stream, copy or event functions";
    return nullptr;
  }
  int count = 0;
  CUresult res = cu.cuDeviceGetCount(&count);
  if (res != CUDA_SUCCESS || count == 0) {
    error = "no CUDA device" + (res != CUDA_SUCCESS ? ": " + cu.describe(res) : std::string());
    return nullptr;
  }
  if (device < 0 || device >= count) {
    error = "no CUDA device " + std::to_string(device) + " (this machine has " + std::to_string(count) +
            (count == 1 ? ": device 0)" : ": devices 0-" + std::to_string(count - 1) + ")");
    return nullptr;
  }
  if ((res = cu.cuDeviceGet(&m.device, device)) != CUDA_SUCCESS) return m.fail(res, "cuDeviceGet", error), nullptr;
  if ((res = cu.cuDevicePrimaryCtxRetain(&m.ctx, m.device)) != CUDA_SUCCESS) {
    m.ctx = nullptr;
    return m.fail(res, "cuDevicePrimaryCtxRetain", error), nullptr;
  }
  if ((res = cu.cuCtxSetCurrent(m.ctx)) != CUDA_SUCCESS) return m.fail(res, "cuCtxSetCurrent", error), nullptr;
  char name[256] = {0};
  if (cu.cuDeviceGetName(name, sizeof name - 1, m.device) == CUDA_SUCCESS) m.deviceName = name;
  int32_t n = kiln_engine_num_io(m.engine);
  for (int pass = 0; pass < 2; ++pass)
    for (int32_t i = 0; i < n; ++i) {
      if (kiln_engine_io_is_input(m.engine, i) != (pass == 0)) continue;
      HostTensor t;
      t.name = kiln_engine_io_name(m.engine, i);
      t.dtype = kiln_engine_io_dtype(m.engine, i);
      const int64_t *dims = kiln_engine_io_shape(m.engine, i);
      t.shape.assign(dims, dims + kiln_engine_io_rank(m.engine, i));
      (pass == 0 ? r->inputs_ : r->outputs_).push_back(t);
      m.ioIndex.push_back(i);
    }
  m.lanes.resize(size_t(std::max(streams, 1)));
  for (Lane &l : m.lanes) {
    if ((res = cu.cuStreamCreate(&l.stream, 0)) != CUDA_SUCCESS) {
      l.stream = nullptr;
      return m.fail(res, "cuStreamCreate", error), nullptr;
    }
    if (kiln_status s = kiln_context_create(m.engine, &l.context)) {
      error = kiln_status_message(s);
      return nullptr;
    }
    // The shapes, in the first profile that takes them (the first profile's error if none does).
    std::string firstError;
    for (int32_t p = 0; !shapes.empty() && p < kiln_engine_num_profiles(m.engine); ++p) {
      std::string why;
      kiln_context_set_profile(l.context, p);
      for (const auto &[name, shape] : shapes)
        if (kiln_status s = kiln_context_set_input_shape(l.context, name.c_str(), shape.data(), int32_t(shape.size())))
          if (why.empty()) why = kiln_status_message(s);
      int32_t rank = 0;
      if (why.empty() && !r->tensors().empty())
        if (kiln_status s = kiln_context_get_tensor_shape(l.context, r->tensors()[0]->name.c_str(), nullptr, 0, &rank))
          why = kiln_status_message(s);
      if (why.empty()) {
        firstError.clear();
        break;
      }
      if (firstError.empty()) firstError = why;
    }
    if (!firstError.empty()) {
      error = firstError;
      return nullptr;
    }
    if (&l == &m.lanes[0] && !shapes.empty())  // every tensor's shape at these input shapes
      for (HostTensor *t : r->tensors()) {
        int64_t dims[32];
        int32_t rank = 0;
        if (kiln_status s = kiln_context_get_tensor_shape(l.context, t->name.c_str(), dims, 32, &rank)) {
          error = kiln_status_message(s);
          return nullptr;
        }
        t->shape.assign(dims, dims + std::min(rank, 32));
      }
    l.buffers.assign(size_t(n), 0);
    for (size_t k = 0; k < m.ioIndex.size(); ++k) {
      const HostTensor &t = k < r->inputs_.size() ? r->inputs_[k] : r->outputs_[k - r->inputs_.size()];
      CUdeviceptr &b = l.buffers[size_t(m.ioIndex[k])];
      size_t bytes = std::max<size_t>(size_t(numElements(t.shape)) * dtypeSize(t.dtype), 1);
      if ((res = cu.cuMemAlloc(&b, bytes)) != CUDA_SUCCESS) {
        b = 0;
        return m.fail(res, ("allocating " + std::to_string(bytes) + " bytes for '" + t.name + "'").c_str(), error),
               nullptr;
      }
      if (kiln_status s = kiln_context_set_tensor_address(l.context, t.name.c_str(), reinterpret_cast<void *>(b))) {
        error = kiln_status_message(s);
        return nullptr;
      }
    }
  }
  return r;
}

EngineRunner::~EngineRunner() = default;

std::string EngineRunner::deviceName() const { return impl_->deviceName; }
std::string EngineRunner::route() const { return kiln_engine_route(impl_->engine); }
std::string EngineRunner::arch() const { return kiln_engine_target_arch(impl_->engine); }

std::string dtypeName(int32_t dtype) {
  const char *name = ops::dtypeName(ops::DType(dtype));
  return std::string(name) != "undefined" ? name : "dtype " + std::to_string(dtype);
}

bool convertFloat(HostTensor &t, int32_t dtype) {
  auto from = ops::DType(t.dtype), to = ops::DType(dtype);
  if (!ops::isFloat(from) || !ops::isFloat(to)) return false;
  if (from == to) return true;
  ops::Tensor src = ops::tensorFromBytes(from, t.shape, t.data.data(), t.data.size());
  ops::Tensor dst(to, t.shape);
  for (int64_t i = 0; i < src.size(); ++i) dst.set(i, src.f[i]);
  t.data = ops::tensorToBytes(dst);
  t.dtype = dtype;
  return true;
}

std::vector<HostTensor> convertFloatsLike(std::vector<HostTensor> values, const std::vector<HostTensor> &like) {
  for (HostTensor &t : values)
    for (const HostTensor &want : like)
      if (want.name == t.name) convertFloat(t, want.dtype);
  return values;
}

bool EngineRunner::setInputs(const std::vector<HostTensor> &values, std::string &error) {
  Impl &m = *impl_;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const HostTensor &want = inputs_[k];
    auto it = std::find_if(values.begin(), values.end(), [&](const HostTensor &v) { return v.name == want.name; });
    if (it == values.end()) {
      error = "no value for input '" + want.name + "'";
      return false;
    }
    // numpy has no bfloat16: a uint16 array holds a bfloat16 input's bits.
    bool bf16Bits = want.dtype == 16 && it->dtype == 4;
    if ((it->dtype != want.dtype && !bf16Bits) || it->shape != want.shape) {
      auto text = [](const HostTensor &t) {
        std::string s = dtypeName(t.dtype) + " shape [";
        for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? "," : "") + std::to_string(t.shape[d]);
        return s + "]";
      };
      error = "input '" + want.name + "' is " + text(*it) + ", the engine takes " + text(want);
      return false;
    }
    size_t bytes = size_t(numElements(want.shape)) * dtypeSize(want.dtype);
    if (it->data.size() != bytes) {
      error = "input '" + want.name + "' holds " + std::to_string(it->data.size()) + " bytes, expected " +
              std::to_string(bytes);
      return false;
    }
    for (const Lane &l : m.lanes)
      if (CUresult r = m.cu->cuMemcpyHtoD(l.buffers[size_t(m.ioIndex[k])], it->data.data(), bytes); r != CUDA_SUCCESS)
        return m.fail(r, "uploading an input", error);
  }
  return true;
}

bool EngineRunner::run(std::vector<HostTensor> &outputs, std::string &error) {
  Impl &m = *impl_;
  const Lane &l = m.lanes[0];
  outputs = outputs_;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    size_t bytes = size_t(numElements(outputs_[k].shape)) * dtypeSize(outputs_[k].dtype);
    CUresult r =
        m.cu->cuMemsetD8(l.buffers[size_t(m.ioIndex[inputs_.size() + k])], 0xff, bytes);  // NaN: unwritten shows
    if (r != CUDA_SUCCESS) return m.fail(r, "poisoning the outputs", error);
  }
  if (!m.enqueue(l, error)) return false;
  CUresult r = m.cu->cuStreamSynchronize(l.stream);
  if (r != CUDA_SUCCESS) return m.fail(r, "executing the engine", error);
  for (size_t k = 0; k < outputs.size(); ++k) {
    HostTensor &t = outputs[k];
    t.data.resize(size_t(numElements(t.shape)) * dtypeSize(t.dtype));
    if ((r = m.cu->cuMemcpyDtoH(t.data.data(), l.buffers[size_t(m.ioIndex[inputs_.size() + k])], t.data.size())) !=
        CUDA_SUCCESS)
      return m.fail(r, "downloading an output", error);
  }
  return true;
}

namespace {

// Event pairs, created once and destroyed with the pool.
struct EventPool {
  const CudaDriver &cu;
  std::vector<CUevent> events;
  explicit EventPool(const CudaDriver &c) : cu(c) {}
  ~EventPool() {
    for (CUevent e : events) cu.cuEventDestroy(e);
  }
  CUresult create(size_t n) {
    events.resize(n, nullptr);
    for (CUevent &e : events)
      if (CUresult r = cu.cuEventCreate(&e, 0); r != CUDA_SUCCESS) return e = nullptr, r;
    return CUDA_SUCCESS;
  }
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool EngineRunner::time(int warmup, int iterations, Timing &timing, std::string &error, double seconds, bool hostIo) {
  Impl &m = *impl_;
  const CudaDriver &cu = *m.cu;
  const Lane &l = m.lanes[0];
  timing.ms.clear();
  // --host-io: page-locked copies of the inputs (as last set: read back from the device) and
  // room for the outputs.
  std::vector<size_t> bytes;
  for (size_t k = 0; k < m.ioIndex.size(); ++k) {
    const HostTensor &t = k < inputs_.size() ? inputs_[k] : outputs_[k - inputs_.size()];
    bytes.push_back(size_t(numElements(t.shape)) * dtypeSize(t.dtype));
  }
  if (hostIo && m.pinned.empty()) {
    if (!cu.cuMemAllocHost || !cu.cuMemFreeHost || !cu.cuMemcpyDtoHAsync) {
      error = "the NVIDIA driver lacks page-locked memory or asynchronous downloads (--host-io)";
      return false;
    }
    m.pinned.assign(m.ioIndex.size(), nullptr);
    for (size_t k = 0; k < m.ioIndex.size(); ++k) {
      if (CUresult r = cu.cuMemAllocHost(&m.pinned[k], std::max<size_t>(bytes[k], 1)); r != CUDA_SUCCESS) {
        m.pinned[k] = nullptr;
        return m.fail(r, "cuMemAllocHost", error);
      }
      CUresult r =
          k < inputs_.size() ? cu.cuMemcpyDtoH(m.pinned[k], l.buffers[size_t(m.ioIndex[k])], bytes[k]) : CUDA_SUCCESS;
      if (r != CUDA_SUCCESS) return m.fail(r, "reading an input back", error);
    }
  }
  auto once = [&]() -> bool {
    if (hostIo)
      for (size_t k = 0; k < inputs_.size(); ++k)
        if (CUresult r = cu.cuMemcpyHtoDAsync(l.buffers[size_t(m.ioIndex[k])], m.pinned[k], bytes[k], l.stream);
            r != CUDA_SUCCESS)
          return m.fail(r, "uploading an input", error);
    if (!m.enqueue(l, error)) return false;
    if (hostIo)
      for (size_t k = inputs_.size(); k < m.ioIndex.size(); ++k)
        if (CUresult r = cu.cuMemcpyDtoHAsync(m.pinned[k], l.buffers[size_t(m.ioIndex[k])], bytes[k], l.stream);
            r != CUDA_SUCCESS)
          return m.fail(r, "downloading an output", error);
    return true;
  };
  for (int i = 0; i < warmup; ++i)
    if (!once()) return false;
  EventPool ev(cu);
  if (CUresult r = ev.create(2); r != CUDA_SUCCESS) return m.fail(r, "cuEventCreate", error);
  CUevent a = ev.events[0], b = ev.events[1];
  CUresult r;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations || secondsSince(t0) < seconds; ++i) {
    float ms = 0;
    if ((r = cu.cuEventRecord(a, l.stream)) != CUDA_SUCCESS) return m.fail(r, "cuEventRecord", error);
    if (!once()) return false;
    if ((r = cu.cuEventRecord(b, l.stream)) != CUDA_SUCCESS || (r = cu.cuEventSynchronize(b)) != CUDA_SUCCESS ||
        (r = cu.cuEventElapsedTime(&ms, a, b)) != CUDA_SUCCESS)
      return m.fail(r, "timing a run", error);
    timing.ms.push_back(ms);
  }
  std::sort(timing.ms.begin(), timing.ms.end());
  return true;
}

bool EngineRunner::throughput(int warmup, int iterations, double seconds, Throughput &t, std::string &error) {
  Impl &m = *impl_;
  const CudaDriver &cu = *m.cu;
  const size_t lanes = m.lanes.size();
  t = Throughput();
  t.streams = int(lanes);
  for (int i = 0; i < warmup; ++i)
    for (const Lane &l : m.lanes)
      if (!m.enqueue(l, error)) return false;
  for (const Lane &l : m.lanes)
    if (CUresult r = cu.cuStreamSynchronize(l.stream); r != CUDA_SUCCESS) return m.fail(r, "warm-up", error);
  // Rounds of one run per stream; kDepth rounds in flight, a round's events read before reuse.
  constexpr size_t kDepth = 8;
  EventPool ev(cu);
  if (CUresult r = ev.create(kDepth * lanes * 2); r != CUDA_SUCCESS) return m.fail(r, "cuEventCreate", error);
  auto event = [&](size_t round, size_t lane, int end) {
    return ev.events[((round % kDepth) * lanes + lane) * 2 + end];
  };
  auto collect = [&](size_t round) -> bool {
    for (size_t k = 0; k < lanes; ++k) {
      float ms = 0;
      CUresult r = cu.cuEventSynchronize(event(round, k, 1));
      if (r == CUDA_SUCCESS) r = cu.cuEventElapsedTime(&ms, event(round, k, 0), event(round, k, 1));
      if (r != CUDA_SUCCESS) return m.fail(r, "timing a run", error);
      t.latency.ms.push_back(ms);
    }
    return true;
  };
  auto t0 = std::chrono::steady_clock::now();
  size_t round = 0;
  for (; round < size_t(iterations) || secondsSince(t0) < seconds; ++round) {
    if (round >= kDepth && !collect(round - kDepth)) return false;
    for (size_t k = 0; k < lanes; ++k) {
      const Lane &l = m.lanes[k];
      if (CUresult r = cu.cuEventRecord(event(round, k, 0), l.stream); r != CUDA_SUCCESS)
        return m.fail(r, "cuEventRecord", error);
      if (!m.enqueue(l, error)) return false;
      if (CUresult r = cu.cuEventRecord(event(round, k, 1), l.stream); r != CUDA_SUCCESS)
        return m.fail(r, "cuEventRecord", error);
    }
  }
  for (size_t done = round > kDepth ? round - kDepth : 0; done < round; ++done)
    if (!collect(done)) return false;
  t.wallMs = secondsSince(t0) * 1e3;
  t.runs = int64_t(round * lanes);
  std::sort(t.latency.ms.begin(), t.latency.ms.end());
  return true;
}

bool EngineRunner::profile(int runs, std::vector<LaunchTime> &out, std::string &error) {
  Impl &m = *impl_;
  const Lane &l = m.lanes[0];
  int32_t count = 0;
  if (kiln_status s = kiln_context_profile(l.context, l.stream, nullptr, 0, &count)) {
    error = kiln_status_message(s);
    return false;
  }
  std::vector<std::vector<kiln_launch_profile>> all(size_t(std::max(runs, 1)),
                                                    std::vector<kiln_launch_profile>(size_t(count)));
  for (auto &r : all)
    if (kiln_status s = kiln_context_profile(l.context, l.stream, r.data(), count, &count)) {
      error = kiln_status_message(s);
      return false;
    }
  out.clear();
  for (int32_t i = 0; i < count; ++i) {
    std::vector<float> t;
    for (auto &r : all) t.push_back(r[size_t(i)].ms);
    std::sort(t.begin(), t.end());
    out.push_back({all[0][size_t(i)].node, all[0][size_t(i)].kernel, t[t.size() / 2]});
  }
  return true;
}

void attachLaunchCosts(const std::vector<uint8_t> &engine, std::vector<LaunchTime> &launches) {
  rt::EngineDesc desc;
  rt::ByteRange weights;  // (not copied)
  std::string error;
  if (rt::parseEngine(engine.data(), engine.size(), desc, error, &weights) != rt::ParseStatus::Ok) return;
  for (size_t s = 0; s <= desc.specialisations.size(); ++s) {
    const std::vector<rt::Launch> &list = desc.launchesOf(s);
    if (list.size() != launches.size() ||
        !std::equal(list.begin(), list.end(), launches.begin(),
                    [](const rt::Launch &l, const LaunchTime &t) { return l.node == t.node; }))
      continue;
    for (size_t i = 0; i < list.size(); ++i)
      launches[i].flops = list[i].flops, launches[i].trafficBytes = list[i].trafficBytes;
    return;
  }
}

}  // namespace kiln::tuner
