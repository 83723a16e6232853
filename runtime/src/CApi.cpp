// The C API (kiln/kiln.h): handle bookkeeping, argument checks and the per-thread message. The
// work is done by parseEngine and Executor; every entry point catches everything, so no C++
// exception ever reaches a C caller.
#include "kiln/kiln.h"

#include "runtime/format/EngineFormat.h"
#include "Executor.h"
#include "LoadedEngine.h"
#include "Status.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <memory>
#include <new>
#include <string>

#ifndef KILN_VERSION
#define KILN_VERSION "0.1.0"
#endif

using namespace kiln::rt;

struct kiln_engine {
  std::shared_ptr<const LoadedEngine> impl;
};

struct kiln_context {
  std::unique_ptr<Executor> exec;
};

namespace {

struct LastError {
  kiln_status code = KILN_OK;
  std::string message;
};
thread_local LastError lastError;

kiln_status fail(kiln_status code, std::string message) {
  lastError.code = code;
  lastError.message = std::move(message);
  return code;
}
kiln_status fail(const Status& s) { return fail(s.code, s.message); }

const char* describe(kiln_status s) {
  switch (s) {
    case KILN_OK: return "success";
    case KILN_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case KILN_ERROR_IO: return "the engine file could not be read";
    case KILN_ERROR_FORMAT: return "not a valid kiln engine";
    case KILN_ERROR_VERSION: return "unsupported engine format version";
    case KILN_ERROR_ARCH: return "the engine cannot run on this GPU";
    case KILN_ERROR_NO_DEVICE: return "no NVIDIA driver or GPU";
    case KILN_ERROR_CUDA: return "a CUDA driver call failed";
    case KILN_ERROR_OUT_OF_MEMORY: return "out of memory";
    case KILN_ERROR_UNBOUND: return "an I/O tensor has no device address";
    case KILN_ERROR_SHAPE: return "shape mismatch";
  }
  return "unknown status";
}

// Runs `body`, turning any escaping exception into a status.
template <typename F> kiln_status guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(KILN_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(KILN_ERROR_INVALID_ARGUMENT, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(KILN_ERROR_INVALID_ARGUMENT, "internal error");
  }
}

kiln_status loadBytes(std::vector<uint8_t> bytes, const std::string& origin, kiln_engine** out) {
  auto engine = std::make_shared<LoadedEngine>();
  engine->file = std::move(bytes);
  std::string error;
  ParseStatus ps = parseEngine(engine->file.data(), engine->file.size(), engine->desc, error, &engine->weights);
  if (ps != ParseStatus::Ok)
    return fail(ps == ParseStatus::UnsupportedVersion ? KILN_ERROR_VERSION : KILN_ERROR_FORMAT, origin + error);
  for (size_t i = 0; i < engine->desc.io.size(); ++i) engine->ioByName[engine->desc.io[i].name] = int32_t(i);
  *out = new kiln_engine{std::move(engine)};
  return KILN_OK;
}

const IoTensor* ioAt(const kiln_engine* e, int32_t i) {
  if (!e || i < 0 || size_t(i) >= e->impl->desc.io.size()) return nullptr;
  return &e->impl->desc.io[size_t(i)];
}

// Looks up an I/O tensor by name for the context calls; on failure records why.
int32_t findTensor(const kiln_context* c, const char* name, kiln_status& status) {
  if (!c) return status = fail(KILN_ERROR_INVALID_ARGUMENT, "context is NULL"), -1;
  if (!name) return status = fail(KILN_ERROR_INVALID_ARGUMENT, "tensor name is NULL"), -1;
  const LoadedEngine& e = c->exec->engine();
  int32_t io = e.findIo(name);
  if (io < 0) {
    std::string known;
    for (const IoTensor& t : e.desc.io) known += (known.empty() ? "'" : ", '") + t.name + "'";
    status = fail(KILN_ERROR_INVALID_ARGUMENT, std::string("the engine has no I/O tensor named '") + name +
                                                   "' (it has " + (known.empty() ? "none" : known) + ")");
  }
  return io;
}

}  // namespace

