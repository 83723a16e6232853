// com.microsoft DynamicQuantizeLSTM (onnxruntime's dynamically quantized LSTM), computed as
// onnxruntime's CPU kernel does (contrib_ops/cpu/quantization/dynamic_quantize_lstm.cc on the
// LSTM of providers/cpu/rnn), in float32:
//
//   DynamicQuantizeLSTM(X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?, W_scale,
//                       W_zero_point, R_scale, R_zero_point) -> Y?, Y_h?, Y_c?
//
// W [D, I, 4H] and R [D, H, 4H] are int8 or uint8, already transposed (columns are the gates
// i, o, f, c); their scales and zero points are per direction ([D]) or per column ([D, 4H]).
// X·W: the whole input is quantized once to uint8 with its own scale and zero point (range
// widened to include 0, scale (max - min) / 255, zero point rounded half to even), the integer
// products are exact, and each column is scaled by sx·sw[n]. Every step quantizes h(t-1) the same
// way (all batch rows together: onnxruntime on one thread; with several it quantizes each thread's
// rows on its own) and adds its scaled product. Then, as the float LSTM: peepholes, bias Wb + Rb,
// clip, activations, c = c·f + i·g, h = o·h(c). X is [T, B, I] (no layout attribute).
#include "compiler/ops/ElementwiseUtil.h"
#include "compiler/ops/Recurrent.h"

#include <algorithm>
#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

const std::string kOp = "DynamicQuantizeLSTM";

struct QuantDims {
  int64_t T = 0, B = 0, I = 0, D = 1, H = 0;
};

std::vector<TensorType> dqlstmShape(const ShapeContext &ctx, RnnConfig *cfgOut, QuantDims *dimsOut) {
  checkInputs(kOp, ctx, 3, 12);
  for (size_t k : {8, 9, 10, 11})
    check(ctx.present(k), kOp + ": required input #" + std::to_string(k) + " (" +
                              (k == 8    ? "W_scale"
                               : k == 9  ? "W_zero_point"
                               : k == 10 ? "R_scale"
                                         : "R_zero_point") +
                              ") is missing");
  check(!ctx.attrs.has("layout"), kOp + ": has no layout attribute");
  RnnConfig cfg = rnnConfig(kOp, RnnCell::Lstm, ctx.attrs);
  const TensorType &x = ctx.inputs[0], &w = ctx.inputs[1], &r = ctx.inputs[2];
  check(x.dtype == DType::F32, kOp + ": X must be float32, got " + dtypeName(x.dtype));
  check(x.shape.size() == 3, kOp + ": X must have rank 3, got " + shapeString(x.shape));
  QuantDims s;
  s.T = x.shape[0], s.B = x.shape[1], s.I = x.shape[2], s.D = cfg.numDirections;
  check(w.dtype == DType::I8 || w.dtype == DType::U8, kOp + ": W must be int8 or uint8, got " + dtypeName(w.dtype));
  check(r.dtype == DType::I8 || r.dtype == DType::U8, kOp + ": R must be int8 or uint8, got " + dtypeName(r.dtype));
  check(r.shape.size() == 3 && r.shape[1] > 0 && r.shape[2] == 4 * r.shape[1],
        kOp + ": R must have shape [num_directions, hidden_size, 4*hidden_size], got " + shapeString(r.shape));
  s.H = r.shape[1];
  check(!cfg.hidden || cfg.hidden == s.H,
        kOp + ": hidden_size " + std::to_string(cfg.hidden) + " disagrees with R of shape " + shapeString(r.shape));
  cfg.hidden = s.H;
  const int64_t G = 4 * s.H;
  auto shapeIs = [&](const TensorType &t, const Shape &want, const char *what) {
    check(t.shape == want,
          kOp + ": " + what + " must have shape " + shapeString(want) + ", got " + shapeString(t.shape));
  };
  shapeIs(r, {s.D, s.H, G}, "R");
  shapeIs(w, {s.D, s.I, G}, "W");
  if (ctx.present(3)) {
    check(ctx.inputs[3].dtype == DType::F32, kOp + ": B must be float32");
    shapeIs(ctx.inputs[3], {s.D, 8 * s.H}, "B");
  }
  const char *qn[] = {"W_scale", "W_zero_point", "R_scale", "R_zero_point"};
  for (size_t k = 0; k < 4; ++k) {
    const TensorType &t = ctx.inputs[8 + k];
    check(t.shape == Shape{s.D} || t.shape == Shape{s.D, G}, kOp + ": " + qn[k] + " must have shape " +
                                                                 shapeString({s.D}) + " or " + shapeString({s.D, G}) +
                                                                 ", got " + shapeString(t.shape));
    if (k % 2 == 0)
      check(t.dtype == DType::F32, kOp + ": " + qn[k] + " must be float32");
    else
      check(t.dtype == (k == 1 ? w.dtype : r.dtype), kOp + ": " + qn[k] + " must have its weights' dtype");
  }
  Shape state{s.D, s.B, s.H};
  if (ctx.present(4)) {
    checkKind(kOp, "sequence_lens", ctx.inputs[4].dtype, Kind::Integer);
    shapeIs(ctx.inputs[4], {s.B}, "sequence_lens");
  }
  for (size_t k : {5, 6})
    if (ctx.present(k)) {
      check(ctx.inputs[k].dtype == DType::F32, kOp + ": initial states must be float32");
      shapeIs(ctx.inputs[k], state, k == 5 ? "initial_h" : "initial_c");
    }
  if (ctx.present(7)) shapeIs(ctx.inputs[7], {s.D, 3 * s.H}, "P");
  check(ctx.numOutputs <= 3, kOp + ": the op has 3 outputs but the node declares " + std::to_string(ctx.numOutputs));
  std::vector<TensorType> out;
  for (int k = 0; k < ctx.numOutputs; ++k) out.push_back({DType::F32, k == 0 ? Shape{s.T, s.D, s.B, s.H} : state});
  if (cfgOut) *cfgOut = cfg;
  if (dimsOut) *dimsOut = s;
  return out;
}

