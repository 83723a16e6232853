/* The C API, from C (this file must stay C99): error paths, the I/O table, and — on a GPU host —
 * an end-to-end run of the hand-made engine (TestEngine.h: y = a*x + b + k) checked against the
 * CPU. Without a driver or GPU, kiln_context_create must fail with KILN_ERROR_NO_DEVICE and a
 * message; the test then prints "skipped: no GPU" and exits 77 (reported as skipped by ctest).
 *
 *   c_api_test ENGINE.kiln                 run it (or skip without a GPU)
 *   c_api_test ENGINE.kiln --expect-arch   the engine targets another GPU: context creation
 *                                          must fail with KILN_ERROR_ARCH
 *
 * Device memory is managed through libcuda directly (dlopen), so the test needs no CUDA toolkit.
 */
#include "kiln/kiln.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                                               \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                  \
      fprintf(stderr, __VA_ARGS__);                                                                                    \
      fprintf(stderr, "\n");                                                                                           \
      ++failures;                                                                                                      \
    }                                                                                                                  \
  } while (0)

/* The few driver entry points the test itself needs. */
typedef unsigned long long devptr;
typedef int (*cuInit_t)(unsigned);
typedef int (*cuDeviceGet_t)(int*, int);
typedef int (*cuPrimaryCtxRetain_t)(void**, int);
typedef int (*cuCtxSetCurrent_t)(void*);
typedef int (*cuMemAlloc_t)(devptr*, size_t);
typedef int (*cuMemFree_t)(devptr);
typedef int (*cuMemcpyHtoD_t)(devptr, const void*, size_t);
typedef int (*cuMemcpyDtoH_t)(void*, devptr, size_t);
typedef int (*cuStreamCreate_t)(void**, unsigned);
typedef int (*cuStreamSynchronize_t)(void*);
typedef int (*cuStreamDestroy_t)(void*);

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "libcuda has no %s\n", name);
    exit(1);
  }
  return p;
}

static void check_error_paths(void) {
  kiln_engine* e = (kiln_engine*)1;
  kiln_status s = kiln_engine_load("/nonexistent/engine.kiln", &e);
  CHECK(s == KILN_ERROR_IO && e == NULL, "status %d", (int)s);
  CHECK(strstr(kiln_status_message(s), "/nonexistent/engine.kiln") != NULL, "message: %s", kiln_status_message(s));

  s = kiln_engine_load_from_memory("hello", 5, &e);
  CHECK(s == KILN_ERROR_FORMAT && e == NULL, "status %d", (int)s);
  CHECK(strstr(kiln_status_message(s), "not a kiln engine") != NULL, "message: %s", kiln_status_message(s));

  s = kiln_engine_load(NULL, &e);
  CHECK(s == KILN_ERROR_INVALID_ARGUMENT, "status %d", (int)s);
  s = kiln_context_create(NULL, NULL);
  CHECK(s == KILN_ERROR_INVALID_ARGUMENT, "status %d", (int)s);
  CHECK(kiln_engine_num_io(NULL) == 0 && kiln_engine_io_name(NULL, 0) == NULL, "NULL engine accessors");
  CHECK(strcmp(kiln_status_message(KILN_OK), "success") == 0, "%s", kiln_status_message(KILN_OK));
  kiln_engine_destroy(NULL);
  kiln_context_destroy(NULL);
}

static void print_io_table(const kiln_engine* e) {
  int32_t n = kiln_engine_num_io(e), i, k;
  printf("engine: target %s, route '%s', runtime %s, %d I/O tensors\n", kiln_engine_target_arch(e),
         kiln_engine_route(e), kiln_version(), (int)n);
  for (i = 0; i < n; ++i) {
    const int64_t* shape = kiln_engine_io_shape(e, i);
    printf("  %-6s %-8s dtype %2d  [", kiln_engine_io_is_input(e, i) ? "input" : "output", kiln_engine_io_name(e, i),
           (int)kiln_engine_io_dtype(e, i));
    for (k = 0; k < kiln_engine_io_rank(e, i); ++k) printf("%s%lld", k ? "," : "", (long long)shape[k]);
    printf("]\n");
  }
}

