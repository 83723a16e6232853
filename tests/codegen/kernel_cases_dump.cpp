// Prints every case of KernelCases.h with its emitted launches as JSON lines, for the GPU check
// (gpu_check.py), which runs them against onnxruntime on a GPU host:
//   {"name":..,"op":..,"inputs":[[..]],"attrs":{..},"launches":[{"entry","source","grid","block","shared","params"}]}
#include "tests/codegen/KernelCases.h"

#include <cstdio>
#include <string>

namespace {

std::string esc(const std::string &s) {
  std::string o = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c == '\n')
      o += "\\n";
    else if (c == '\t')
      o += "\\t";
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else
      o += ch;
  }
  return o + "\"";
}

template <class V> std::string list(const V &v) {
  std::string o = "[";
  for (size_t k = 0; k < v.size(); ++k) o += (k ? "," : "") + std::to_string(v[k]);
  return o + "]";
}

}  // namespace

// --bench: a few large launches (zoo-sized) with their buffer sizes (floats), flops and bytes.
int bench() {
  using namespace kiln::codegen;
  struct B {
    std::string name;
    KernelLaunch k;
    std::vector<int64_t> buffers;
    double flops, bytes;
  };
  std::vector<B> bs;
  auto mm = [&](std::string name, int64_t b, int64_t m, int64_t n, int64_t k, std::string tile) {
    MatMulSpec s;
    s.M = m;
    s.N = n;
    s.K = k;
    if (b > 1) s.batchShape = {b};
    s.tile = tile;
    bs.push_back({name + "_" + (tile.empty() ? "auto" : tile),
                  emitMatMul(s),
                  {b * m * k, b * k * n, b * m * n},
                  2.0 * b * m * n * k,
                  4.0 * b * (m * k + k * n + m * n)});
  };
  for (std::string t : {"128x128", "64x64", ""}) mm("mm_4096", 1, 4096, 4096, 4096, t);
  mm("mm_bert_ffn", 1, 4096, 3072, 768, "");
  mm("mm_attn_qk", 384, 128, 128, 64, "");
  mm("mm_gpt2_b1", 1, 512, 2304, 768, "");
  {
    RowReductionSpec s;
    s.op = RowOp::Softmax;
    s.outer = 32 * 12 * 128;
    s.cols = 128;
    int64_t n = s.outer * s.cols;
    bs.push_back({"softmax_bert", emitRowReduction(s), {n, n}, 0, 8.0 * n});
    s.op = RowOp::LayerNorm;
    s.outer = 32 * 128;
    s.cols = 768;
    n = s.outer * s.cols;
    bs.push_back({"layernorm_bert", emitRowReduction(s), {n, 768, 768, n}, 0, 8.0 * n});
    s.op = RowOp::Softmax;
    s.outer = 512;
    s.cols = 50257;
    n = s.outer * s.cols;
    bs.push_back({"softmax_vocab", emitRowReduction(s), {n, n}, 0, 8.0 * n});
  }
  {
    int64_t n = int64_t(32) << 20;
    bs.push_back({"add_32M_vec4", emitElementwiseOp("Add", {{n}, {n}}), {n, n, n}, 0, 12.0 * n});
    bs.push_back({"add_bias_bcast", emitElementwiseOp("Add", {{n / 768, 768}, {768}}), {n, 768, n}, 0, 8.0 * n});
    bs.push_back({"gelu_32M", emitElementwiseOp("Gelu", {{n}}), {n, n}, 0, 8.0 * n});
  }
  {
    Conv2dSpec s;
    s.N = 32;
    s.C = 64;
    s.H = 56;
    s.W = 56;
    s.M = 64;
    s.KH = 3;
    s.KW = 3;
    s.padTop = s.padLeft = 1;
    s.padBottom = s.padRight = 1;
    s.epilogue = convBiasEpilogue(true, 64, false, ElemType::F32, true);
    bs.push_back({"conv_r50_3x3_64",
                  emitConv2d(s),
                  {32 * 64 * 56 * 56, 64 * 64 * 9, 64, 32 * 64 * 56 * 56},
                  2.0 * 32 * 64 * 56 * 56 * 64 * 9,
                  0});
    Conv2dSpec d = s;
    d.C = d.M = d.group = 144;
    d.epilogue = convBiasEpilogue(true, 144, false, ElemType::F32, true);
    bs.push_back({"conv_mbv2_dw_144",
                  emitConv2d(d),
                  {32 * 144 * 56 * 56, 144 * 9, 144, 32 * 144 * 56 * 56},
                  2.0 * 32 * 144 * 56 * 56 * 9,
                  8.0 * 32 * 144 * 56 * 56});
  }
  {
    int64_t n = 32 * 12 * 128 * 64;
    bs.push_back({"transpose_0213", emitCopy(transposeCopy({32, 128, 12, 64}, {0, 2, 1, 3})), {n, n}, 0, 8.0 * n});
  }
  for (const B &b : bs) {
    std::string line =
        "{\"name\":" + esc(b.name) + ",\"buffers\":" + list(b.buffers) + ",\"flops\":" + std::to_string(b.flops) +
        ",\"bytes\":" + std::to_string(b.bytes) + ",\"launches\":[{\"entry\":" + esc(b.k.entry) +
        ",\"source\":" + esc(b.k.source) + ",\"grid\":" + list(b.k.grid) + ",\"block\":" + list(b.k.block) +
        ",\"shared\":" + std::to_string(b.k.sharedBytes) + ",\"params\":" + std::to_string(b.k.numParams) + "}]}";
    std::puts(line.c_str());
  }
  return 0;
}

int main(int argc, char **argv) {
  std::string only = argc > 1 ? argv[1] : "";
  if (only == "--bench") return bench();
  for (const auto &c : kiln::codegen::cases::kernelCases()) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    std::string line = "{\"name\":" + esc(c.name) + ",\"op\":" + esc(c.op) + ",\"inputs\":[";
    for (size_t k = 0; k < c.inputs.size(); ++k) line += (k ? "," : "") + list(c.inputs[k]);
    line += "],\"attrs\":{";
    bool first = true;
    for (const auto &kv : c.attrs) {
      line += (first ? "" : ",") + esc(kv.first) + ":" + esc(kv.second);
      first = false;
    }
    line += "},\"launches\":[";
    try {
      auto ks = kiln::codegen::cases::emitKernelCase(c);
      for (size_t k = 0; k < ks.size(); ++k) {
        const auto &l = ks[k];
        line += (k ? "," : "") + std::string("{\"entry\":") + esc(l.entry) + ",\"source\":" + esc(l.source) +
                ",\"grid\":" + list(l.grid) + ",\"block\":" + list(l.block) +
                ",\"shared\":" + std::to_string(l.sharedBytes) + ",\"params\":" + std::to_string(l.numParams) + "}";
      }
      line += "]}";
    } catch (const std::exception &e) {
      line += "],\"error\":" + esc(e.what()) + "}";
    }
    std::puts(line.c_str());
  }
  return 0;
}
