// Recurrent ops: LSTM, GRU, RNN (ONNX, opsets 7-21: the latest form, with `layout`), onnxruntime's
// com.microsoft DynamicQuantizeLSTM, and kiln's internal Recurrence (a layer whose input
// projection X·Wᵀ + bias is already computed, as kiln-split-recurrent leaves it).
//
//   LSTM  (X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?) -> Y?, Y_h?, Y_c?
//   GRU   (X, W, R, B?, sequence_lens?, initial_h?)                  -> Y?, Y_h?
//   RNN   (X, W, R, B?, sequence_lens?, initial_h?)                  -> Y?, Y_h?
//   Recurrence(XP, R, RB?, sequence_lens?, initial_h?, initial_c?, P?) -> Y?, Y_h?, Y_c?
//     cell = "LSTM" | "GRU" | "RNN" and the attributes of that op; XP [T, B, D·G·H] (layout 0) or
//     [B, T, D·G·H] (layout 1) holds X·W[d]ᵀ + the bias folded into it for every direction d; RB
//     [D, G·H] is added to h·R[d]ᵀ (GRU: Rb of every gate, Rb_h inside the reset gate's product as
//     ONNX defines; zero where the bias went into XP).
//
// Layout 0: X [T, B, I], Y [T, D, B, H], states [D, B, H]; layout 1: X [B, T, I], Y [B, T, D, H],
// states [B, D, H]. A batch row's steps beyond its sequence length leave its state unchanged and
// write zeros to Y; the reverse direction walks each row's valid steps backwards. The float ops
// compute in double; DynamicQuantizeLSTM computes what onnxruntime's CPU kernel does (below).
#include "compiler/ops/Recurrent.h"

#include "compiler/ops/ElementwiseUtil.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace kiln::ops {

const char *rnnCellName(RnnCell c) { return c == RnnCell::Lstm ? "LSTM" : c == RnnCell::Gru ? "GRU" : "RNN"; }

RnnCell rnnCellOf(const std::string &name) {
  if (name == "LSTM") return RnnCell::Lstm;
  if (name == "GRU") return RnnCell::Gru;
  if (name == "RNN") return RnnCell::Rnn;
  fail("recurrent cell must be LSTM, GRU or RNN, got '" + name + "'");
}