/* Mirrors TestEngine.h. */
#define N 1000
static float x_of(int i) { return (float)(i % 17) - 8.0f; }
static float b_of(int i) { return 0.25f * (float)i - 3.0f; }

/* The device side of a test after kiln_context_create: libcuda, the primary context the context
 * uses made current for our allocations, x (N floats, uploaded: x_of) and y (N floats) on the
 * device, and a stream. Returns the library, or NULL (a failure is counted). */
static void* device_setup(devptr* dx, devptr* dy, void** stream) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void* cuctx = NULL;
  float x[N];
  int i, dev = 0;
  CHECK(lib != NULL, "context created but libcuda.so.1 cannot be opened");
  if (!lib) return NULL;
  ((cuInit_t)sym(lib, "cuInit"))(0);
  ((cuDeviceGet_t)sym(lib, "cuDeviceGet"))(&dev, 0);
  CHECK(((cuPrimaryCtxRetain_t)sym(lib, "cuDevicePrimaryCtxRetain"))(&cuctx, dev) == 0, "retain");
  CHECK(((cuCtxSetCurrent_t)sym(lib, "cuCtxSetCurrent"))(cuctx) == 0, "set current");
  CHECK(((cuMemAlloc_t)sym(lib, "cuMemAlloc_v2"))(dx, sizeof x) == 0, "alloc x");
  CHECK(((cuMemAlloc_t)sym(lib, "cuMemAlloc_v2"))(dy, N * sizeof(float)) == 0, "alloc y");
  CHECK(((cuStreamCreate_t)sym(lib, "cuStreamCreate"))(stream, 0) == 0, "stream");
  for (i = 0; i < N; ++i) x[i] = x_of(i);
  CHECK(((cuMemcpyHtoD_t)sym(lib, "cuMemcpyHtoD_v2"))(*dx, x, sizeof x) == 0, "upload x");
  return lib;
}

