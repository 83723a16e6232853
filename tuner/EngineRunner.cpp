#include "tuner/EngineRunner.h"

#include "compiler/ops/Tensor.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/format/EngineFormat.h"

#include <algorithm>
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

struct EngineRunner::Impl {
  const CudaDriver *cu = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  kiln_engine *engine = nullptr;
  kiln_context *context = nullptr;
  std::vector<CUdeviceptr> buffers;  // per I/O index of the engine
  std::vector<int32_t> ioIndex;      // inputs_ then outputs_ → engine I/O index
  std::string deviceName;

  ~Impl() {
    if (context) {
      if (stream) cu->cuStreamSynchronize(stream);
      kiln_context_destroy(context);
    }
    kiln_engine_destroy(engine);
    for (CUdeviceptr b : buffers)
      if (b) cu->cuMemFree(b);
    if (stream) cu->cuStreamDestroy(stream);
    if (ctx) cu->cuDevicePrimaryCtxRelease(device);
  }

  bool fail(CUresult r, const char *what, std::string &error) const {
    error = std::string(what) + " failed: " + cu->describe(r);
    return false;
  }
};

std::unique_ptr<EngineRunner> EngineRunner::open(const std::vector<uint8_t> &engine, std::string &error) {
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
  if ((res = cu.cuDeviceGet(&m.device, 0)) != CUDA_SUCCESS) return m.fail(res, "cuDeviceGet", error), nullptr;
  if ((res = cu.cuDevicePrimaryCtxRetain(&m.ctx, m.device)) != CUDA_SUCCESS) {
    m.ctx = nullptr;
    return m.fail(res, "cuDevicePrimaryCtxRetain", error), nullptr;
  }
  if ((res = cu.cuCtxSetCurrent(m.ctx)) != CUDA_SUCCESS) return m.fail(res, "cuCtxSetCurrent", error), nullptr;
  char name[256] = {0};
  if (cu.cuDeviceGetName(name, sizeof name - 1, m.device) == CUDA_SUCCESS) m.deviceName = name;
  if ((res = cu.cuStreamCreate(&m.stream, 0)) != CUDA_SUCCESS) {
    m.stream = nullptr;
    return m.fail(res, "cuStreamCreate", error), nullptr;
  }
  if (kiln_status s = kiln_context_create(m.engine, &m.context)) {
    error = kiln_status_message(s);
    return nullptr;
  }
  int32_t n = kiln_engine_num_io(m.engine);
  m.buffers.assign(size_t(n), 0);
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
      size_t bytes = std::max<size_t>(size_t(numElements(t.shape)) * dtypeSize(t.dtype), 1);
      if ((res = cu.cuMemAlloc(&m.buffers[size_t(i)], bytes)) != CUDA_SUCCESS) {
        m.buffers[size_t(i)] = 0;
        return m.fail(res, ("allocating " + std::to_string(bytes) + " bytes for '" + t.name + "'").c_str(), error),
               nullptr;
      }
      if (kiln_status s = kiln_context_set_tensor_address(m.context, t.name.c_str(),
                                                          reinterpret_cast<void *>(m.buffers[size_t(i)]))) {
        error = kiln_status_message(s);
        return nullptr;
      }
    }
  return r;
}

EngineRunner::~EngineRunner() = default;

std::string EngineRunner::deviceName() const { return impl_->deviceName; }
std::string EngineRunner::route() const { return kiln_engine_route(impl_->engine); }

std::string dtypeName(int32_t dtype) {
  const char *name = ops::dtypeName(ops::DType(dtype));
  return std::string(name) != "undefined" ? name : "dtype " + std::to_string(dtype);
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
    CUresult r = m.cu->cuMemcpyHtoD(m.buffers[size_t(m.ioIndex[k])], it->data.data(), bytes);
    if (r != CUDA_SUCCESS) return m.fail(r, "uploading an input", error);
  }
  return true;
}

bool EngineRunner::run(std::vector<HostTensor> &outputs, std::string &error) {
  Impl &m = *impl_;
  outputs = outputs_;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    size_t bytes = size_t(numElements(outputs_[k].shape)) * dtypeSize(outputs_[k].dtype);
    CUresult r =
        m.cu->cuMemsetD8(m.buffers[size_t(m.ioIndex[inputs_.size() + k])], 0xff, bytes);  // NaN: unwritten shows
    if (r != CUDA_SUCCESS) return m.fail(r, "poisoning the outputs", error);
  }
  if (kiln_status s = kiln_context_enqueue(m.context, m.stream)) {
    error = kiln_status_message(s);
    return false;
  }
  CUresult r = m.cu->cuStreamSynchronize(m.stream);
  if (r != CUDA_SUCCESS) return m.fail(r, "executing the engine", error);
  for (size_t k = 0; k < outputs.size(); ++k) {
    HostTensor &t = outputs[k];
    t.data.resize(size_t(numElements(t.shape)) * dtypeSize(t.dtype));
    if ((r = m.cu->cuMemcpyDtoH(t.data.data(), m.buffers[size_t(m.ioIndex[inputs_.size() + k])], t.data.size())) !=
        CUDA_SUCCESS)
      return m.fail(r, "downloading an output", error);
  }
  return true;
}

bool EngineRunner::time(int warmup, int iterations, Timing &timing, std::string &error) {
  Impl &m = *impl_;
  const CudaDriver &cu = *m.cu;
  timing.ms.clear();
  for (int i = 0; i < warmup; ++i)
    if (kiln_status s = kiln_context_enqueue(m.context, m.stream)) {
      error = kiln_status_message(s);
      return false;
    }
  CUevent a = nullptr, b = nullptr;
  CUresult r;
  if ((r = cu.cuEventCreate(&a, 0)) != CUDA_SUCCESS || (r = cu.cuEventCreate(&b, 0)) != CUDA_SUCCESS) {
    if (a) cu.cuEventDestroy(a);
    return m.fail(r, "cuEventCreate", error);
  }
  bool ok = true;
  for (int i = 0; i < iterations && ok; ++i) {
    float ms = 0;
    if ((r = cu.cuEventRecord(a, m.stream)) != CUDA_SUCCESS) {
      ok = m.fail(r, "cuEventRecord", error);
      break;
    }
    if (kiln_status s = kiln_context_enqueue(m.context, m.stream)) {
      error = kiln_status_message(s);
      ok = false;
      break;
    }
    if ((r = cu.cuEventRecord(b, m.stream)) != CUDA_SUCCESS || (r = cu.cuEventSynchronize(b)) != CUDA_SUCCESS ||
        (r = cu.cuEventElapsedTime(&ms, a, b)) != CUDA_SUCCESS) {
      ok = m.fail(r, "timing a run", error);
      break;
    }
    timing.ms.push_back(ms);
  }
  cu.cuEventDestroy(a);
  cu.cuEventDestroy(b);
  std::sort(timing.ms.begin(), timing.ms.end());
  return ok;
}

bool EngineRunner::profile(int runs, std::vector<LaunchTime> &out, std::string &error) {
  Impl &m = *impl_;
  int32_t count = 0;
  if (kiln_status s = kiln_context_profile(m.context, m.stream, nullptr, 0, &count)) {
    error = kiln_status_message(s);
    return false;
  }
  std::vector<std::vector<kiln_launch_profile>> all(size_t(std::max(runs, 1)),
                                                    std::vector<kiln_launch_profile>(size_t(count)));
  for (auto &r : all)
    if (kiln_status s = kiln_context_profile(m.context, m.stream, r.data(), count, &count)) {
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

}  // namespace kiln::tuner