extern "C" {

KILN_API const char* kiln_status_message(kiln_status status) {
  if (status != KILN_OK && status == lastError.code && !lastError.message.empty()) return lastError.message.c_str();
  return describe(status);
}

KILN_API const char* kiln_version(void) { return KILN_VERSION; }

KILN_API kiln_status kiln_engine_load(const char* path, kiln_engine** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    if (!path || !out) return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_engine_load: path and out must not be NULL");
    // Non-blocking, so that a FIFO cannot hang the open; only a regular file's size is real (a
    // directory's or a device's is not: reading by it allocated 2^63 bytes).
    int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return fail(KILN_ERROR_IO, std::string("cannot open '") + path + "': " + std::strerror(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      return fail(KILN_ERROR_IO, std::string("cannot read '") + path + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      return fail(KILN_ERROR_IO, std::string("cannot read '") + path +
                                     "': " + (S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file"));
    std::vector<uint8_t> bytes(size_t(st.st_size));
    for (size_t got = 0; got < bytes.size();) {
      ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        return fail(KILN_ERROR_IO,
                    std::string("cannot read '") + path + "': " + (r < 0 ? std::strerror(errno) : "the file shrank"));
      got += size_t(r);
    }
    return loadBytes(std::move(bytes), std::string(path) + ": ", out);
  });
}

KILN_API kiln_status kiln_engine_load_from_memory(const void* data, size_t size, kiln_engine** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    if (!out || (!data && size))
      return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_engine_load_from_memory: data and out must not be NULL");
    const uint8_t* p = static_cast<const uint8_t*>(data);
    return loadBytes(std::vector<uint8_t>(p, p + size), "", out);
  });
}

KILN_API void kiln_engine_destroy(kiln_engine* engine) { delete engine; }

KILN_API int32_t kiln_engine_num_io(const kiln_engine* e) { return e ? int32_t(e->impl->desc.io.size()) : 0; }

KILN_API const char* kiln_engine_io_name(const kiln_engine* e, int32_t i) {
  const IoTensor* t = ioAt(e, i);
  return t ? t->name.c_str() : nullptr;
}

KILN_API kiln_dtype kiln_engine_io_dtype(const kiln_engine* e, int32_t i) {
  const IoTensor* t = ioAt(e, i);
  return t ? kiln_dtype(t->dtype) : KILN_DTYPE_UNDEFINED;
}

KILN_API int32_t kiln_engine_io_rank(const kiln_engine* e, int32_t i) {
  const IoTensor* t = ioAt(e, i);
  return t ? int32_t(t->shape.size()) : -1;
}

KILN_API const int64_t* kiln_engine_io_shape(const kiln_engine* e, int32_t i) {
  const IoTensor* t = ioAt(e, i);
  return t ? t->shape.data() : nullptr;
}

KILN_API int32_t kiln_engine_io_is_input(const kiln_engine* e, int32_t i) {
  const IoTensor* t = ioAt(e, i);
  return t ? (t->isInput ? 1 : 0) : -1;
}

KILN_API const char* kiln_engine_target_arch(const kiln_engine* e) { return e ? e->impl->desc.arch.c_str() : nullptr; }

KILN_API const char* kiln_engine_route(const kiln_engine* e) { return e ? e->impl->desc.route.c_str() : nullptr; }

KILN_API kiln_status kiln_context_create(kiln_engine* engine, kiln_context** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    if (!engine || !out)
      return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_context_create: engine and out must not be NULL");
    Status s;
    std::unique_ptr<Executor> exec = Executor::create(engine->impl, s);
    if (!exec) return fail(s);
    *out = new kiln_context{std::move(exec)};
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_context_set_input_shape(kiln_context* c, const char* name, const int64_t* dims,
                                                  int32_t rank) {
  return guarded([&] {
    kiln_status st = KILN_OK;
    int32_t io = findTensor(c, name, st);
    if (io < 0) return st;
    const IoTensor& t = c->exec->engine().desc.io[size_t(io)];
    if (!t.isInput) return fail(KILN_ERROR_INVALID_ARGUMENT, "'" + t.name + "' is an output, not an input");
    if (rank < 0 || (rank > 0 && !dims))
      return fail(KILN_ERROR_INVALID_ARGUMENT, "bad dims/rank for input '" + t.name + "'");
    Status s = c->exec->setInputShape(io, dims, rank);
    return s.ok() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_get_tensor_shape(kiln_context* c, const char* name, int64_t* dims, int32_t capacity,
                                                   int32_t* rank) {
  return guarded([&] {
    kiln_status st = KILN_OK;
    int32_t io = findTensor(c, name, st);
    if (io < 0) return st;
    if (!rank || (capacity > 0 && !dims))
      return fail(KILN_ERROR_INVALID_ARGUMENT, !rank ? "rank is NULL" : "dims is NULL with a non-zero capacity");
    Status s = c->exec->resolveShapes();
    if (!s.ok()) return fail(s);
    const std::vector<int64_t>& shape = c->exec->tensorShape(io);
    *rank = int32_t(shape.size());
    for (int32_t k = 0; k < capacity && k < *rank; ++k) dims[k] = shape[size_t(k)];
    return KILN_OK;
  });
}

KILN_API int32_t kiln_engine_num_profiles(const kiln_engine* engine) {
  return engine ? int32_t(engine->impl->desc.numProfiles()) : -1;
}

KILN_API kiln_status kiln_engine_profile_shape(const kiln_engine* e, int32_t profile, const char* name,
                                               kiln_profile_bound which, int64_t* dims, int32_t capacity,
                                               int32_t* rank) {
  return guarded([&] {
    if (!e || !name || !rank) return fail(KILN_ERROR_INVALID_ARGUMENT, !e ? "engine is NULL" : "name or rank is NULL");
    const EngineDesc& d = e->impl->desc;
    if (profile < 0 || size_t(profile) >= d.numProfiles())
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  "profile " + std::to_string(profile) + " (the engine has " + std::to_string(d.numProfiles()) + ")");
    if (which < KILN_PROFILE_MIN || which > KILN_PROFILE_MAX) return fail(KILN_ERROR_INVALID_ARGUMENT, "bad bound");
    int32_t io = e->impl->findIo(name);
    if (io < 0 || !d.io[size_t(io)].isInput)
      return fail(KILN_ERROR_INVALID_ARGUMENT, std::string("no input named '") + name + "'");
    if (capacity > 0 && !dims) return fail(KILN_ERROR_INVALID_ARGUMENT, "dims is NULL with a non-zero capacity");
    using Bound = EngineDesc::Bound;
    std::vector<int64_t> shape = d.shapeWith(size_t(io), d.boundValues(which == KILN_PROFILE_MIN   ? Bound::Min
                                                                       : which == KILN_PROFILE_OPT ? Bound::Opt
                                                                                                   : Bound::Max,
                                                                       size_t(profile)));
    *rank = int32_t(shape.size());
    for (int32_t k = 0; k < capacity && k < *rank; ++k) dims[k] = shape[size_t(k)];
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_context_set_profile(kiln_context* c, int32_t profile) {
  return guarded([&] {
    if (!c) return fail(KILN_ERROR_INVALID_ARGUMENT, "context is NULL");
    const size_t n = c->exec->engine().desc.numProfiles();
    if (profile < 0 || size_t(profile) >= n)
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  "profile " + std::to_string(profile) + " (the engine has " + std::to_string(n) + ")");
    c->exec->setProfile(size_t(profile));
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_context_set_tensor_address(kiln_context* c, const char* name, void* device_ptr) {
  return guarded([&] {
    kiln_status st = KILN_OK;
    int32_t io = findTensor(c, name, st);
    if (io < 0) return st;
    const IoTensor& t = c->exec->engine().desc.io[size_t(io)];
    uintptr_t p = reinterpret_cast<uintptr_t>(device_ptr);
    size_t align = dtypeByteSize(t.dtype);
    if (align && p % align != 0)
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  "address for '" + t.name + "' is not aligned to its " + std::to_string(align) + "-byte elements");
    c->exec->bind(io, CUdeviceptr(p));
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_context_enqueue(kiln_context* c, void* cuda_stream) {
  return guarded([&] {
    if (!c) return fail(KILN_ERROR_INVALID_ARGUMENT, "context is NULL");
    Status s = c->exec->enqueue(static_cast<CUstream>(cuda_stream));
    return s.ok() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_profile(kiln_context* c, void* cuda_stream, kiln_launch_profile* out,
                                          int32_t capacity, int32_t* count) {
  return guarded([&] {
    if (!c || !count) return fail(KILN_ERROR_INVALID_ARGUMENT, !c ? "context is NULL" : "count is NULL");
    if (capacity > 0 && !out) return fail(KILN_ERROR_INVALID_ARGUMENT, "out is NULL with a non-zero capacity");
    std::vector<float> ms;
    Status s = c->exec->profile(static_cast<CUstream>(cuda_stream), ms);
    if (!s.ok()) return fail(s);
    const EngineDesc& d = c->exec->engine().desc;
    const std::vector<Launch>& launches = d.launchesOf(c->exec->specialisation());
    *count = static_cast<int32_t>(ms.size());
    for (int32_t i = 0; i < capacity && i < *count; ++i) {
      const Launch& l = launches[size_t(i)];
      out[i].node = l.node.c_str();
      out[i].kernel = l.kind == Launch::Kind::Copy   ? "copy"
                      : l.kind == Launch::Kind::Gemm ? "cublasLt_matmul"
                                                     : d.kernels[size_t(l.kernel)].entry.c_str();
      out[i].ms = ms[size_t(i)];
    }
    return KILN_OK;
  });
}

KILN_API void kiln_context_destroy(kiln_context* c) { delete c; }

}  // extern "C"