// onnxruntime's dynamic uint8 quantization of a float buffer (GetQuantizationParameter, then
// MlasQuantizeLinear): returns the zero point; `q` gets the values.
int32_t quantizeU8(const std::vector<float> &v, float &scale, std::vector<int32_t> &q) {
  float mn = 0.f, mx = 0.f;
  for (float x : v) mn = std::min(mn, x), mx = std::max(mx, x);
  scale = mx == mn ? 1.0f : (mx - mn) / 255.0f;
  float zpf = 0.0f - mn / scale;
  zpf = std::max(0.0f, std::min(255.0f, zpf));
  int32_t zp = int32_t(std::nearbyint(zpf));  // round half to even (default rounding mode)
  q.resize(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    float y = std::nearbyint(v[k] / scale) + float(zp);
    q[k] = int32_t(std::max(0.0f, std::min(255.0f, y)));
  }
  return zp;
}

float act(const RnnActivation &a, float x) { return float(applyRnnActivation(a, double(x))); }

std::vector<Tensor> dqlstmKernel(const EvalContext &ctx) {
  RnnConfig cfg;
  QuantDims s;
  std::vector<TensorType> types = dqlstmShape(shapeContextOf(ctx), &cfg, &s);
  const int64_t H = s.H, G = 4 * H, T = s.T, B = s.B, I = s.I;
  const Tensor &x = ctx.in(0), &w = ctx.in(1), &r = ctx.in(2);
  const Tensor *bias = ctx.present(3) ? ctx.inputs[3] : nullptr, *seq = ctx.present(4) ? ctx.inputs[4] : nullptr;
  const Tensor *h0 = ctx.present(5) ? ctx.inputs[5] : nullptr, *c0 = ctx.present(6) ? ctx.inputs[6] : nullptr;
  const Tensor *p = ctx.present(7) ? ctx.inputs[7] : nullptr;
  std::vector<Tensor> out;
  for (const TensorType &t : types) out.emplace_back(t.dtype, t.shape);
  // Per-column parameter k of direction d (per-direction tensors repeat one value).
  auto param = [&](const Tensor &t, int64_t d, int64_t n) { return t.rank() == 1 ? t.get(d) : t.get(d * G + n); };
  auto clip = [&](float v) { return cfg.clip > 0 ? std::max(-float(cfg.clip), std::min(float(cfg.clip), v)) : v; };
  std::vector<float> xs(x.f.begin(), x.f.end());
  std::vector<int32_t> qx, qh;
  float sx = 1.f;
  int32_t zx = quantizeU8(xs, sx, qx);
  for (int64_t d = 0; d < s.D; ++d) {
    const auto &fa = cfg.activations[size_t(d)];
    // X·W for every step at once.
    std::vector<float> xp(size_t(T * B * G));
    for (int64_t row = 0; row < T * B; ++row)
      for (int64_t n = 0; n < G; ++n) {
        int64_t acc = 0, zw = int64_t(param(ctx.in(9), d, n));
        for (int64_t i = 0; i < I; ++i) acc += int64_t(qx[size_t(row * I + i)] - zx) * (w.i[(d * I + i) * G + n] - zw);
        xp[size_t(row * G + n)] = float(acc) * (sx * float(param(ctx.in(8), d, n)));
      }
    std::vector<float> fused(size_t(G), 0.f);
    if (bias)
      for (int64_t n = 0; n < G; ++n) fused[n] = float(bias->f[d * 8 * H + n]) + float(bias->f[d * 8 * H + G + n]);
    std::vector<float> h(size_t(B * H)), c(size_t(B * H)), g(size_t(B * G));
    for (int64_t k = 0; k < B * H; ++k) {
      h[k] = h0 ? float(h0->f[d * B * H + k]) : 0.f;
      c[k] = c0 ? float(c0->f[d * B * H + k]) : 0.f;
    }
    std::vector<int64_t> len(size_t(B), T);
    for (int64_t b = 0; seq && b < B; ++b) {
      len[b] = seq->getInt(b);
      check(len[b] >= 0 && len[b] <= T, kOp + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len[b]) +
                                            " is outside [0, " + std::to_string(T) + "]");
    }
    const float *pp = nullptr;
    std::vector<float> pv;
    if (p) pv.assign(p->f.begin() + d * 3 * H, p->f.begin() + (d + 1) * 3 * H), pp = pv.data();
    for (int64_t step = 0; step < T; ++step) {
      float sh = 1.f;
      int32_t zh = quantizeU8(h, sh, qh);
      for (int64_t b = 0; b < B; ++b) {
        if (step >= len[b]) continue;
        int64_t t = cfg.reverse(d) ? len[b] - 1 - step : step;
        float *gb = g.data() + b * G;
        for (int64_t n = 0; n < G; ++n) {
          int64_t acc = 0, zr = int64_t(param(ctx.in(11), d, n));
          for (int64_t k = 0; k < H; ++k) acc += int64_t(qh[size_t(b * H + k)] - zh) * (r.i[(d * H + k) * G + n] - zr);
          gb[n] = xp[size_t((t * B + b) * G + n)] + float(acc) * (sh * float(param(ctx.in(10), d, n)));
        }
        float *cb = c.data() + b * H, *hb = h.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {
          float pi = gb[j], po = gb[H + j], pf = gb[2 * H + j], pc = gb[3 * H + j];
          if (pp) pi += cb[j] * pp[j];
          float i = act(fa[0], clip(pi + fused[j]));
          float f;
          if (cfg.inputForget) {
            f = 1.0f - i;
          } else {
            if (pp) pf += cb[j] * pp[2 * H + j];
            f = act(fa[0], clip(pf + fused[2 * H + j]));
          }
          float cc = act(fa[1], clip(pc + fused[3 * H + j]));
          float fc = cb[j] * f, ic = i * cc;
          cb[j] = fc + ic;
          if (pp) po += cb[j] * pp[H + j];
          float o = act(fa[0], clip(po + fused[H + j]));
          hb[j] = act(fa[2], cb[j]) * o;
          if (!out.empty()) out[0].set(((t * s.D + d) * B + b) * H + j, hb[j]);
        }
      }
    }
    for (int64_t k = 0; k < B * H; ++k) {
      if (out.size() > 1) out[1].set(d * B * H + k, h[k]);
      if (out.size() > 2) out[2].set(d * B * H + k, c[k]);
    }
  }
  return out;
}

}  // namespace

KILN_REGISTER_OP({"com.microsoft::DynamicQuantizeLSTM",
                  [](const ShapeContext &c) { return dqlstmShape(c, nullptr, nullptr); }, dqlstmKernel,
                  [](const ShapeContext &c, const std::vector<TensorType> &) {
                    QuantDims s;
                    dqlstmShape(c, nullptr, &s);
                    return 2 * s.T * s.B * s.D * 4 * s.H * (s.I + s.H);
                  }});

}  // namespace kiln::ops
