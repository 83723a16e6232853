#include "compiler/target/ElementwiseTable.h"

#include <functional>

namespace kiln::target {

namespace {

using Make = std::function<std::optional<ElementwiseOp>(int numInputs, const ElementwiseAttrs &, ElemType)>;

std::string lit(double v) { return floatLiteral(static_cast<float>(v)); }

ElementwiseOp floatOp(std::string expr, int n) {
  return {std::move(expr), ElemType::F32, std::vector<ElemType>(n, ElemType::F32)};
}

// A float-only op of fixed arity.
Make fixed(int arity, std::function<std::string(const ElementwiseAttrs &)> expr) {
  return [arity, expr](int n, const ElementwiseAttrs &a, ElemType t) -> std::optional<ElementwiseOp> {
    if (n != arity || t != ElemType::F32) return std::nullopt;
    return floatOp(expr(a), n);
  };
}
Make unary(std::string expr) {
  return fixed(1, [expr](const ElementwiseAttrs &) { return expr; });
}
Make binary(std::string expr) {
  return fixed(2, [expr](const ElementwiseAttrs &) { return expr; });
}

bool isInteger(ElemType t) { return !isFloatType(t) && t != ElemType::F64 && t != ElemType::Bool; }

// Arithmetic on two inputs of any numeric data type, computed in it (integers wrap on store).
Make arithmetic(std::string expr) {
  return [expr](int n, const ElementwiseAttrs &, ElemType t) -> std::optional<ElementwiseOp> {
    if (n != 2 || t == ElemType::Bool) return std::nullopt;
    return ElementwiseOp{expr, t, {t, t}};
  };
}

// Comparisons: two inputs of one numeric dtype, bool out.
Make compare(std::string expr) {
  return [expr](int n, const ElementwiseAttrs &, ElemType t) -> std::optional<ElementwiseOp> {
    if (n != 2 || t == ElemType::F16 || t == ElemType::BF16) return std::nullopt;
    return ElementwiseOp{expr, ElemType::Bool, {t, t}};
  };
}

Make logic(std::string expr, int arity) {
  return [expr, arity](int n, const ElementwiseAttrs &, ElemType) -> std::optional<ElementwiseOp> {
    if (n != arity) return std::nullopt;
    return ElementwiseOp{expr, ElemType::Bool, std::vector<ElemType>(n, ElemType::Bool)};
  };
}

// Variadic Sum/Mean/Max/Min over 1..3 inputs of any numeric type (Mean: float types).
Make variadic(std::string fold) {
  return [fold](int n, const ElementwiseAttrs &, ElemType t) -> std::optional<ElementwiseOp> {
    if (n < 1 || n > 3 || t == ElemType::Bool || (fold == "mean" && isInteger(t))) return std::nullopt;
    static const char *v[] = {"a", "b", "c"};
    std::string e = "a";
    for (int k = 1; k < n; ++k) {
      if (fold == "+" || fold == "mean")
        e = e + " + " + v[k];
      else
        e = "kiln_" + fold + "(" + e + ", " + v[k] + ")";
    }
    if (fold == "mean" && n > 1) e = "(" + e + ") / " + lit(n);
    return ElementwiseOp{e, t, std::vector<ElemType>(n, t)};
  };
}

const std::map<std::string, Make> &table() {
  static const std::map<std::string, Make> t = [] {
    std::map<std::string, Make> m;
    // Unary math (float32; the CPU reference computes in double, these in float).
    m["Identity"] = unary("a");
    m["Dropout"] = unary("a");  // inference
    m["Neg"] = unary("-a");
    m["Abs"] = unary("fabsf(a)");
    m["Sign"] = unary("(a > 0.f ? 1.f : a < 0.f ? -1.f : a)");
    m["Reciprocal"] = unary("1.f / a");
    m["Sqrt"] = unary("sqrtf(a)");
    m["Exp"] = unary("expf(a)");
    m["Log"] = unary("logf(a)");
    m["Erf"] = unary("erff(a)");
    m["Floor"] = unary("floorf(a)");
    m["Ceil"] = unary("ceilf(a)");
    m["Round"] = unary("rintf(a)");  // halves to even
    m["Sin"] = unary("sinf(a)");
    m["Cos"] = unary("cosf(a)");
    m["Tan"] = unary("tanf(a)");
    m["Asin"] = unary("asinf(a)");
    m["Acos"] = unary("acosf(a)");
    m["Atan"] = unary("atanf(a)");
    m["Sinh"] = unary("sinhf(a)");
    m["Cosh"] = unary("coshf(a)");
    m["Asinh"] = unary("asinhf(a)");
    m["Acosh"] = unary("acoshf(a)");
    m["Atanh"] = unary("atanhf(a)");
    m["Tanh"] = unary("tanhf(a)");
    // Activations (compiler/ops/Activation.cpp).
    m["Relu"] = unary("(a < 0.f ? 0.f : a)");  // NaN passes, as the reference
    m["Sigmoid"] = unary("kiln_sigmoid(a)");
    m["Softplus"] = unary("kiln_softplus(a)");
    m["Softsign"] = unary("a / (1.f + fabsf(a))");
    m["Mish"] = unary("a * tanhf(kiln_softplus(a))");
    m["HardSwish"] = unary("a * fmaxf(0.f, fminf(1.f, a / 6.f + 0.5f))");
    m["LeakyRelu"] = fixed(
        1, [](const ElementwiseAttrs &at) { return "(a < 0.f ? " + lit(at.getFloat("alpha", 0.01)) + " * a : a)"; });
    m["Elu"] = fixed(1, [](const ElementwiseAttrs &at) {
      return "(a < 0.f ? " + lit(at.getFloat("alpha", 1.0)) + " * expm1f(a) : a)";
    });
    m["Selu"] = fixed(1, [](const ElementwiseAttrs &at) {
      return lit(at.getFloat("gamma", 1.05070102214813232421875)) +
             " * (a > 0.f ? a : " + lit(at.getFloat("alpha", 1.67326319217681884765625)) + " * expm1f(a))";
    });
    m["Celu"] = fixed(1, [](const ElementwiseAttrs &at) {
      std::string al = lit(at.getFloat("alpha", 1.0));
      return "(fmaxf(0.f, a) + fminf(0.f, " + al + " * expm1f(a / " + al + ")))";
    });
    m["ThresholdedRelu"] =
        fixed(1, [](const ElementwiseAttrs &at) { return "(a > " + lit(at.getFloat("alpha", 1.0)) + " ? a : 0.f)"; });
    m["HardSigmoid"] = fixed(1, [](const ElementwiseAttrs &at) {
      return "fmaxf(0.f, fminf(1.f, " + lit(at.getFloat("alpha", 0.2)) + " * a + " + lit(at.getFloat("beta", 0.5)) +
             "))";
    });
    m["Shrink"] = fixed(1, [](const ElementwiseAttrs &at) {
      std::string l = lit(at.getFloat("lambd", 0.5)), b = lit(at.getFloat("bias", 0.0));
      return "(a < -" + l + " ? a + " + b + " : a > " + l + " ? a - " + b + " : 0.f)";
    });
    m["Gelu"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 1 || t != ElemType::F32) return std::nullopt;
      std::string approx = at.getString("approximate", "none");
      if (approx == "tanh")
        return floatOp("0.5f * a * (1.f + tanhf(0.797884560802865355f * (a + 0.044715f * a * a * a)))", 1);
      if (approx == "none") return floatOp("0.5f * a * (1.f + erff(a * 0.707106781186547524f))", 1);
      return std::nullopt;
    };
    // Clip: constant bounds from attributes, else tensor bounds from inputs 2 and 3.
    m["Clip"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if (t == ElemType::Bool || n < 1 || n > 3) return std::nullopt;
      bool hasMin = at.floats.count("min"), hasMax = at.floats.count("max");
      if (t != ElemType::F32) {  // double and integers: compare in the data type
        if ((n == 2 && hasMin) || (n == 3 && (hasMin || hasMax))) return std::nullopt;
        std::string lo = hasMin ? typedLiteral(at.getFloat("min", 0), t) : n >= 2 ? "b" : "";
        std::string hi = hasMax ? typedLiteral(at.getFloat("max", 0), t) : n >= 3 ? "c" : "";
        std::string e = "a";
        if (!lo.empty()) e = "(" + e + " < " + lo + " ? " + lo + " : " + e + ")";
        if (!hi.empty()) e = "(" + e + " > " + hi + " ? " + hi + " : " + e + ")";
        return ElementwiseOp{e, t, std::vector<ElemType>(n, t)};
      }
      std::string lo = hasMin ? lit(at.getFloat("min", 0)) : n >= 2 ? "b" : "(-kiln_inf())";
      std::string hi = hasMax ? lit(at.getFloat("max", 0)) : n >= 3 ? "c" : "kiln_inf()";
      if (n == 2 && hasMin) return std::nullopt;  // input 2 would be unused: ambiguous
      if (n == 3 && (hasMin || hasMax)) return std::nullopt;
      return floatOp("kiln_clip(a, " + lo + ", " + hi + ")", n);
    };
    m["PRelu"] = binary("(a < 0.f ? a * b : a)");
    // Binary arithmetic.
    m["Add"] = arithmetic("a + b");
    m["Sub"] = arithmetic("a - b");
    m["Mul"] = arithmetic("a * b");
    m["Div"] = [](int n, const ElementwiseAttrs &at, ElemType t) {  // integers: truncating
      auto op = arithmetic("a / b")(n, at, t);
      if (op) op->floatQuotient = t == ElemType::F32;
      return op;
    };
    // Pow's exponent may have another type than the base (the data type, operand 0); integer and
    // double bases compute in double, cast back to the base's type.
    m["Pow"] = [](int n, const ElementwiseAttrs &, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 2 || t == ElemType::Bool) return std::nullopt;
      if (t == ElemType::F32) return floatOp("powf(a, b)", 2);
      return ElementwiseOp{"pow((double)a, b)", t, {t, ElemType::F64}};
    };
    // fmod = 1: the remainder takes the dividend's sign (C); else numpy.mod: the divisor's.
    m["Mod"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 2 || t == ElemType::Bool) return std::nullopt;
      bool f = at.getInt("fmod", 0) == 1;
      std::string e = !f                   ? "kiln_pymod(a, b)"
                      : t == ElemType::F32 ? "fmodf(a, b)"
                      : t == ElemType::F64 ? "fmod(a, b)"
                                           : "a % b";
      return ElementwiseOp{e, t, {t, t}};
    };
    m["BitShift"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      std::string d = at.getString("direction", "");
      if (n != 2 || !isInteger(t) || (d != "LEFT" && d != "RIGHT")) return std::nullopt;
      return ElementwiseOp{d == "LEFT" ? "a << b" : "a >> b", t, {t, t}};
    };
    // Variadic.
    m["Sum"] = variadic("+");
    m["Mean"] = variadic("mean");
    m["Max"] = variadic("max");
    m["Min"] = variadic("min");
    // Comparisons and logic.
    m["Equal"] = compare("a == b");
    m["Less"] = compare("a < b");
    m["Greater"] = compare("a > b");
    m["LessOrEqual"] = compare("a <= b");
    m["GreaterOrEqual"] = compare("a >= b");
    m["And"] = logic("a && b", 2);
    m["Or"] = logic("a || b", 2);
    m["Xor"] = logic("a != b", 2);
    m["Not"] = logic("!a", 1);
    m["IsNaN"] = [](int n, const ElementwiseAttrs &, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 1 || t != ElemType::F32) return std::nullopt;
      return ElementwiseOp{"kiln_isnan(a)", ElemType::Bool, {ElemType::F32}};
    };
    m["IsInf"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 1 || t != ElemType::F32) return std::nullopt;
      bool neg = at.getInt("detect_negative", 1) != 0, pos = at.getInt("detect_positive", 1) != 0;
      std::string e = pos && neg ? "kiln_isinf(a)" : pos ? "(a == kiln_inf())" : neg ? "(a == -kiln_inf())" : "false";
      return ElementwiseOp{e, ElemType::Bool, {ElemType::F32}};
    };
    // Where(cond, x, y): x and y of the data type.
    m["Where"] = [](int n, const ElementwiseAttrs &, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 3 || t == ElemType::F16 || t == ElemType::BF16) return std::nullopt;
      return ElementwiseOp{"(a ? b : c)", t, {ElemType::Bool, t, t}};
    };
    // Cast(to): ONNX TensorProto dtype codes. Float data of any storage computes in float, so a
    // cast to a half type rounds the value explicitly.
    m["Cast"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 1 || t == ElemType::F16 || t == ElemType::BF16) return std::nullopt;
      auto to = [t](ElemType r) { return ElementwiseOp{std::string("(") + computeTypeName(r) + ")(a)", r, {t}}; };
      switch (at.getInt("to", 0)) {
        case 1: return to(ElemType::F32);
        case 2: return to(ElemType::U8);
        case 3: return to(ElemType::I8);
        case 4: return to(ElemType::U16);
        case 5: return to(ElemType::I16);
        case 6: return to(ElemType::I32);
        case 7: return to(ElemType::I64);
        case 11: return to(ElemType::F64);
        case 12: return to(ElemType::U32);
        case 13: return to(ElemType::U64);
        case 9: return ElementwiseOp{"(a != 0)", ElemType::Bool, {t}};
        case 10: return ElementwiseOp{"kiln_round_f16((float)(a))", ElemType::F16, {t}};
        case 16: return ElementwiseOp{"kiln_round_bf16((float)(a))", ElemType::BF16, {t}};
        default: return std::nullopt;
      }
    };
    // Per-tensor 8-bit (de)quantization; the scale (b) and zero point (c, optional) are
    // one-element constants, so codegen passes them as literals. round(x / scale) halves to even
    // (rintf); x / scale is kiln_div_by's (the correctly rounded quotient, 1 / scale folded).
    // QuantizeLinear's result is int8, uint8 with attribute `uint8` = 1 (a uint8 zero
    // point, or none: ONNX's default), or float8e4m3fn with `fp8` = 1 (the fp8 store rounds to
    // nearest-even and saturates: `saturate` = 0, overflow to NaN, has no kernel).
    // DequantizeLinear of fp8 (`fp8` = 1) computes in float like any float storage.
    m["QuantizeLinear"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if ((n != 2 && n != 3) || t != ElemType::F32) return std::nullopt;
      if (at.getInt("fp8", 0)) {
        if (!at.getInt("saturate", 1)) return std::nullopt;
        ElemType q = ElemType::F8E4M3;
        // (rounded in the expression too: a fused DequantizeLinear may read the value unstored)
        if (n == 2)
          return ElementwiseOp{
              "kiln_ld(kiln_st<kiln_fp8>(kiln_div_by(a, b, 1.f / b)))", q, {ElemType::F32, ElemType::F32}};
        return ElementwiseOp{
            "kiln_ld(kiln_st<kiln_fp8>(kiln_div_by(a, b, 1.f / b) + c))", q, {ElemType::F32, ElemType::F32, q}};
      }
      bool u8 = at.getInt("uint8", 0) != 0;
      ElemType q = u8 ? ElemType::U8 : ElemType::I8;
      std::string sat = u8 ? "kiln_sat_u8" : "kiln_sat_i8";
      if (n == 2) return ElementwiseOp{sat + "(rintf(kiln_div_by(a, b, 1.f / b)))", q, {ElemType::F32, ElemType::F32}};
      return ElementwiseOp{
          sat + "(rintf(kiln_div_by(a, b, 1.f / b)) + (float)c)", q, {ElemType::F32, ElemType::F32, q}};
    };
    m["DequantizeLinear"] = [](int n, const ElementwiseAttrs &at, ElemType t) -> std::optional<ElementwiseOp> {
      if (n != 2 && n != 3) return std::nullopt;
      if (at.getInt("fp8", 0)) {
        if (t != ElemType::F32) return std::nullopt;
        if (n == 2) return ElementwiseOp{"a * b", ElemType::F32, {ElemType::F32, ElemType::F32}};
        return ElementwiseOp{"(a - c) * b", ElemType::F32, {ElemType::F32, ElemType::F32, ElemType::F32}};
      }
      if (t != ElemType::I8 && t != ElemType::U8) return std::nullopt;
      if (n == 2) return ElementwiseOp{"(float)a * b", ElemType::F32, {t, ElemType::F32}};
      return ElementwiseOp{"(float)(a - c) * b", ElemType::F32, {t, ElemType::F32, t}};
    };
    return m;
  }();
  return t;
}

}  // namespace

std::optional<ElementwiseOp> lookupElementwiseOp(const std::string &opType, int numInputs,
                                                 const ElementwiseAttrs &attrs, ElemType dataType) {
  auto it = table().find(opType);
  if (it == table().end()) return std::nullopt;
  return it->second(numInputs, attrs, dataType);
}

std::vector<std::string> elementwiseOpTypes() {
  std::vector<std::string> names;
  for (const auto &kv : table()) names.push_back(kv.first);
  return names;
}

}  // namespace kiln::target