static int run_on_gpu(kiln_engine* engine, kiln_context* ctx) {
  void* stream = NULL;
  devptr dx = 0, dy = 0, dy2 = 0;
  float y[N];
  int i, bad = 0, round;
  int64_t good_shape[1] = {N}, bad_shape[2] = {N, 1};
  kiln_status s;
  void* lib = device_setup(&dx, &dy, &stream);
  if (!lib) return 1;
  CHECK(((cuMemAlloc_t)sym(lib, "cuMemAlloc_v2"))(&dy2, sizeof y) == 0, "alloc y2");

  s = kiln_context_enqueue(ctx, stream);
  CHECK(s == KILN_ERROR_UNBOUND && strstr(kiln_status_message(s), "'x'") && strstr(kiln_status_message(s), "'y'"),
        "enqueue unbound: %d %s", (int)s, kiln_status_message(s));
  s = kiln_context_set_input_shape(ctx, "x", bad_shape, 2);
  CHECK(s == KILN_ERROR_SHAPE, "bad shape: %d %s", (int)s, kiln_status_message(s));
  printf("expected error: %s\n", kiln_status_message(s));
  s = kiln_context_set_input_shape(ctx, "y", good_shape, 1);
  CHECK(s == KILN_ERROR_INVALID_ARGUMENT, "shape of an output: %d", (int)s);
  s = kiln_context_set_tensor_address(ctx, "z", (void*)(size_t)dx);
  CHECK(s == KILN_ERROR_INVALID_ARGUMENT && strstr(kiln_status_message(s), "'z'"), "unknown name: %s",
        kiln_status_message(s));
  s = kiln_context_set_tensor_address(ctx, "x", (void*)(size_t)(dx + 1));
  CHECK(s == KILN_ERROR_INVALID_ARGUMENT, "misaligned: %d", (int)s);
  CHECK(kiln_context_set_input_shape(ctx, "x", good_shape, 1) == KILN_OK, "%s", kiln_status_message(KILN_ERROR_SHAPE));
  CHECK(kiln_context_set_tensor_address(ctx, "x", (void*)(size_t)dx) == KILN_OK, "bind x");
  CHECK(kiln_context_set_tensor_address(ctx, "y", (void*)(size_t)dy) == KILN_OK, "bind y");

  /* Round 1 runs after the engine handle is gone (the context keeps what it needs); round 2
   * writes to another output buffer (an engine with CUDA graphs must capture again). */
  for (round = 0; round < 3; ++round) {
    devptr out = round == 2 ? dy2 : dy;
    if (round == 2) CHECK(kiln_context_set_tensor_address(ctx, "y", (void*)(size_t)dy2) == KILN_OK, "rebind y");
    memset(y, 0, sizeof y);
    CHECK(((cuMemcpyHtoD_t)sym(lib, "cuMemcpyHtoD_v2"))(out, y, sizeof y) == 0, "clear y");
    s = kiln_context_enqueue(ctx, stream);
    CHECK(s == KILN_OK, "enqueue: %s", kiln_status_message(s));
    CHECK(((cuStreamSynchronize_t)sym(lib, "cuStreamSynchronize"))(stream) == 0, "sync");
    CHECK(((cuMemcpyDtoH_t)sym(lib, "cuMemcpyDtoH_v2"))(y, out, sizeof y) == 0, "download y");
    for (i = 0; i < N; ++i) {
      float want = fmaf(2.5f, x_of(i), b_of(i)) + 1.0f;
      if (fabsf(y[i] - want) > 1e-5f * (1.0f + fabsf(want))) {
        if (bad++ < 5) fprintf(stderr, "y[%d] = %g, CPU says %g\n", i, y[i], want);
      }
    }
    printf("round %d: y[0..3] = %g %g %g %g, %d mismatches\n", round, y[0], y[1], y[2], y[3], bad);
    if (round == 0) kiln_engine_destroy(engine);
  }
  CHECK(bad == 0, "%d of %d outputs differ from the CPU", bad, N);
  kiln_context_destroy(ctx);
  ((cuStreamDestroy_t)sym(lib, "cuStreamDestroy_v2"))(stream);
  ((cuMemFree_t)sym(lib, "cuMemFree_v2"))(dx);
  ((cuMemFree_t)sym(lib, "cuMemFree_v2"))(dy);
  ((cuMemFree_t)sym(lib, "cuMemFree_v2"))(dy2);
  return 0;
}

/* An engine with a dynamic n (make_test_engine --dynamic): built for 1000, 500 and 100, other
 * values in 100..1000 padded. Each n's outputs match the CPU; y past n is left alone; values
 * outside the range are refused. */
static void check_profile(kiln_engine* engine) {
  int64_t dims[4];
  int32_t rank = 0;
  CHECK(kiln_engine_num_profiles(engine) == 1, "num_profiles");
  CHECK(kiln_engine_profile_shape(engine, 0, "x", KILN_PROFILE_MIN, dims, 4, &rank) == KILN_OK && rank == 1 &&
            dims[0] == 100,
        "profile min");
  CHECK(kiln_engine_profile_shape(engine, 0, "x", KILN_PROFILE_MAX, dims, 4, &rank) == KILN_OK && dims[0] == 1000,
        "profile max");
  CHECK(kiln_engine_profile_shape(engine, 1, "x", KILN_PROFILE_MAX, dims, 4, &rank) == KILN_ERROR_INVALID_ARGUMENT,
        "profile 1");
  CHECK(kiln_engine_profile_shape(engine, 0, "y", KILN_PROFILE_MAX, dims, 4, &rank) == KILN_ERROR_INVALID_ARGUMENT,
        "profile of an output");
}

