// The fused attention kernel (codegen/kernels/Attention.h) on a GPU, against a double-precision
// CPU reference, and timed. Each case gives Q, K, V as stored (with the permutations that read
// them as [.., Sq, D], Kᵀ [.., D, Sk] and [.., Sk, Dv]), an optional mask and the result's
// permutation: BERT's [B, S, H, D] heads with a padding mask, ViT's sequence-first
// [S, B·H, D] heads, broadcast batches, head sizes 40 and 128, Dv ≠ D, one key, GPT-2's causal
// mask (as a tensor, and the kernel's own with and without a diagonal offset), bf16, and Q/K/V as strided views of one packed projection. Inputs are random in
// ±[0.25, 1] (never zero), the output is poisoned (NaN) first.
// Per element |kiln − ref| ≤ tol · (Σ_j p_j·|v_j| + |ref|), tol = 2e-3 (fp16) or 1.6e-2 (bf16):
// P and Y are rounded to the half type once each. Cases of more than 16 batches check a sample of
// them (the first two, the last, every 61st).
// Exit 0 when every case agrees, 1 when one does not (or a kernel does not compile), 77 without a
// GPU (skipped, after compiling every case's kernel).
//   kiln-attention-check [--iterations N]
#include "codegen/kernels/Attention.h"
#include "codegen/kernels/KernelUtil.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "runtime/format/EngineFormat.h"
#include "tests/gpu/OneLaunchEngine.h"
#include "tuner/EngineRunner.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace kiln;
using Shape = std::vector<int64_t>;

namespace {

struct Case {
  std::string name;
  Shape q, permQ, k, permK, v, permV, permY;
  bool bf16 = false;
  Shape mask;        // empty: none
  int maskKind = 0;  // 0 random (fp32), 1 padding (-10000 on the last quarter of keys, fp16), 2 causal (-65504, fp16)
  float scale = 0.125f;
  // Q, K and V as strided views (these strides; offsets 0, 1 and 2 times viewOffset) of inputs
  // of shape `root` (a packed projection), where root is set.
  Shape root, viewStrides;
  int64_t viewOffset = 0;
  int64_t causal = -1;  // >= 0: the kernel's own causal mask, keys j <= i + causal
};

Case causal(Case c, int64_t diagonal) {
  c.causal = diagonal;
  return c;
}

Shape permuted(const Shape &s, const Shape &p) {
  if (p.empty()) return s;
  Shape r(p.size());
  for (size_t k = 0; k < p.size(); ++k) r[k] = s[size_t(p[k])];
  return r;
}

// Memory stride of each logical dim of a tensor stored with shape `stored` read through `perm`.
Shape logicalStrides(const Shape &stored, const Shape &perm) {
  return permuted(codegen::kernels::contiguousStrides(stored), perm);
}

std::vector<uint8_t> engineFor(const codegen::KernelLaunch &k, const codegen::CompileOutput &bin, const Case &c,
                               const Shape &yShape) {
  const int t = c.bf16 ? 16 : 10;
  std::vector<rt::IoTensor> io = {{"q", t, c.root.empty() ? c.q : c.root, true},
                                  {"k", t, c.root.empty() ? c.k : c.root, true},
                                  {"v", t, c.root.empty() ? c.v : c.root, true}};
  if (!c.mask.empty()) io.push_back({"bias", c.maskKind == 0 ? 1 : 10, c.mask, true});
  io.push_back({"y", t, yShape, false});
  return testing::oneLaunchEngine(k, bin, io, "attention");
}

void storeHalf(uint8_t *p, double v) {  // fp16, round to nearest even, normal or zero range only
  float f = float(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t h = 0;
  if (f != 0.f) {
    int e = int((u >> 23) & 0xff) - 127 + 15;
    uint32_t man = (u & 0x7fffff) | 0x800000, r = man >> 13, rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1))) ++r;
    if (r == 0x800) r >>= 1, ++e;
    h = uint16_t(((u >> 16) & 0x8000) | (uint32_t(e) << 10) | (r & 0x3ff));
  }
  std::memcpy(p, &h, 2);
}

}  // namespace