double applyRnnActivation(const RnnActivation &a, double x) {
  switch (a.kind) {
    case RnnActKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case RnnActKind::Tanh: return std::tanh(x);
    case RnnActKind::Relu: return x > 0 ? x : 0.0;
    case RnnActKind::HardSigmoid: return std::max(0.0, std::min(1.0, a.alpha * x + a.beta));
    case RnnActKind::Affine: return a.alpha * x + a.beta;
    case RnnActKind::LeakyRelu: return x >= 0 ? x : a.alpha * x;
    case RnnActKind::ThresholdedRelu: return x > a.alpha ? x : 0.0;
    case RnnActKind::ScaledTanh: return a.alpha * std::tanh(a.beta * x);
    case RnnActKind::Elu: return x >= 0 ? x : a.alpha * (std::exp(x) - 1.0);
    case RnnActKind::Softsign: return x / (1.0 + std::fabs(x));
    case RnnActKind::Softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return x;
}

namespace {

using namespace ew;

struct ActInfo {
  const char *name;  // lower case
  RnnActKind kind;
  int alphas, betas;   // how many of activation_alpha / activation_beta the function consumes
  double alpha, beta;  // defaults
};
const ActInfo kActs[] = {
    {"sigmoid", RnnActKind::Sigmoid, 0, 0, 0, 0},
    {"tanh", RnnActKind::Tanh, 0, 0, 0, 0},
    {"relu", RnnActKind::Relu, 0, 0, 0, 0},
    {"hardsigmoid", RnnActKind::HardSigmoid, 1, 1, 0.2, 0.5},
    {"affine", RnnActKind::Affine, 1, 1, 1.0, 0.0},
    {"leakyrelu", RnnActKind::LeakyRelu, 1, 0, 0.01, 0},
    {"thresholdedrelu", RnnActKind::ThresholdedRelu, 1, 0, 1.0, 0},
    {"scaledtanh", RnnActKind::ScaledTanh, 1, 1, 1.0, 1.0},
    {"elu", RnnActKind::Elu, 1, 0, 1.0, 0},
    {"softsign", RnnActKind::Softsign, 0, 0, 0, 0},
    {"softplus", RnnActKind::Softplus, 0, 0, 0, 0},
};

}  // namespace

RnnConfig rnnConfig(const std::string &op, RnnCell cell, const Attrs &attrs) {
  RnnConfig c;
  c.cell = cell;
  c.direction = attrs.getString("direction", "forward");
  check(c.direction == "forward" || c.direction == "reverse" || c.direction == "bidirectional",
        op + ": direction must be forward, reverse or bidirectional, got '" + c.direction + "'");
  c.numDirections = c.direction == "bidirectional" ? 2 : 1;
  c.hidden = attrs.getInt("hidden_size", 0);
  check(!attrs.has("hidden_size") || c.hidden > 0, op + ": hidden_size must be positive");
  if (attrs.has("clip")) {
    c.clip = attrs.getFloat("clip", 0);
    check(c.clip > 0, op + ": clip must be positive, got " + std::to_string(c.clip));
  }
  int64_t inputForget = attrs.getInt("input_forget", 0), lbr = attrs.getInt("linear_before_reset", 0);
  check(inputForget == 0 || inputForget == 1, op + ": input_forget must be 0 or 1");
  check(lbr == 0 || lbr == 1, op + ": linear_before_reset must be 0 or 1");
  check(cell == RnnCell::Lstm || inputForget == 0, op + ": input_forget is an LSTM attribute");
  check(cell == RnnCell::Gru || lbr == 0, op + ": linear_before_reset is a GRU attribute");
  c.inputForget = inputForget == 1, c.linearBeforeReset = lbr == 1;
  c.layout = attrs.getInt("layout", 0);
  check(c.layout == 0 || c.layout == 1, op + ": layout must be 0 or 1, got " + std::to_string(c.layout));

  std::vector<std::string> names;
  if (attrs.has("activations")) {
    const auto *v = std::get_if<std::vector<std::string>>(&attrs.values.at("activations"));
    check(v != nullptr, op + ": activations must be a list of strings");
    names = *v;
  }
  const int64_t per = rnnActivationsPerDirection(cell);
  if (names.empty()) {
    std::vector<std::string> dflt = cell == RnnCell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                    : cell == RnnCell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < c.numDirections; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  }
  check(int64_t(names.size()) == per * c.numDirections,
        op + ": activations must name " + std::to_string(per * c.numDirections) + " functions (" + std::to_string(per) +
            " per direction), got " + std::to_string(names.size()));
  std::vector<double> alphas = attrs.getFloats("activation_alpha", {}), betas = attrs.getFloats("activation_beta", {});
  size_t ai = 0, bi = 0;
  c.activations.assign(size_t(c.numDirections), {});
  for (size_t k = 0; k < names.size(); ++k) {
    std::string lower = names[k];
    for (char &ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    const ActInfo *info = nullptr;
    for (const ActInfo &a : kActs)
      if (lower == a.name) info = &a;
    check(info != nullptr, op + ": unknown activation function '" + names[k] + "'");
    RnnActivation act{info->kind, info->alpha, info->beta};
    if (info->alphas && ai < alphas.size()) act.alpha = alphas[ai++];
    if (info->betas && bi < betas.size()) act.beta = betas[bi++];
    c.activations[k / size_t(per)].push_back(act);
  }
  return c;
}

void runRecurrence(const RnnConfig &cfg, int64_t T, int64_t B, const std::vector<double> &xp, const Tensor &R,
                   const Tensor *rb, const Tensor *seqLens, const Tensor *h0, const Tensor *c0, const Tensor *p,
                   RnnOutputs out) {
  const int64_t D = cfg.numDirections, H = cfg.hidden, G = rnnGates(cfg.cell), GH = G * H;
  const bool l1 = cfg.layout == 1;
  auto stateIdx = [&](int64_t d, int64_t b, int64_t j) { return (l1 ? b * D + d : d * B + b) * H + j; };
  auto yIdx = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return (l1 ? (b * T + t) * D + d : (t * D + d) * B + b) * H + j;
  };
  auto clip = [&](double x) { return cfg.clip > 0 ? std::max(-cfg.clip, std::min(cfg.clip, x)) : x; };
  if (out.y)
    for (int64_t k = 0; k < out.y->size(); ++k) out.y->set(k, 0.0);
  std::vector<double> h(static_cast<size_t>(H)), c(h), g(static_cast<size_t>(GH)), rh(h), hnew(h);
  for (int64_t d = 0; d < D; ++d) {
    const std::vector<RnnActivation> &act = cfg.activations[size_t(d)];
    const double *r = R.f.data() + d * GH * H;
    for (int64_t b = 0; b < B; ++b) {
      int64_t len = T;
      if (seqLens) {
        len = seqLens->getInt(b);
        check(len >= 0 && len <= T, std::string(rnnCellName(cfg.cell)) + ": sequence_lens[" + std::to_string(b) +
                                        "] = " + std::to_string(len) + " is outside [0, " + std::to_string(T) + "]");
      }
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0->f[stateIdx(d, b, j)] : 0.0;
        c[j] = c0 ? c0->f[stateIdx(d, b, j)] : 0.0;
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = cfg.reverse(d) ? len - 1 - s : s;
        const double *x = xp.data() + ((t * B + b) * D + d) * GH;
        // Gate pre-activations: X·Wᵀ (+ bias) + h·Rᵀ + RB; GRU's h gate is done below.
        const int64_t direct = cfg.cell == RnnCell::Gru ? 2 * H : GH;
        for (int64_t n = 0; n < direct; ++n) {
          double acc = x[n] + (rb ? rb->f[d * GH + n] : 0.0);
          for (int64_t k = 0; k < H; ++k) acc += h[k] * r[n * H + k];
          g[n] = acc;
        }
        if (cfg.cell == RnnCell::Rnn) {
          for (int64_t j = 0; j < H; ++j) hnew[j] = applyRnnActivation(act[0], clip(g[j]));
        } else if (cfg.cell == RnnCell::Gru) {
          double *z = g.data(), *rr = g.data() + H, *hh = g.data() + 2 * H;
          for (int64_t j = 0; j < H; ++j) {
            z[j] = applyRnnActivation(act[0], clip(z[j]));
            rr[j] = applyRnnActivation(act[0], clip(rr[j]));
          }
          for (int64_t j = 0; j < H; ++j) rh[j] = cfg.linearBeforeReset ? h[j] : rr[j] * h[j];
          for (int64_t j = 0; j < H; ++j) {
            double acc = 0, bias = rb ? rb->f[d * GH + 2 * H + j] : 0.0;
            for (int64_t k = 0; k < H; ++k) acc += rh[k] * r[(2 * H + j) * H + k];
            acc = cfg.linearBeforeReset ? rr[j] * (acc + bias) : acc + bias;
            hh[j] = applyRnnActivation(act[1], clip(x[2 * H + j] + acc));
            hnew[j] = (1.0 - z[j]) * hh[j] + z[j] * h[j];
          }
        } else {  // LSTM: gates i, o, f, c; peepholes i, o, f
          const double *pi = p ? p->f.data() + d * 3 * H : nullptr;
          for (int64_t j = 0; j < H; ++j) {
            double i = applyRnnActivation(act[0], clip(g[j] + (pi ? pi[j] * c[j] : 0.0)));
            double f = cfg.inputForget
                           ? 1.0 - i
                           : applyRnnActivation(act[0], clip(g[2 * H + j] + (pi ? pi[2 * H + j] * c[j] : 0.0)));
            double cc = applyRnnActivation(act[1], clip(g[3 * H + j]));
            c[j] = f * c[j] + i * cc;
            double o = applyRnnActivation(act[0], clip(g[H + j] + (pi ? pi[H + j] * c[j] : 0.0)));
            hnew[j] = o * applyRnnActivation(act[2], c[j]);
          }
        }
        h = hnew;
        if (out.y)
          for (int64_t j = 0; j < H; ++j) out.y->set(yIdx(t, d, b, j), h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        if (out.yh) out.yh->set(stateIdx(d, b, j), h[j]);
        if (out.yc) out.yc->set(stateIdx(d, b, j), c[j]);
      }
    }
  }
}

namespace {

// Sizes of a layer, checked from its operands.
struct Dims {
  int64_t T = 0, B = 0, I = 0, D = 1, H = 0, G = 1;
};

// Directions, gates, steps and batch from a rank-3 sequence input ([T, B, .] or, layout 1, [B, T, .]).
Dims sequenceDims(const RnnConfig &cfg, RnnCell cell, const Shape &x) {
  Dims s;
  s.D = cfg.numDirections, s.G = rnnGates(cell);
  s.T = cfg.layout == 1 ? x[1] : x[0];
  s.B = cfg.layout == 1 ? x[0] : x[1];
  return s;
}

void checkRank(const std::string &op, const char *what, const TensorType &t, const Shape &want) {
  check(t.shape == want, op + ": " + what + " must have shape " + shapeString(want) + ", got " + shapeString(t.shape));
}

// The checks every recurrent op shares, from operand `seq` on: sequence_lens [B] (integer),
// initial_h / initial_c in the layout's state shape, P [D, 3H]; then the result types.
std::vector<TensorType> commonTail(const std::string &op, const ShapeContext &ctx, const RnnConfig &cfg, const Dims &s,
                                   DType dt, size_t seq, size_t maxOutputs) {
  if (ctx.present(seq)) {
    checkKind(op, "sequence_lens", ctx.inputs[seq].dtype, Kind::Integer);
    checkRank(op, "sequence_lens", ctx.inputs[seq], {s.B});
  }
  Shape state = cfg.layout == 1 ? Shape{s.B, s.D, s.H} : Shape{s.D, s.B, s.H};
  const char *names[] = {"initial_h", "initial_c"};
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.present(seq + 1 + k)) continue;
    checkSameDtype(op, "X", dt, names[k], ctx.inputs[seq + 1 + k].dtype);
    checkRank(op, names[k], ctx.inputs[seq + 1 + k], state);
  }
  if (ctx.present(seq + 3)) {
    checkSameDtype(op, "X", dt, "P", ctx.inputs[seq + 3].dtype);
    checkRank(op, "P", ctx.inputs[seq + 3], {s.D, 3 * s.H});
  }
  check(size_t(ctx.numOutputs) <= maxOutputs, op + ": the op has " + std::to_string(maxOutputs) +
                                                  " outputs but the node declares " + std::to_string(ctx.numOutputs));
  std::vector<TensorType> out;
  for (int k = 0; k < ctx.numOutputs; ++k)
    out.push_back({dt, k == 0 ? (cfg.layout == 1 ? Shape{s.B, s.T, s.D, s.H} : Shape{s.T, s.D, s.B, s.H}) : state});
  return out;
}

