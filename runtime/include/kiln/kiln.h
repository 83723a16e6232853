/*
 * kiln.h — the kiln runtime's C API (C99; usable from C and C++).
 *
 * An application links libkiln_runtime and includes this header, nothing else. The runtime loads
 * the NVIDIA driver (libcuda.so.1) at run time, so the library itself builds and loads on
 * machines without CUDA; only kiln_context_create needs a GPU.
 *
 *   kiln_engine   an engine file loaded into host memory and verified: immutable, so it may be
 *                 shared by any number of threads and contexts.
 *   kiln_context  one execution of an engine on one GPU: its scratch memory (the arena) and
 *                 launch state. The engine's loaded kernels and its weights on the device are not
 *                 the context's own: all contexts of one engine on the same CUDA context share
 *                 one copy (see Ownership), which kernels only read. A context may be used by one
 *                 thread at a time; use one context per concurrent stream, because all enqueues
 *                 of a context share its arena. Contexts (of one engine or of several) may be
 *                 created, used and destroyed concurrently by different threads, each on its own
 *                 stream: their one-time set-up steps (the shared copy included) are serialised
 *                 inside the runtime and never touch the legacy default stream, so one thread's
 *                 set-up cannot disturb another thread's CUDA graph capture.
 *
 * Errors. Every function that can fail returns a kiln_status. On failure the reason is kept per
 * thread and kiln_status_message() returns it until the next failing call on that thread. A
 * failed call changes nothing: no handle is created (the out pointer is set to NULL), a context
 * keeps its earlier bindings. The library never aborts, exits or lets an exception escape.
 *
 * Ownership. Every handle made by a *_create or *_load function is freed by the matching
 * *_destroy function (NULL is accepted and ignored). A context keeps what it needs of its engine
 * alive, so an engine may be destroyed while contexts made from it still run. Strings and arrays
 * returned by accessors belong to the engine and live until the engine and all of its contexts
 * are destroyed.
 * Device memory: the first context of an engine on a CUDA context loads the engine's kernels and
 * uploads its weights there; later contexts of that engine on the same CUDA context use that copy
 * (two contexts on one GPU hold one copy of the weights and two arenas). The copy lives as long as
 * any of those contexts and is freed by the last one's kiln_context_destroy, whatever the order,
 * and whether or not the engine handle is still alive (kiln_engine_destroy frees host memory
 * only). A context on another CUDA context (another device, or a context the application created
 * itself) has its own copy. Destroy every context before the CUDA context it runs on.
 */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#if defined(KILN_BUILDING_SHARED)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT, /* a NULL handle, unknown tensor name, bad index, ... */
  KILN_ERROR_IO,               /* the engine file could not be opened or read */
  KILN_ERROR_FORMAT,           /* not a kiln engine, truncated, corrupted or inconsistent */
  KILN_ERROR_VERSION,          /* an engine format version this runtime does not read */
  KILN_ERROR_ARCH,             /* the engine has no code that runs on this GPU */
  KILN_ERROR_NO_DEVICE,        /* no NVIDIA driver (libcuda.so.1) or no GPU */
  KILN_ERROR_CUDA,             /* a CUDA driver call failed; the message names it */
  KILN_ERROR_OUT_OF_MEMORY,    /* host or device memory */
  KILN_ERROR_UNBOUND,          /* enqueue before every I/O tensor has an address */
  KILN_ERROR_SHAPE             /* a shape outside the engine's profile (or not its static shape) */
} kiln_status;

/* Element types; the values are ONNX TensorProto.DataType's. */
typedef enum {
  KILN_DTYPE_UNDEFINED = 0,
  KILN_DTYPE_FLOAT32 = 1,
  KILN_DTYPE_UINT8 = 2,
  KILN_DTYPE_INT8 = 3,
  KILN_DTYPE_UINT16 = 4,
  KILN_DTYPE_INT16 = 5,
  KILN_DTYPE_INT32 = 6,
  KILN_DTYPE_INT64 = 7,
  KILN_DTYPE_BOOL = 9,
  KILN_DTYPE_FLOAT16 = 10,
  KILN_DTYPE_FLOAT64 = 11,
  KILN_DTYPE_UINT32 = 12,
  KILN_DTYPE_UINT64 = 13,
  KILN_DTYPE_BFLOAT16 = 16,
  KILN_DTYPE_FLOAT8E4M3FN = 17,
  KILN_DTYPE_FLOAT8E4M3FNUZ = 18,
  KILN_DTYPE_FLOAT8E5M2 = 19,
  KILN_DTYPE_FLOAT8E5M2FNUZ = 20
} kiln_dtype;

