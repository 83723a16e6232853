// Can cuBLASLt read attention heads that no single batch stride walks? BERT's heads are
// batch-first, [B, S, H, D]: head (b, h) starts at b·S·H·D + h·D, so B and H have strides S·H·D
// and D and strided batching cannot take them (kiln copies them to [B, H, S, D] first). This
// probe times BERT-base's two attention products (B 32, S 128, H 12, D 64) in fp32 and TF32:
//   strided  — heads already contiguous [B, H, S, D] (what kiln runs after its copies);
//   pointers — cuBLASLt's pointer-array batch mode reading [B, S, H, D] in place and writing the
//              P·V output straight into [B, S, H, D];
// and checks the pointer results against the strided ones (same inputs).
// Build: nvcc -O2 -arch=sm_90 bench/lt_pointer_array_probe.cu -lcublasLt -o lt_probe
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("%s:%d %s = %d\n", __FILE__, __LINE__, #x, int(e_)); std::exit(1); } } while (0)

constexpr int B = 32, S = 128, H = 12, D = 64, BH = B * H;

struct Gemm {  // column-major D(m×n) = op(A)·op(B), all four layouts share one batch mode
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t l[4]{};
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
};

Gemm make(cublasLtHandle_t h, bool tf32, bool transA, int m, int n, int k, int64_t lda, int64_t ldb, int64_t ldd,
          bool pointers, int64_t sa, int64_t sb, int64_t sd, size_t ws) {
  Gemm g;
  CK(cublasLtMatmulDescCreate(&g.desc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = transA ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const uint64_t rows[4] = {uint64_t(transA ? k : m), uint64_t(k), uint64_t(m), uint64_t(m)};
  const uint64_t cols[4] = {uint64_t(transA ? m : k), uint64_t(n), uint64_t(n), uint64_t(n)};
  const int64_t lds[4] = {lda, ldb, ldd, ldd}, strides[4] = {sa, sb, sd, sd};
  for (int i = 0; i < 4; ++i) {
    CK(cublasLtMatrixLayoutCreate(&g.l[i], CUDA_R_32F, rows[i], cols[i], lds[i]));
    int32_t count = BH;
    CK(cublasLtMatrixLayoutSetAttribute(g.l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    if (pointers) {
      uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
      CK(cublasLtMatrixLayoutSetAttribute(g.l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode));
    } else {
      CK(cublasLtMatrixLayoutSetAttribute(g.l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof strides[i]));
    }
  }
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t r[8];
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, g.desc, g.l[0], g.l[1], g.l[2], g.l[3], pref, 8, r, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  std::printf("  heuristic: status %d, %d algorithms\n", int(st), found);
  if (st == 0 && found > 0) g.algo = r[0].algo, g.ok = true;
  return g;
}

float timeIt(cudaStream_t s, int iters, const std::function<void()>& f) {
  for (int i = 0; i < 5; ++i) f();
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(a, s);
    f();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double relL2(const std::vector<float>& x, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - ref[i]) * double(x[i] - ref[i]), den += double(ref[i]) * ref[i];
  return std::sqrt(num / den);
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, cuBLASLt %zu\n", prop.name, cublasLtGetVersion());
  const size_t n = size_t(B) * S * H * D;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // Q, K, V in [B, S, H, D]; P (softmaxed scores, any values) in [B, H, S, S].
  std::vector<float> q(n), k(n), v(n), p(size_t(BH) * S * S);
  for (auto* t : {&q, &k, &v, &p})
    for (float& x : *t) x = u(rng);
  auto headsFirst = [&](const std::vector<float>& x) {  // [B, S, H, D] → [B, H, S, D]
    std::vector<float> y(n);
    for (int b = 0; b < B; ++b)
      for (int s = 0; s < S; ++s)
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d) y[(((size_t(b) * H + h) * S + s) * D) + d] = x[((size_t(b) * S + s) * H + h) * D + d];
    return y;
  };
  float *dq, *dk, *dv, *dqc, *dkc, *dvc, *dp, *scores, *scores2, *out, *out2;
  for (float** ptr : {&dq, &dk, &dv, &dqc, &dkc, &dvc, &out, &out2}) CK(cudaMalloc(ptr, n * 4));
  for (float** ptr : {&dp, &scores, &scores2}) CK(cudaMalloc(ptr, p.size() * 4));
  cudaMemcpy(dq, q.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, k.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, v.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dqc, headsFirst(q).data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dkc, headsFirst(k).data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dvc, headsFirst(v).data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dp, p.data(), p.size() * 4, cudaMemcpyHostToDevice);
  // Pointer arrays: head (b, h) of [B, S, H, D] at b·S·H·D + h·D; scores and P at (b·H + h)·S·S.
  std::vector<const void*> aq(BH), ak(BH), av(BH), ap(BH);
  std::vector<void*> as(BH), ao(BH);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      size_t head = size_t(b) * S * H * D + size_t(h) * D, mat = (size_t(b) * H + h) * S * S;
      int i = b * H + h;
      aq[i] = dq + head, ak[i] = dk + head, av[i] = dv + head, ao[i] = out2 + head;
      ap[i] = dp + mat, as[i] = scores2 + mat;
    }
  void** dev[6];
  std::vector<const void*>* host[6] = {&aq, &ak, &av, &ap, reinterpret_cast<std::vector<const void*>*>(&as),
                                       reinterpret_cast<std::vector<const void*>*>(&ao)};
  for (int i = 0; i < 6; ++i) {
    CK(cudaMalloc(&dev[i], BH * sizeof(void*)));
    cudaMemcpy(dev[i], host[i]->data(), BH * sizeof(void*), cudaMemcpyHostToDevice);
  }
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  const size_t wsBytes = 32 << 20;
  void* ws;
  CK(cudaMalloc(&ws, wsBytes));
  cudaStream_t st;
  cudaStreamCreate(&st);
  const float one = 1.f, zero = 0.f;
  for (bool tf32 : {false, true}) {
    std::printf("%s\n", tf32 ? "TF32" : "fp32");
    // Q·Kᵀ: column-major scoresᵀ (S×S) = Kᵀ-as-(D×S, T) · Q (D×S, N), k = D.
    std::printf(" QK strided\n");
    Gemm qs = make(h, tf32, true, S, S, D, D, D, S, false, int64_t(S) * D, int64_t(S) * D, int64_t(S) * S, wsBytes);
    std::printf(" QK pointers\n");
    Gemm qp = make(h, tf32, true, S, S, D, H * D, H * D, S, true, 0, 0, 0, wsBytes);
    // P·V: column-major outᵀ (D×S) = Vᵀ (D×S, N) · Pᵀ (S×S, N), k = S.
    std::printf(" PV strided\n");
    Gemm ps = make(h, tf32, false, D, S, S, D, S, D, false, int64_t(S) * D, int64_t(S) * S, int64_t(S) * D, wsBytes);
    std::printf(" PV pointers\n");
    Gemm pp = make(h, tf32, false, D, S, S, H * D, S, H * D, true, 0, 0, 0, wsBytes);
    auto run = [&](Gemm& g, const void* a, const void* b, void* d) {
      CK(cublasLtMatmul(h, g.desc, &one, a, g.l[0], b, g.l[1], &zero, d, g.l[2], d, g.l[3], &g.algo, ws, wsBytes, st));
    };
    if (qs.ok) std::printf(" QK strided  %.4f ms\n", timeIt(st, 200, [&] { run(qs, dkc, dqc, scores); }));
    if (qp.ok) std::printf(" QK pointers %.4f ms\n", timeIt(st, 200, [&] { run(qp, dev[1], dev[0], dev[4]); }));
    if (ps.ok) std::printf(" PV strided  %.4f ms\n", timeIt(st, 200, [&] { run(ps, dvc, dp, out); }));
    if (pp.ok) std::printf(" PV pointers %.4f ms\n", timeIt(st, 200, [&] { run(pp, dev[2], dev[3], dev[5]); }));
    cudaStreamSynchronize(st);
    if (qs.ok && qp.ok) {
      std::vector<float> x(p.size()), y(p.size());
      cudaMemcpy(x.data(), scores, x.size() * 4, cudaMemcpyDeviceToHost);
      cudaMemcpy(y.data(), scores2, y.size() * 4, cudaMemcpyDeviceToHost);
      std::printf(" QK pointers vs strided: rel L2 %.3e\n", relL2(y, x));
    }
    if (ps.ok && pp.ok) {  // strided wrote [B, H, S, D]; pointers wrote [B, S, H, D]
      std::vector<float> x(n), y(n);
      cudaMemcpy(x.data(), out, n * 4, cudaMemcpyDeviceToHost);
      cudaMemcpy(y.data(), out2, n * 4, cudaMemcpyDeviceToHost);
      std::printf(" PV pointers vs strided: rel L2 %.3e\n", relL2(headsFirst(y), x));
    }
  }
  std::printf("done\n");
}