// The hidden size from R [D, G·H, H] (and hidden_size, if given).
void hiddenFromR(const std::string &op, const TensorType &r, RnnConfig &cfg, Dims &s) {
  check(r.shape.size() == 3, op + ": R must have rank 3 [num_directions, " + std::to_string(s.G) +
                                 "*hidden_size, hidden_size], got " + shapeString(r.shape));
  s.H = r.shape[2];
  check(!cfg.hidden || cfg.hidden == s.H,
        op + ": hidden_size " + std::to_string(cfg.hidden) + " disagrees with R of shape " + shapeString(r.shape));
  check(s.H > 0, op + ": the hidden size must be positive");
  cfg.hidden = s.H;
  checkRank(op, "R", r, {s.D, s.G * s.H, s.H});
}

// LSTM, GRU, RNN.
std::vector<TensorType> rnnShape(const std::string &op, RnnCell cell, const ShapeContext &ctx, RnnConfig *cfgOut,
                                 Dims *dimsOut) {
  const bool lstm = cell == RnnCell::Lstm;
  checkInputs(op, ctx, 3, lstm ? 8 : 6);
  RnnConfig cfg = rnnConfig(op, cell, ctx.attrs);
  const TensorType &x = ctx.inputs[0];
  checkKind(op, "X", x.dtype, Kind::Float);
  check(x.shape.size() == 3, op + ": X must have rank 3, got " + shapeString(x.shape));
  Dims s = sequenceDims(cfg, cell, x.shape);
  s.I = x.shape[2];
  checkSameDtype(op, "X", x.dtype, "W", ctx.inputs[1].dtype);
  checkSameDtype(op, "X", x.dtype, "R", ctx.inputs[2].dtype);
  hiddenFromR(op, ctx.inputs[2], cfg, s);
  checkRank(op, "W", ctx.inputs[1], {s.D, s.G * s.H, s.I});
  if (ctx.present(3)) {
    checkSameDtype(op, "X", x.dtype, "B", ctx.inputs[3].dtype);
    checkRank(op, "B", ctx.inputs[3], {s.D, 2 * s.G * s.H});
  }
  if (!lstm) check(ctx.inputs.size() <= 6, op + ": expected at most 6 inputs");
  if (cfgOut) *cfgOut = cfg;
  if (dimsOut) *dimsOut = s;
  return commonTail(op, ctx, cfg, s, x.dtype, 4, lstm ? 3 : 2);
}