/* One run at n: outputs set, y's shape n, y[0..n) right and the rest untouched; the mismatches. */
static int run_at(void* lib, kiln_context* ctx, void* stream, devptr dy, int64_t n) {
  float y[N];
  int64_t dims[2];
  int32_t rank = 0;
  int i, bad = 0;
  kiln_status s;
  CHECK(kiln_context_set_input_shape(ctx, "x", &n, 1) == KILN_OK, "shape %d: %s", (int)n,
        kiln_status_message(KILN_ERROR_SHAPE));
  CHECK(kiln_context_get_tensor_shape(ctx, "y", dims, 2, &rank) == KILN_OK && rank == 1 && dims[0] == n,
        "y's shape at %d: %lld", (int)n, (long long)dims[0]);
  for (i = 0; i < N; ++i) y[i] = -12345.0f;
  CHECK(((cuMemcpyHtoD_t)sym(lib, "cuMemcpyHtoD_v2"))(dy, y, sizeof y) == 0, "clear y");
  s = kiln_context_enqueue(ctx, stream);
  CHECK(s == KILN_OK, "enqueue at %d: %s", (int)n, kiln_status_message(s));
  CHECK(((cuStreamSynchronize_t)sym(lib, "cuStreamSynchronize"))(stream) == 0, "sync");
  CHECK(((cuMemcpyDtoH_t)sym(lib, "cuMemcpyDtoH_v2"))(y, dy, sizeof y) == 0, "download y");
  for (i = 0; i < N; ++i) {
    float want = i < n ? fmaf(2.5f, x_of(i), b_of(i)) + 1.0f : -12345.0f;
    if (fabsf(y[i] - want) > 1e-5f * (1.0f + fabsf(want)) && bad++ < 5)
      fprintf(stderr, "n %d: y[%d] = %g, want %g\n", (int)n, i, y[i], want);
  }
  printf("n %d: %d mismatches\n", (int)n, bad);
  return bad;
}

static void expect_refused(kiln_context* ctx, int64_t n, const char* words) {
  kiln_status s = kiln_context_set_input_shape(ctx, "x", &n, 1);
  CHECK(s == KILN_ERROR_SHAPE && strstr(kiln_status_message(s), words), "n %d: %d %s", (int)n, (int)s,
        kiln_status_message(s));
  printf("expected error: %s\n", kiln_status_message(s));
}

static int run_dynamic(kiln_context* ctx, int profiles) {
  void* stream = NULL;
  devptr dx = 0, dy = 0;
  int k, bad = 0;
  static const int64_t sizes[] = {700, 500, 100, 1000, 333, 101, 700, 333, 1000}; /* (graphs: replays) */
  int64_t dims[2];
  int32_t rank = 0;
  void* lib = device_setup(&dx, &dy, &stream);
  if (!lib) return 1;
  CHECK(kiln_context_set_tensor_address(ctx, "x", (void*)(size_t)dx) == KILN_OK, "bind x");
  CHECK(kiln_context_set_tensor_address(ctx, "y", (void*)(size_t)dy) == KILN_OK, "bind y");
  if (!profiles) {
    expect_refused(ctx, 1001, "'n'");
    expect_refused(ctx, 99, "'n'");
    for (k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); ++k) bad += run_at(lib, ctx, stream, dy, sizes[k]);
  } else {
    /* Profile 0 (500..1000 on 1000 and 500) until set; profile 1 (100..500 on 500 and 100). */
    expect_refused(ctx, 333, "profile 0 of 2");
    bad += run_at(lib, ctx, stream, dy, 700) + run_at(lib, ctx, stream, dy, 500);
    CHECK(kiln_context_set_profile(ctx, 1) == KILN_OK, "set_profile 1");
    CHECK(kiln_context_get_tensor_shape(ctx, "x", dims, 2, &rank) == KILN_OK && dims[0] == 100,
          "profile 1's opt shape after set_profile: %lld", (long long)dims[0]);
    expect_refused(ctx, 700, "500");
    bad += run_at(lib, ctx, stream, dy, 333) + run_at(lib, ctx, stream, dy, 100) + run_at(lib, ctx, stream, dy, 500);
    CHECK(kiln_context_set_profile(ctx, 2) == KILN_ERROR_INVALID_ARGUMENT, "set_profile 2");
    printf("expected error: %s\n", kiln_status_message(KILN_ERROR_INVALID_ARGUMENT));
    CHECK(kiln_context_set_profile(ctx, 0) == KILN_OK, "set_profile 0");
    bad += run_at(lib, ctx, stream, dy, 1000) + run_at(lib, ctx, stream, dy, 600);
  }
  CHECK(bad == 0, "%d outputs wrong", bad);
  kiln_context_destroy(ctx);
  ((cuStreamDestroy_t)sym(lib, "cuStreamDestroy_v2"))(stream);
  ((cuMemFree_t)sym(lib, "cuMemFree_v2"))(dx);
  ((cuMemFree_t)sym(lib, "cuMemFree_v2"))(dy);
  return 0;
}