typedef struct kiln_engine kiln_engine;
typedef struct kiln_context kiln_context;

/* The reason for the last failure on this thread, if that failure returned `status`; otherwise
 * a fixed description of `status`. Never NULL. The string is valid until the next kiln call on
 * this thread. */
KILN_API const char* kiln_status_message(kiln_status status);

/* "MAJOR.MINOR.PATCH" of this runtime. */
KILN_API const char* kiln_version(void);

/* ---- Engines ---------------------------------------------------------------------------- */

/* Reads and verifies an engine file (header, checksum, metadata, every index and range).
 * On success *out is a new engine; on failure *out is NULL.
 * Errors: INVALID_ARGUMENT, IO, FORMAT, VERSION, OUT_OF_MEMORY. */
KILN_API kiln_status kiln_engine_load(const char* path, kiln_engine** out);

/* Like kiln_engine_load, from `size` bytes at `data`, which are copied: the caller may free
 * them as soon as this returns. */
KILN_API kiln_status kiln_engine_load_from_memory(const void* data, size_t size, kiln_engine** out);

/* Releases the engine handle. Contexts made from it stay valid. NULL is ignored. */
KILN_API void kiln_engine_destroy(kiln_engine* engine);

/* The I/O tensor table, by index 0 .. num_io-1, in the engine's order (inputs first in engines
 * made by kiln, but do not rely on it: use is_input). For a NULL engine or an index out of
 * range: name and shape return NULL, dtype KILN_DTYPE_UNDEFINED, rank and is_input -1. */
KILN_API int32_t kiln_engine_num_io(const kiln_engine* engine);
KILN_API const char* kiln_engine_io_name(const kiln_engine* engine, int32_t i);
KILN_API kiln_dtype kiln_engine_io_dtype(const kiln_engine* engine, int32_t i);
KILN_API int32_t kiln_engine_io_rank(const kiln_engine* engine, int32_t i);
KILN_API const int64_t* kiln_engine_io_shape(const kiln_engine* engine, int32_t i); /* rank dims */
KILN_API int32_t kiln_engine_io_is_input(const kiln_engine* engine, int32_t i);     /* 1 or 0 */

/* The GPU architecture the engine was built for, e.g. "sm_90", and its build route (the
 * canonical "knob=value;..." text; "" for the default route). NULL for a NULL engine. */
KILN_API const char* kiln_engine_target_arch(const kiln_engine* engine);
KILN_API const char* kiln_engine_route(const kiln_engine* engine);

/* ---- Contexts --------------------------------------------------------------------------- */

/* Prepares `engine` for execution on a GPU: uses the CUDA context current on this thread, or
 * else the primary context of device 0. Checks the device's compute capability against the
 * engine's target, loads its kernels and uploads its weights (unless a live context of this
 * engine on the same CUDA context already did: then it shares them) and allocates its own arena.
 * The calling thread's current CUDA context is the same before and after the call.
 * Errors: INVALID_ARGUMENT, NO_DEVICE, ARCH, CUDA, OUT_OF_MEMORY. */
KILN_API kiln_status kiln_context_create(kiln_engine* engine, kiln_context** out);

/* Dynamic shapes. An engine built with a profile (kiln compile --min-shapes/--opt-shapes/
 * --max-shapes) runs any input shapes inside it: each input axis that belongs to a profile dim
 * (such as "batch" or "sequence") takes any value in the dim's [min, max]; inputs that share a dim
 * must be given the same value. The engine holds specialisations built for some values of each
 * dim (min, opt, max and the powers of two between); other values run on the next larger one,
 * the inputs zero-padded and the outputs cut back, where the compiler verified that padding does
 * not change the outputs, and are refused (SHAPE, naming the dim and the values built) where it
 * does not. A static engine is one profile with min = opt = max.
 * kiln_engine_io_shape gives the opt shape; until shapes are set a context runs it. */

/* Declares the shape of an input for the next enqueues. Each axis must equal the engine's or lie
 * in its profile dim's range.
 * Errors: INVALID_ARGUMENT (unknown name, not an input, NULL dims with rank > 0), SHAPE (a rank
 * or fixed axis that differs, a value outside the range; the message names the axis and range). */
KILN_API kiln_status kiln_context_set_input_shape(kiln_context* context, const char* name, const int64_t* dims,
                                                  int32_t rank);