const Tensor *opt(const EvalContext &ctx, size_t k) { return ctx.present(k) ? ctx.inputs[k] : nullptr; }

std::vector<Tensor> makeOutputs(const std::vector<TensorType> &types) {
  std::vector<Tensor> out;
  for (const TensorType &t : types) out.emplace_back(t.dtype, t.shape);
  return out;
}

RnnOutputs outputsOf(std::vector<Tensor> &out) {
  RnnOutputs o;
  if (out.size() > 0) o.y = &out[0];
  if (out.size() > 1) o.yh = &out[1];
  if (out.size() > 2) o.yc = &out[2];
  return o;
}

std::vector<Tensor> rnnKernel(const std::string &op, RnnCell cell, const EvalContext &ctx) {
  RnnConfig cfg;
  Dims s;
  std::vector<TensorType> types = rnnShape(op, cell, shapeContextOf(ctx), &cfg, &s);
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  const int64_t GH = s.G * s.H;
  const Tensor *bias = opt(ctx, 3);
  std::vector<double> xp(size_t(s.T * s.B * s.D * GH));
  parallelRows(s.T * s.B, s.D * GH * s.I, [&](int64_t row) {
    int64_t t = row / s.B, b = row % s.B;
    const double *xr = x.f.data() + (cfg.layout == 1 ? b * s.T + t : t * s.B + b) * s.I;
    for (int64_t d = 0; d < s.D; ++d)
      for (int64_t n = 0; n < GH; ++n) {
        const double *wr = w.f.data() + (d * GH + n) * s.I;
        double acc = bias ? bias->f[d * 2 * GH + n] : 0.0;
        for (int64_t i = 0; i < s.I; ++i) acc += xr[i] * wr[i];
        xp[size_t(((t * s.B + b) * s.D + d) * GH + n)] = acc;
      }
  });
  Tensor rb;
  if (bias) {
    rb = Tensor(DType::F64, {s.D, GH});
    for (int64_t d = 0; d < s.D; ++d)
      for (int64_t n = 0; n < GH; ++n) rb.f[d * GH + n] = bias->f[d * 2 * GH + GH + n];
  }
  std::vector<Tensor> out = makeOutputs(types);
  const bool lstm = cell == RnnCell::Lstm;
  runRecurrence(cfg, s.T, s.B, xp, ctx.in(2), bias ? &rb : nullptr, opt(ctx, 4), opt(ctx, 5),
                lstm ? opt(ctx, 6) : nullptr, lstm ? opt(ctx, 7) : nullptr, outputsOf(out));
  return out;
}

