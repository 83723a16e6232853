/* Run a kiln engine from C: load, bind, enqueue, synchronize.
 * With kiln installed in P (cmake --install build --prefix P):
 *   cc example.c $(PKG_CONFIG_PATH=P/lib/pkgconfig pkg-config --cflags --libs kiln) -Wl,-rpath,P/lib \
 *      -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart -o example
 *   ./example model.kiln
 * Inputs are filled with 1.0 (float32 engines); the first values of each output are printed. */
#include <kiln/kiln.h>

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define KILN_CHECK(call)                                                                                               \
  do {                                                                                                                 \
    kiln_status s_ = (call);                                                                                           \
    if (s_ != KILN_OK) {                                                                                               \
      fprintf(stderr, "%s failed: %s\n", #call, kiln_status_message(s_));                                              \
      return 1;                                                                                                        \
    }                                                                                                                  \
  } while (0)

int main(int argc, char** argv) {
  kiln_engine* engine = NULL;
  kiln_context* ctx = NULL;
  cudaStream_t stream;
  void* device[64] = {0};
  size_t sizes[64] = {0};
  int32_t i, n;
  if (argc != 2) return fprintf(stderr, "usage: %s ENGINE.kiln\n", argv[0]), 2;

  KILN_CHECK(kiln_engine_load(argv[1], &engine));
  KILN_CHECK(kiln_context_create(engine, &ctx)); /* loads kernels, uploads weights */
  cudaStreamCreate(&stream);

  n = kiln_engine_num_io(engine);
  for (i = 0; i < n && i < 64; ++i) {
    size_t count = 1, bytes, k;
    const int64_t* shape = kiln_engine_io_shape(engine, i);
    for (k = 0; k < (size_t)kiln_engine_io_rank(engine, i); ++k) count *= (size_t)shape[k];
    sizes[i] = bytes = count * sizeof(float);
    if (kiln_engine_io_dtype(engine, i) != KILN_DTYPE_FLOAT32)
      return fprintf(stderr, "example handles float32 only\n"), 1;
    if (cudaMalloc(&device[i], bytes) != cudaSuccess) return fprintf(stderr, "cudaMalloc failed\n"), 1;
    if (kiln_engine_io_is_input(engine, i)) {
      float* host = malloc(bytes);
      for (k = 0; k < count; ++k) host[k] = 1.0f;
      cudaMemcpy(device[i], host, bytes, cudaMemcpyHostToDevice);
      free(host);
    }
    KILN_CHECK(kiln_context_set_tensor_address(ctx, kiln_engine_io_name(engine, i), device[i]));
  }

  KILN_CHECK(kiln_context_enqueue(ctx, stream)); /* asynchronous */
  if (cudaStreamSynchronize(stream) != cudaSuccess) return fprintf(stderr, "execution failed\n"), 1;

  for (i = 0; i < n && i < 64; ++i) {
    float first[4] = {0};
    if (kiln_engine_io_is_input(engine, i)) continue;
    cudaMemcpy(first, device[i], sizes[i] < sizeof first ? sizes[i] : sizeof first, cudaMemcpyDeviceToHost);
    printf("%s: %g %g %g %g ...\n", kiln_engine_io_name(engine, i), first[0], first[1], first[2], first[3]);
  }

  kiln_context_destroy(ctx);
  kiln_engine_destroy(engine);
  for (i = 0; i < n && i < 64; ++i) cudaFree(device[i]);
  cudaStreamDestroy(stream);
  return 0;
}