/* The shape an input or output tensor has for the next enqueue (outputs follow the inputs' dims):
 * writes min(rank, capacity) dims to `dims` and the rank to *rank (capacity 0 asks for the rank).
 * Errors: INVALID_ARGUMENT, SHAPE (inputs that share a dim were given different values, or no
 * specialisation runs these shapes). */
KILN_API kiln_status kiln_context_get_tensor_shape(kiln_context* context, const char* name, int64_t* dims,
                                                   int32_t capacity, int32_t* rank);

/* Optimization profiles (kiln compile with --min/--opt/--max-shapes repeated, one profile per
 * repetition): their count (1 for a static engine or one profile; -1 for a NULL engine), an
 * input's min, opt or max shape in one, and the profile a context uses (0 until set; each has its
 * own ranges and specialisations). Setting a profile resets every input's shape to the profile's
 * opt shape; set_input_shape then checks against its ranges.
 * Errors: INVALID_ARGUMENT (NULL, a profile index out of range, no such input, bad bound). */
typedef enum { KILN_PROFILE_MIN = 0, KILN_PROFILE_OPT = 1, KILN_PROFILE_MAX = 2 } kiln_profile_bound;
KILN_API int32_t kiln_engine_num_profiles(const kiln_engine* engine);
KILN_API kiln_status kiln_engine_profile_shape(const kiln_engine* engine, int32_t profile, const char* input,
                                               kiln_profile_bound which, int64_t* dims, int32_t capacity,
                                               int32_t* rank);
KILN_API kiln_status kiln_context_set_profile(kiln_context* context, int32_t profile);

/* Binds an input or output tensor to device memory (a CUdeviceptr / cudaMalloc pointer of at
 * least the tensor's byte size, aligned to its element size). NULL unbinds. The memory must stay
 * valid until the enqueued work that uses it has finished.
 * Errors: INVALID_ARGUMENT (unknown name, misaligned pointer). */
KILN_API kiln_status kiln_context_set_tensor_address(kiln_context* context, const char* name, void* device_ptr);

/* Enqueues one execution on `cuda_stream` (a CUstream / cudaStream_t; NULL is the legacy default
 * stream) and returns without waiting. Reading the outputs needs the stream synchronized.
 * Successive enqueues of one context must be ordered on the GPU (same stream, or synchronized),
 * since they share the context's arena. Engines built with the runtime.cuda_graph knob replay a
 * CUDA graph on `cuda_stream`: the first enqueue (of each specialisation, for dynamic shapes)
 * launches directly (what loads lazily loads then); a graph is captured on the context's own
 * stream for each combination of bindings and input shapes when it is next enqueued, and kept
 * (up to 16 per context) so that returning to it replays without capturing again (the NULL
 * stream included; on a stream the application is capturing itself they launch directly).
 * NVTX: with the environment variable KILN_NVTX=1 when the context is created, every launch is
 * an NVTX range in the domain "kiln" named by the graph node(s) it implements, for Nsight Systems
 * (nsys profile); such a context launches directly, never as a CUDA graph.
 * Errors: INVALID_ARGUMENT, UNBOUND (names the first unbound tensor), CUDA. After a CUDA error
 * some launches may already be enqueued; the outputs are then undefined. */
KILN_API kiln_status kiln_context_enqueue(kiln_context* context, void* cuda_stream);

/* One launch of a profiled execution. */
typedef struct {
  const char* node;   /* the graph node(s) the launch implements ("" if unknown) */
  const char* kernel; /* the kernel's entry point, "copy" (device-to-device copy) or "cublasLt_matmul" */
  float ms;           /* device time between CUDA events recorded around the launch */
} kiln_launch_profile;

/* Runs one execution launch by launch on `cuda_stream` (never as a CUDA graph), records a CUDA
 * event around every launch and waits for the stream, like trtexec --dumpProfile. Writes
 * min(*count, capacity) entries to `out` and sets *count to the number of launches (pass
 * capacity 0 to learn it). Strings belong to the engine. Every launch is also an NVTX range (as
 * with KILN_NVTX=1). The outputs are computed as by kiln_context_enqueue. Errors: as
 * kiln_context_enqueue, and INVALID_ARGUMENT for a NULL count. */
KILN_API kiln_status kiln_context_profile(kiln_context* context, void* cuda_stream, kiln_launch_profile* out,
                                          int32_t capacity, int32_t* count);

/* Frees the context's own device memory (its arena and launch state), and the engine's kernels and
 * weights on its CUDA context when no other context uses them. Work it enqueued must have
 * finished (for example, synchronize the stream first); other contexts' work may still run.
 * NULL is ignored. */
KILN_API void kiln_context_destroy(kiln_context* context);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_H */