int64_t rnnFlops(const Dims &s) { return 2 * s.T * s.B * s.D * s.G * s.H * (s.I + s.H); }

// ---- Recurrence (internal) ------------------------------------------------------------------

std::vector<TensorType> recurrenceShape(const ShapeContext &ctx, RnnConfig *cfgOut, Dims *dimsOut) {
  const std::string op = "Recurrence";
  checkInputs(op, ctx, 2, 7);
  RnnCell cell = rnnCellOf(ctx.attrs.getString("cell", ""));
  RnnConfig cfg = rnnConfig(op, cell, ctx.attrs);
  const TensorType &xp = ctx.inputs[0];
  checkKind(op, "XP", xp.dtype, Kind::Float);
  check(xp.shape.size() == 3, op + ": XP must have rank 3, got " + shapeString(xp.shape));
  Dims s = sequenceDims(cfg, cell, xp.shape);
  checkSameDtype(op, "XP", xp.dtype, "R", ctx.inputs[1].dtype);
  hiddenFromR(op, ctx.inputs[1], cfg, s);
  check(xp.shape[2] == s.D * s.G * s.H, op + ": XP's last dim must be " + std::to_string(s.D * s.G * s.H) +
                                            " (directions x gates x hidden), got " + shapeString(xp.shape));
  if (ctx.present(2)) {
    checkSameDtype(op, "XP", xp.dtype, "RB", ctx.inputs[2].dtype);
    checkRank(op, "RB", ctx.inputs[2], {s.D, s.G * s.H});
  }
  check(cell == RnnCell::Lstm || (!ctx.present(5) && !ctx.present(6)), op + ": initial_c and P are LSTM operands");
  if (cfgOut) *cfgOut = cfg;
  if (dimsOut) *dimsOut = s;
  return commonTail(op, ctx, cfg, s, xp.dtype, 3, cell == RnnCell::Lstm ? 3 : 2);
}