int main(int argc, char **argv) {
  int iterations = 50;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[++i]);
  const Shape bhsd = {0, 2, 1, 3}, bhds = {0, 2, 3, 1}, seqFirst = {1, 0, 2}, seqFirstT = {1, 2, 0};
  std::vector<Case> cases = {
      {"bert_heads_padding",
       {2, 77, 3, 64},
       bhsd,
       {2, 77, 3, 64},
       bhds,
       {2, 77, 3, 64},
       bhsd,
       bhsd,
       false,
       {2, 1, 1, 77},
       1},
      {"vit_seq_first", {197, 8, 64}, seqFirst, {197, 8, 64}, seqFirstT, {197, 8, 64}, seqFirst, seqFirst},
      {"bcast_d40_mask", {2, 3, 17, 40}, {}, {3, 24, 40}, {0, 2, 1}, {3, 24, 40}, {}, {}, false, {2, 3, 17, 24}, 0},
      {"bf16_d128", {3, 130, 128}, {}, {3, 65, 128}, {0, 2, 1}, {3, 65, 128}, {}, {}, true, {}, 0, 0.0883883476f},
      {"dv64_one_key", {4, 1, 32}, {}, {4, 1, 32}, {0, 2, 1}, {4, 1, 64}, {}, {}},
      // ViT's packed [S, B, 3·H·D] projection read in place as [B, H, S, D] at offsets 0, H·D, 2·H·D.
      {"packed_views",
       {4, 2, 197, 64},
       {},
       {4, 2, 197, 64},
       {0, 1, 3, 2},
       {4, 2, 197, 64},
       {},
       {},
       false,
       {},
       0,
       0.125f,
       {197, 4, 384},
       {384, 64, 4 * 384, 1},
       128},
      {"causal_200",
       {1, 200, 2, 64},
       bhsd,
       {1, 200, 2, 64},
       bhds,
       {1, 200, 2, 64},
       bhsd,
       bhsd,
       false,
       {1, 1, 200, 200},
       2},
      // The kernel's causal mask: square; and 70 queries over 150 keys (diagonal 80: cached keys)
      // with a padding mask too, bf16.
      causal({"causal_kernel_200", {1, 200, 2, 64}, bhsd, {1, 200, 2, 64}, bhds, {1, 200, 2, 64}, bhsd, bhsd}, 0),
      causal({"causal_offset_padding",
              {2, 70, 3, 64},
              bhsd,
              {2, 150, 3, 64},
              bhds,
              {2, 150, 3, 64},
              bhsd,
              bhsd,
              true,
              {2, 1, 1, 150},
              1},
             80),
      // Timing at the zoo's sizes: ViT-B/16 b32, BERT-base 32x128, GPT-2 small 1x512.
      {"vit_b16_b32", {197, 384, 64}, seqFirst, {197, 384, 64}, seqFirstT, {197, 384, 64}, seqFirst, seqFirst},
      {"bert_base_b32",
       {32, 128, 12, 64},
       bhsd,
       {32, 128, 12, 64},
       bhds,
       {32, 128, 12, 64},
       bhsd,
       bhsd,
       false,
       {32, 1, 1, 128},
       1},
      {"gpt2_1x512",
       {1, 512, 12, 64},
       bhsd,
       {1, 512, 12, 64},
       bhds,
       {1, 512, 12, 64},
       bhsd,
       bhsd,
       false,
       {1, 1, 512, 512},
       2},
      causal({"gpt2_1x512_causal", {1, 512, 12, 64}, bhsd, {1, 512, 12, 64}, bhds, {1, 512, 12, 64}, bhsd, bhsd}, 0),
  };
  bool allOk = true, gpu = true;
  for (const Case &c : cases)
    for (int rows : {64, 128})
      for (int split : {1, 2}) {
        codegen::AttentionSpec s =
            codegen::attentionSpec({c.q, c.viewStrides, c.permQ, 0}, {c.k, c.viewStrides, c.permK, c.viewOffset},
                                   {c.v, c.viewStrides, c.permV, 2 * c.viewOffset}, c.permY);
        s.scale = c.scale;
        s.type = c.bf16 ? codegen::ElemType::BF16 : codegen::ElemType::F16;
        s.hasMask = !c.mask.empty();
        s.maskShape = c.mask;
        s.maskType = c.maskKind == 0 ? codegen::ElemType::F32 : codegen::ElemType::F16;
        s.rowsPerBlock = rows, s.keySplit = split;
        s.causal = c.causal >= 0, s.diagonal = std::max<int64_t>(c.causal, 0);
        codegen::KernelLaunch k = codegen::emitAttention(s);
        codegen::CompileOutput bin = codegen::compileKernel(k.source, k.entry, "sm_90");
        if (!bin.ok()) {
          std::fprintf(stderr, "%s\n", bin.error.c_str());
          return 1;
        }
        Shape logical = s.batchShape;
        logical.push_back(s.Sq);
        logical.push_back(s.Dv);
        Shape yShape = permuted(logical, c.permY);
        std::string error;
        auto runner = tuner::EngineRunner::open(engineFor(k, bin, c, yShape), error);
        if (!runner) {  // no GPU: every case's kernel still compiles
          if (gpu) std::printf("skipped: %s\n", error.c_str());
          gpu = false;
          continue;
        }
        std::vector<tuner::HostTensor> ins = tuner::randomInputs(runner->inputs(), 11);
        if (c.maskKind != 0) {  // padding / causal masks as models build them
          tuner::HostTensor &m = ins[3];
          int64_t cols = c.mask.back(), rows = c.mask[c.mask.size() - 2];
          for (int64_t i = 0; i < tuner::numElements(c.mask); ++i) {
            int64_t col = i % cols, row = (i / cols) % rows;
            bool off = c.maskKind == 1 ? col >= cols - cols / 4 : col > row;
            storeHalf(&m.data[size_t(i) * 2], off ? (c.maskKind == 1 ? -10000.0 : -65504.0) : 0.0);
          }
        }
        std::vector<tuner::HostTensor> out;
        if (!runner->setInputs(ins, error) || !runner->run(out, error)) {
          std::fprintf(stderr, "run failed: %s\n", error.c_str());
          return 1;
        }
        // The reference, reading every operand through its own permutation.
        auto strides = [&](const Shape &shape, const Shape &perm) {
          return c.viewStrides.empty() ? logicalStrides(shape, perm) : permuted(c.viewStrides, perm);
        };
        Shape qs = strides(c.q, c.permQ), ks = strides(c.k, c.permK), vs = strides(c.v, c.permV);
        Shape ql = permuted(c.q, c.permQ), kl = permuted(c.k, c.permK), vl = permuted(c.v, c.permV);
        Shape ys(logical.size()), yStored = codegen::kernels::contiguousStrides(yShape);
        for (size_t d = 0; d < logical.size(); ++d) ys[size_t(c.permY.empty() ? d : c.permY[d])] = yStored[d];
        const size_t nb = s.batchShape.size();
        auto batchOffset = [&](const Shape &dims, const Shape &strides, const Shape &idx) {
          int64_t off = 0;
          size_t lead = nb - (dims.size() - 2);
          for (size_t d = 0; d + 2 < dims.size(); ++d)
            if (dims[d] != 1) off += idx[lead + d] * strides[d];
          return off;
        };
        Shape mstr = c.mask.empty() ? Shape{} : codegen::kernels::broadcastStrides(c.mask, [&] {
          Shape f = s.batchShape;
          f.push_back(s.Sq), f.push_back(s.Sk);
          return f;
        }());
        const double tol = c.bf16 ? 1.6e-2 : 2e-3;
        double worst = 0, num = 0, den = 0;
        int64_t bad = 0, nbatch = tuner::numElements(s.batchShape);
        for (int64_t b = 0; b < nbatch; ++b) {
          if (nbatch > 16 && b > 1 && b != nbatch - 1 && b % 61) continue;  // large cases: a sample of batches
          Shape idx(nb);
          for (int64_t r = b, d = int64_t(nb) - 1; d >= 0; --d)
            idx[size_t(d)] = r % s.batchShape[size_t(d)], r /= s.batchShape[size_t(d)];
          int64_t qo = batchOffset(ql, qs, idx), ko = c.viewOffset + batchOffset(kl, ks, idx),
                  vo = 2 * c.viewOffset + batchOffset(vl, vs, idx), yo = 0, mo = 0;
          for (size_t d = 0; d < nb; ++d) yo += idx[d] * ys[d], mo += c.mask.empty() ? 0 : idx[d] * mstr[d];
          for (int64_t i = 0; i < s.Sq; ++i) {
            std::vector<double> p(size_t(s.Sk));
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < s.Sk; ++j) {
              double acc = 0;
              for (int64_t d = 0; d < s.D; ++d)
                acc += tuner::elementAsDouble(ins[0], qo + i * qs[qs.size() - 2] + d * qs.back()) *
                       tuner::elementAsDouble(ins[1], ko + d * ks[ks.size() - 2] + j * ks.back());
              acc *= double(c.scale);
              if (!c.mask.empty()) acc += tuner::elementAsDouble(ins[3], mo + i * mstr[nb] + j * mstr[nb + 1]);
              if (c.causal >= 0 && j > i + c.causal) acc = -INFINITY;
              p[size_t(j)] = acc, mx = std::max(mx, acc);
            }
            for (double &x : p) sum += (x = std::exp(x - mx));
            for (int64_t e = 0; e < s.Dv; ++e) {
              double want = 0, mag = 0;
              for (int64_t j = 0; j < s.Sk; ++j) {
                double vv = tuner::elementAsDouble(ins[2], vo + j * vs[vs.size() - 2] + e * vs.back());
                want += p[size_t(j)] / sum * vv, mag += p[size_t(j)] / sum * std::fabs(vv);
              }
              double got = tuner::elementAsDouble(out[0], yo + i * ys[nb] + e * ys[nb + 1]);
              double err = std::fabs(got - want) / (mag + std::fabs(want));
              if (!(err <= tol)) ++bad;
              worst = std::max(worst, std::isnan(got) ? INFINITY : err);
              num += (got - want) * (got - want), den += want * want;
            }
          }
        }
        tuner::Timing timing;
        if (!runner->time(10, iterations, timing, error)) {
          std::fprintf(stderr, "timing failed: %s\n", error.c_str());
          return 1;
        }
        // FLOPs of the two products; bytes: Q, K, V read and Y written once (the floor).
        double flops = 2.0 * double(nbatch) * double(s.Sq) * double(s.Sk) * double(s.D + s.Dv);
        double bytes = 2.0 * double(nbatch) * double(s.Sq * s.D + s.Sk * (s.D + s.Dv) + s.Sq * s.Dv);
        double sec = timing.median() * 1e-3;
        std::printf("%-20s %3d rows x%d [%lld] %lldx%lld D %lld Dv %lld %s%s%s  %s  %lld bad, worst %.2e, rel L2 %.2e  "
                    " median %.4f ms (min %.4f p90 %.4f, %d runs)  %.1f TFLOP/s  %.0f GB/s\n",
                    c.name.c_str(), rows, split, (long long)nbatch, (long long)s.Sq, (long long)s.Sk, (long long)s.D,
                    (long long)s.Dv, c.bf16 ? "bf16" : "fp16", c.mask.empty() ? "" : " masked",
                    c.causal >= 0 ? " causal" : "", bad ? "MISMATCH" : "ok", (long long)bad, worst,
                    std::sqrt(num / std::max(den, 1e-300)), timing.median(), timing.min(), timing.p90(), iterations,
                    flops / sec / 1e12, bytes / sec / 1e9);
        allOk = allOk && bad == 0;
      }
  return !allOk ? 1 : gpu ? 0 : 77;
}