/* Two profiles (make_test_engine --profiles): their queries. */
static void check_profiles(kiln_engine* engine) {
  int64_t dims[4];
  int32_t rank = 0;
  CHECK(kiln_engine_num_profiles(engine) == 2, "num_profiles");
  CHECK(kiln_engine_profile_shape(engine, 1, "x", KILN_PROFILE_MAX, dims, 4, &rank) == KILN_OK && dims[0] == 500,
        "profile 1 max");
  CHECK(kiln_engine_profile_shape(engine, 0, "x", KILN_PROFILE_MIN, dims, 4, &rank) == KILN_OK && dims[0] == 500,
        "profile 0 min");
}

int main(int argc, char** argv) {
  kiln_engine* engine = NULL;
  kiln_context* ctx = NULL;
  kiln_status s;
  int expect_arch = argc > 2 && strcmp(argv[2], "--expect-arch") == 0;
  int profiles = argc > 2 && strcmp(argv[2], "--profiles") == 0;
  int dynamic = profiles || (argc > 2 && strcmp(argv[2], "--dynamic") == 0);
  if (argc < 2) return fprintf(stderr, "usage: %s ENGINE.kiln [--expect-arch | --dynamic | --profiles]\n", argv[0]), 2;

  check_error_paths();
  s = kiln_engine_load(argv[1], &engine);
  if (s != KILN_OK) return fprintf(stderr, "FAIL: cannot load %s: %s\n", argv[1], kiln_status_message(s)), 1;
  print_io_table(engine);
  CHECK(kiln_engine_num_io(engine) == 2, "num_io");
  CHECK(strcmp(kiln_engine_io_name(engine, 0), "x") == 0 && kiln_engine_io_is_input(engine, 0) == 1, "io 0");
  CHECK(kiln_engine_io_dtype(engine, 1) == KILN_DTYPE_FLOAT32 && kiln_engine_io_is_input(engine, 1) == 0, "io 1");
  CHECK(kiln_engine_io_rank(engine, 1) == 1 && kiln_engine_io_shape(engine, 1)[0] == N, "io 1 shape");
  CHECK(kiln_engine_io_name(engine, 2) == NULL && kiln_engine_io_rank(engine, -1) == -1, "index out of range");
  if (dynamic) profiles ? check_profiles(engine) : check_profile(engine);

  s = kiln_context_create(engine, &ctx);
  if (s == KILN_ERROR_NO_DEVICE) {
    CHECK(ctx == NULL && strlen(kiln_status_message(s)) > 10, "no-device message: %s", kiln_status_message(s));
    printf("kiln_context_create: %s\n", kiln_status_message(s));
    kiln_engine_destroy(engine);
    if (failures) return 1;
    printf("skipped: no GPU\n");
    return 77; /* ctest SKIP_RETURN_CODE: the GPU half did not run */
  }
  if (expect_arch) {
    CHECK(s == KILN_ERROR_ARCH && ctx == NULL, "expected KILN_ERROR_ARCH, got %d: %s", (int)s, kiln_status_message(s));
    printf("expected error: %s\n", kiln_status_message(s));
    kiln_context_destroy(ctx);
    kiln_engine_destroy(engine);
  } else {
    CHECK(s == KILN_OK, "kiln_context_create: %s", kiln_status_message(s));
    if (s != KILN_OK) return 1;
    if (dynamic) {
      run_dynamic(ctx, profiles);
      kiln_engine_destroy(engine);
    } else {
      run_on_gpu(engine, ctx);
    }
  }
  if (failures) return fprintf(stderr, "%d check(s) failed\n", failures), 1;
  printf("ok\n");
  return 0;
}