std::vector<Tensor> recurrenceKernel(const EvalContext &ctx) {
  RnnConfig cfg;
  Dims s;
  std::vector<TensorType> types = recurrenceShape(shapeContextOf(ctx), &cfg, &s);
  const Tensor &x = ctx.in(0);
  const int64_t DGH = s.D * s.G * s.H;
  std::vector<double> xp(size_t(s.T * s.B * DGH));
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t b = 0; b < s.B; ++b)
      std::copy_n(x.f.data() + (cfg.layout == 1 ? b * s.T + t : t * s.B + b) * DGH, DGH,
                  xp.data() + (t * s.B + b) * DGH);
  std::vector<Tensor> out = makeOutputs(types);
  runRecurrence(cfg, s.T, s.B, xp, ctx.in(1), opt(ctx, 2), opt(ctx, 3), opt(ctx, 4), opt(ctx, 5), opt(ctx, 6),
                outputsOf(out));
  return out;
}

}  // namespace

// ---- Registration ---------------------------------------------------------------------------

#define KILN_RNN_OP(NAME, CELL)                                                                                        \
  KILN_REGISTER_OP({NAME, [](const ShapeContext &c) { return rnnShape(NAME, CELL, c, nullptr, nullptr); },             \
                    [](const EvalContext &c) { return rnnKernel(NAME, CELL, c); },                                     \
                    [](const ShapeContext &c, const std::vector<TensorType> &) {                                       \
                      Dims s;                                                                                          \
                      rnnShape(NAME, CELL, c, nullptr, &s);                                                            \
                      return rnnFlops(s);                                                                              \
                    }});

KILN_RNN_OP("LSTM", RnnCell::Lstm)
KILN_RNN_OP("GRU", RnnCell::Gru)
KILN_RNN_OP("RNN", RnnCell::Rnn)

KILN_REGISTER_OP({"Recurrence", [](const ShapeContext &c) { return recurrenceShape(c, nullptr, nullptr); },
                  recurrenceKernel,
                  [](const ShapeContext &c, const std::vector<TensorType> &) {
                    Dims s;
                    recurrenceShape(c, nullptr, &s);
                    return 2 * s.T * s.B * s.D * s.G * s.H * s.H;
                  }});

}  // namespace kiln::ops
