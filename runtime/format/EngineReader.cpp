// Engine bytes -> EngineDesc, verifying everything before anything is used. The order of checks
// is chosen so that each failure gets the most useful message: magic, then version (a newer
// file should say so, even if truncated), then size, checksum, section table and metadata.
#include "runtime/format/EngineFormat.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

namespace kiln::rt {

using nlohmann::json;

namespace {

uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

struct Section {
  uint32_t kind;
  uint64_t offset, size;
};

const char* kindName(uint32_t k) {
  switch (SectionKind(k)) {
    case SectionKind::Metadata: return "METADATA";
    case SectionKind::Cubin: return "CUBIN";
    case SectionKind::Ptx: return "PTX";
    case SectionKind::Weights: return "WEIGHTS";
  }
  return "?";
}

// Typed access to the metadata JSON. Every getter checks presence, type and range and records
// the first failure with the field's path ("launches[3].grid[1]").
class Decoder {
 public:
  std::string error;

  bool fail(const std::string& path, const std::string& what) {
    if (error.empty()) error = "metadata: " + (path.empty() ? "" : path + ": ") + what;
    return false;
  }

  static std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

  const json* field(const json& obj, const char* key, const std::string& path) {
    if (!obj.is_object()) return fail(path.empty() ? "(top level)" : path, "expected an object"), nullptr;
    auto it = obj.find(key);
    if (it == obj.end()) return fail(path, std::string("missing field '") + key + "'"), nullptr;
    return &*it;
  }

  bool str(const json& obj, const char* key, const std::string& path, std::string& out) {
    const json* v = field(obj, key, path);
    if (!v) return false;
    if (!v->is_string()) return fail(join(path, key), "expected a string");
    out = v->get_ref<const std::string&>();
    return true;
  }

  bool integer(const json& v, const std::string& path, int64_t lo, int64_t hi, int64_t& out) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<int64_t>::max()) || int64_t(u) > hi) return outOfRange(path, lo, hi);
      out = int64_t(u);
      return true;
    }
    if (v.is_number_integer()) {
      int64_t s = v.get<int64_t>();
      if (s < lo || s > hi) return outOfRange(path, lo, hi);
      out = s;
      return true;
    }
    return fail(path, "expected an integer");
  }

  bool integer(const json& obj, const char* key, const std::string& path, int64_t lo, int64_t hi, int64_t& out) {
    const json* v = field(obj, key, path);
    return v && integer(*v, join(path, key), lo, hi, out);
  }

  bool u64(const json& obj, const char* key, const std::string& path, uint64_t hi, uint64_t& out) {
    const json* v = field(obj, key, path);
    if (!v) return false;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
      return fail(join(path, key), "expected a non-negative integer");
    out = v->get<uint64_t>();
    if (out > hi) return fail(join(path, key), std::to_string(out) + " exceeds the limit " + std::to_string(hi));
    return true;
  }

  bool boolean(const json& obj, const char* key, const std::string& path, bool& out) {
    const json* v = field(obj, key, path);
    if (!v) return false;
    if (!v->is_boolean()) return fail(join(path, key), "expected true or false");
    out = v->get<bool>();
    return true;
  }

  const json* array(const json& obj, const char* key, const std::string& path) {
    const json* v = field(obj, key, path);
    if (v && !v->is_array()) return fail(join(path, key), "expected an array"), nullptr;
    return v;
  }

  // An array of at most kMaxRank integers in [lo, hi].
  bool integers(const json& obj, const char* key, const std::string& path, int64_t lo, int64_t hi,
                std::vector<int64_t>& out, size_t maxCount = kMaxRank) {
    const json* v = array(obj, key, path);
    if (!v) return false;
    if (v->size() > maxCount) return fail(join(path, key), "more than " + std::to_string(maxCount) + " values");
    out.resize(v->size());
    for (size_t i = 0; i < v->size(); ++i)
      if (!integer((*v)[i], join(path, key) + "[" + std::to_string(i) + "]", lo, hi, out[i])) return false;
    return true;
  }

  bool dim3(const json& obj, const char* key, const std::string& path, uint32_t out[3]) {
    const json* v = array(obj, key, path);
    if (!v) return false;
    if (v->size() != 3) return fail(join(path, key), "expected 3 integers");
    for (size_t i = 0; i < 3; ++i) {
      int64_t x = 0;
      if (!integer((*v)[i], join(path, key) + "[" + std::to_string(i) + "]", 0, 0xffffffffll, x)) return false;
      out[i] = uint32_t(x);
    }
    return true;
  }

  bool f32(const json& v, const std::string& path, float& out) {
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s == "nan") return out = std::numeric_limits<float>::quiet_NaN(), true;
      if (s == "inf") return out = std::numeric_limits<float>::infinity(), true;
      if (s == "-inf") return out = -std::numeric_limits<float>::infinity(), true;
      return fail(path, "expected a number, \"nan\", \"inf\" or \"-inf\"");
    }
    if (!v.is_number()) return fail(path, "expected a number");
    double d = v.get<double>();
    // Converting an out-of-range double to float is undefined behaviour: check first.
    if (!(d >= -double(FLT_MAX) && d <= double(FLT_MAX))) return fail(path, "outside the float32 range");
    out = float(d);
    return true;
  }

  bool buffer(const json& v, const std::string& path, BufferRef& out) {
    std::string space;
    if (!str(v, "space", path, space)) return false;
    if (space == "arena")
      out.space = BufferRef::Space::Arena;
    else if (space == "weights")
      out.space = BufferRef::Space::Weights;
    else if (space == "io")
      out.space = BufferRef::Space::Io;
    else
      return fail(path + ".space", "'" + space + "' is not arena, weights or io");
    if (!u64(v, "offset", path, kMaxDeviceBytes, out.offset)) return false;
    out.io = -1;
    if (out.space == BufferRef::Space::Io) {
      int64_t io;
      if (!integer(v, "io", path, -1, std::numeric_limits<int32_t>::max(), io)) return false;
      out.io = int32_t(io);
    }
    return true;
  }

  bool arg(const json& v, const std::string& path, LaunchArg& out) {
    if (!v.is_object()) return fail(path, "expected an object");
    if (v.contains("space")) {
      out.kind = LaunchArg::Kind::Buffer;
      return buffer(v, path, out.buffer);
    }
    int64_t x = 0;
    if (v.contains("i32")) {
      out.kind = LaunchArg::Kind::I32;
      if (!integer(v, "i32", path, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), x))
        return false;
      out.i32 = int32_t(x);
      return true;
    }
    if (v.contains("i64")) {
      out.kind = LaunchArg::Kind::I64;
      if (!integer(v, "i64", path, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), x))
        return false;
      out.i64 = x;
      return true;
    }
    if (v.contains("f32")) {
      out.kind = LaunchArg::Kind::F32;
      return f32(v["f32"], path + ".f32", out.f32);
    }
    if (v.contains("tensor_map")) {
      out.kind = LaunchArg::Kind::TensorMap;
      return tensorMap(v["tensor_map"], path + ".tensor_map", out.tensorMap);
    }
    return fail(path, "expected a buffer {space, offset}, a scalar {i32|i64|f32: value} or {tensor_map: ...}");
  }

  // (its rank, box and strides are checked with the launch: checkEngineDesc)
  bool tensorMap(const json& v, const std::string& path, TensorMap& out) {
    if (!v.is_object()) return fail(path, "expected an object");
    int64_t dtype = 0, swizzle = 0;
    std::vector<int64_t> dims, strides, box;
    if (!buffer(v, path, out.buffer) || !integer(v, "dtype", path, 0, 64, dtype) ||
        !integer(v, "swizzle", path, 0, 128, swizzle) || !integers(v, "dims", path, 1, int64_t(1) << 32, dims, 5) ||
        !integers(v, "strides", path, 0, int64_t(1) << 40, strides, 4) || !integers(v, "box", path, 1, 256, box, 5))
      return false;
    out.dtype = int32_t(dtype), out.swizzle = int32_t(swizzle);
    out.dims.assign(dims.begin(), dims.end());
    out.strides.assign(strides.begin(), strides.end());
    out.box.assign(box.begin(), box.end());
    return true;
  }

  bool launch(const json& v, const std::string& path, Launch& out) {
    if (!v.is_object()) return fail(path, "expected an object");
    // (optional: engines before these were recorded, and launches that compute nothing, lack them)
    if (v.contains("flops") && !u64(v, "flops", path, std::numeric_limits<uint64_t>::max(), out.flops)) return false;
    if (v.contains("traffic_bytes") && !u64(v, "traffic_bytes", path, kMaxDeviceBytes * 64, out.trafficBytes))
      return false;
    if (v.contains("copy")) {
      out.kind = Launch::Kind::Copy;
      const json& c = v["copy"];
      if (v.contains("node") && !str(v, "node", path, out.node)) return false;
      const json* src = field(c, "src", path + ".copy");
      const json* dst = field(c, "dst", path + ".copy");
      return src && dst && buffer(*src, path + ".copy.src", out.src) && buffer(*dst, path + ".copy.dst", out.dst) &&
             u64(c, "bytes", path + ".copy", kMaxDeviceBytes, out.bytes);
    }
    if (v.contains("gemm")) {
      out.kind = Launch::Kind::Gemm;
      const json& g = v["gemm"];
      std::string p = path + ".gemm";
      GemmCall& c = out.gemm;
      int64_t ab, cd, ep;
      const int64_t big = std::numeric_limits<int32_t>::max();
      if (!str(v, "node", path, out.node) || !integer(g, "ab_type", p, 0, 1000, ab) ||
          !integer(g, "cd_type", p, 0, 1000, cd) || !boolean(g, "trans_a", p, c.transA) ||
          !boolean(g, "trans_b", p, c.transB) || !integer(g, "m", p, 1, big, c.m) || !integer(g, "n", p, 1, big, c.n) ||
          !integer(g, "k", p, 1, big, c.k) || !integer(g, "lda", p, 1, big, c.lda) ||
          !integer(g, "ldb", p, 1, big, c.ldb) || !integer(g, "ldc", p, 1, big, c.ldc) ||
          !integer(g, "batch", p, 1, big, c.batch) || !integer(g, "stride_a", p, 0, big, c.strideA) ||
          !integer(g, "stride_b", p, 0, big, c.strideB) || !integer(g, "stride_c", p, 0, big, c.strideC) ||
          !integer(g, "epilogue", p, 0, 3, ep) ||
          !f32(g.contains("alpha") ? g["alpha"] : json(), p + ".alpha", c.alpha) ||
          !f32(g.contains("beta") ? g["beta"] : json(), p + ".beta", c.beta))
        return false;
      c.abType = int32_t(ab), c.cdType = int32_t(cd), c.epilogue = int32_t(ep);
      if (g.contains("tf32") && !boolean(g, "tf32", p, c.tf32)) return false;
      if (g.contains("batch_dims") && (!integers(g, "batch_dims", p, 1, big, c.batchDims) ||
                                       !integers(g, "batch_steps_a", p, 0, big, c.batchStepsA) ||
                                       !integers(g, "batch_steps_b", p, 0, big, c.batchStepsB) ||
                                       !integers(g, "batch_steps_c", p, 0, big, c.batchStepsC)))
        return false;
      for (auto [name, ref] : {std::pair<const char*, BufferRef*>{"a", &c.a}, {"b", &c.b}, {"d", &c.d}}) {
        const json* b = field(g, name, p);
        if (!b || !buffer(*b, p + "." + name, *ref)) return false;
      }
      if (c.beta != 0.f) {
        const json* b = field(g, "c", p);
        if (!b || !buffer(*b, p + ".c", c.c)) return false;
      }
      if (c.epilogue & GemmCall::Bias) {
        const json* b = field(g, "bias", p);
        if (!b || !buffer(*b, p + ".bias", c.bias)) return false;
      }
      if (c.fp8())
        for (auto [name, ref] : {std::pair<const char*, BufferRef*>{"scale_a", &c.scaleA}, {"scale_b", &c.scaleB}}) {
          const json* b = field(g, name, p);
          if (!b || !buffer(*b, p + "." + name, *ref)) return false;
        }
      return true;
    }
    out.kind = Launch::Kind::Kernel;
    int64_t kernel, shared;
    if (!integer(v, "kernel", path, -1, std::numeric_limits<int32_t>::max(), kernel)) return false;
    out.kernel = int32_t(kernel);
    if (!dim3(v, "grid", path, out.grid) || !dim3(v, "block", path, out.block)) return false;
    if (!integer(v, "shared_bytes", path, 0, 0xffffffffll, shared)) return false;
    out.sharedBytes = uint32_t(shared);
    if (!str(v, "node", path, out.node)) return false;
    const json* args = array(v, "args", path);
    if (!args) return false;
    if (args->size() > kMaxLaunchArgs) return fail(path + ".args", "too many arguments");
    for (size_t i = 0; i < args->size(); ++i) {
      LaunchArg a;
      if (!arg((*args)[i], path + ".args[" + std::to_string(i) + "]", a)) return false;
      out.args.push_back(a);
    }
    return true;
  }

 private:
  bool outOfRange(const std::string& path, int64_t lo, int64_t hi) {
    return fail(path, "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
};

// A SAX pass that only counts nesting depth (and keeps the first syntax error).
struct DepthCheck {
  int depth = 0;
  bool tooDeep = false;
  std::string error;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool key(std::string&) { return true; }
  bool start_object(std::size_t) { return enter(); }
  bool end_object() { return --depth, true; }
  bool start_array(std::size_t) { return enter(); }
  bool end_array() { return --depth, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
    std::string w = e.what();
    size_t p = w.find("] ");
    error = p == std::string::npos ? w : w.substr(p + 2);
    return false;
  }
  bool enter() {
    if (++depth <= kMaxMetadataDepth) return true;
    tooDeep = true;
    return false;
  }
};

// Decodes the metadata object into `d`; module section indices go to `moduleSections` (pairs of
// cubin, ptx; -1 for none) because their blobs are resolved against the section table later.
bool decodeMetadata(const json& m, EngineDesc& d, std::vector<std::pair<int64_t, int64_t>>& moduleSections,
                    uint64_t& weightsBytes, Decoder& dec, uint32_t headerVersion) {
  if (!m.is_object()) return dec.fail("(top level)", "expected an object");
  int64_t formatVersion;
  if (!dec.integer(m, "format_version", "", 0, std::numeric_limits<int32_t>::max(), formatVersion)) return false;
  if (formatVersion != headerVersion)
    return dec.fail("format_version",
                    std::to_string(formatVersion) + " disagrees with the header's " + std::to_string(headerVersion));
  if (!dec.str(m, "kiln_version", "", d.kilnVersion) || !dec.str(m, "route", "", d.route)) return false;

  const json* target = dec.field(m, "target", "");
  int64_t sm;
  if (!target || !dec.str(*target, "arch", "target", d.arch) || !dec.integer(*target, "sm", "target", 0, 9999, sm))
    return false;
  d.sm = int32_t(sm);

  const json* env = dec.field(m, "environment", "");
  if (!env) return false;
  if (!env->is_object()) return dec.fail("environment", "expected an object of strings");
  for (auto it = env->begin(); it != env->end(); ++it) {
    if (!it->is_string()) return dec.fail("environment." + it.key(), "expected a string");
    d.environment[it.key()] = it->get<std::string>();
  }

  const json* io = dec.array(m, "io", "");
  if (!io) return false;
  // Entries are appended one by one (no resize to the JSON's count), so a bad entry stops the
  // decoding before memory is spent on the ones after it.
  for (size_t i = 0; i < io->size(); ++i) {
    std::string p = "io[" + std::to_string(i) + "]";
    const json& t = (*io)[i];
    d.io.emplace_back();
    int64_t dtype;
    if (!dec.str(t, "name", p, d.io[i].name) || !dec.integer(t, "dtype", p, 0, 1000, dtype) ||
        !dec.boolean(t, "is_input", p, d.io[i].isInput))
      return false;
    d.io[i].dtype = int32_t(dtype);
    const json* shape = dec.array(t, "shape", p);
    if (!shape) return false;
    if (shape->size() > kMaxRank)
      return dec.fail(p + ".shape", "rank " + std::to_string(shape->size()) + " exceeds " + std::to_string(kMaxRank));
    for (size_t k = 0; k < shape->size(); ++k) {
      int64_t dim;
      if (!dec.integer((*shape)[k], p + ".shape[" + std::to_string(k) + "]", 0, int64_t(kMaxDeviceBytes), dim))
        return false;
      d.io[i].shape.push_back(dim);
    }
  }

  const json* modules = dec.array(m, "modules", "");
  if (!modules) return false;
  moduleSections.resize(modules->size());
  for (size_t i = 0; i < modules->size(); ++i) {
    std::string p = "modules[" + std::to_string(i) + "]";
    if (!dec.integer((*modules)[i], "cubin", p, -1, kMaxSections, moduleSections[i].first) ||
        !dec.integer((*modules)[i], "ptx", p, -1, kMaxSections, moduleSections[i].second))
      return false;
  }

  const json* kernels = dec.array(m, "kernels", "");
  if (!kernels) return false;
  for (size_t i = 0; i < kernels->size(); ++i) {
    std::string p = "kernels[" + std::to_string(i) + "]";
    d.kernels.emplace_back();
    int64_t module;
    if (!dec.integer((*kernels)[i], "module", p, -1, std::numeric_limits<int32_t>::max(), module) ||
        !dec.str((*kernels)[i], "entry", p, d.kernels[i].entry) ||
        !dec.str((*kernels)[i], "node", p, d.kernels[i].node))
      return false;
    d.kernels[i].module = int32_t(module);
  }

  const json* memory = dec.field(m, "memory", "");
  if (!memory || !dec.u64(*memory, "arena_bytes", "memory", kMaxDeviceBytes, d.arenaBytes) ||
      !dec.u64(*memory, "weights_bytes", "memory", kMaxDeviceBytes, weightsBytes))
    return false;

  // Optional (absent means false), so that writers that predate the knob stay readable.
  if (m.contains("cuda_graph") && !dec.boolean(m, "cuda_graph", "", d.cudaGraph)) return false;
  if (m.contains("gemm_search") && !dec.boolean(m, "gemm_search", "", d.gemmSearch)) return false;

  const json* launches = dec.array(m, "launches", "");
  if (!launches) return false;
  for (size_t i = 0; i < launches->size(); ++i) {
    Launch l;
    if (!dec.launch((*launches)[i], "launches[" + std::to_string(i) + "]", l)) return false;
    d.launches.push_back(std::move(l));
  }

  // Version 4, optional: the profile's dims and the other specialisations.
  if (!m.contains("dims"))
    return !m.contains("profiles") || dec.fail("profiles", "an engine without dims has one profile");
  const json* dims = dec.array(m, "dims", "");
  if (!dims) return false;
  if (dims->size() > kMaxRank) return dec.fail("dims", "more than " + std::to_string(kMaxRank) + " dims");
  for (size_t i = 0; i < dims->size(); ++i) {
    std::string p = "dims[" + std::to_string(i) + "]";
    const json& jd = (*dims)[i];
    ProfileDim pd;
    if (!dec.str(jd, "name", p, pd.name) || !dec.integer(jd, "min", p, 0, int64_t(kMaxDeviceBytes), pd.min) ||
        !dec.integer(jd, "opt", p, 0, int64_t(kMaxDeviceBytes), pd.opt) ||
        !dec.integer(jd, "max", p, 0, int64_t(kMaxDeviceBytes), pd.max) || !dec.boolean(jd, "pad", p, pd.pad))
      return false;
    const json* axes = dec.array(jd, "axes", p);
    if (!axes) return false;
    if (axes->size() > kMaxLaunchArgs) return dec.fail(p + ".axes", "too many axes");
    for (size_t a = 0; a < axes->size(); ++a) {
      std::string pa = p + ".axes[" + std::to_string(a) + "]";
      const json& ja = (*axes)[a];
      int64_t io = 0, axis = 0, num = 1, den = 1;
      if (!ja.is_array() || (ja.size() != 2 && ja.size() != 4))
        return dec.fail(pa, "expected [io, axis] or [io, axis, num, den]");
      if (!dec.integer(ja[0], pa + "[0]", 0, std::numeric_limits<int32_t>::max(), io) ||
          !dec.integer(ja[1], pa + "[1]", 0, int64_t(kMaxRank), axis) ||
          (ja.size() == 4 && (!dec.integer(ja[2], pa + "[2]", 1, kMaxAxisRatio, num) ||
                              !dec.integer(ja[3], pa + "[3]", 1, kMaxAxisRatio, den))))
        return false;
      pd.axes.push_back({int32_t(io), int32_t(axis), num, den});
    }
    d.dims.push_back(std::move(pd));
  }
  const json* specs = dec.array(m, "specialisations", "");
  if (!specs) return false;
  for (size_t i = 0; i < specs->size(); ++i) {
    std::string p = "specialisations[" + std::to_string(i) + "]";
    Specialisation sp;
    if (!dec.integers((*specs)[i], "values", p, 0, int64_t(kMaxDeviceBytes), sp.values) ||
        !dec.u64((*specs)[i], "arena_bytes", p, kMaxDeviceBytes, sp.arenaBytes))
      return false;
    const json* launches = dec.array((*specs)[i], "launches", p);
    if (!launches) return false;
    for (size_t k = 0; k < launches->size(); ++k) {
      Launch l;
      if (!dec.launch((*launches)[k], p + ".launches[" + std::to_string(k) + "]", l)) return false;
      sp.launches.push_back(std::move(l));
    }
    d.specialisations.push_back(std::move(sp));
  }
  // Version 6, optional: several profiles.
  if (!m.contains("profiles")) return true;
  const json* profiles = dec.array(m, "profiles", "");
  if (!profiles) return false;
  if (profiles->size() > 256) return dec.fail("profiles", "more than 256 profiles");
  for (size_t i = 0; i < profiles->size(); ++i) {
    std::string p = "profiles[" + std::to_string(i) + "]";
    Profile pr;
    std::vector<int64_t> specs;
    const json& jp = (*profiles)[i];
    if (!dec.integers(jp, "min", p, 0, int64_t(kMaxDeviceBytes), pr.min) ||
        !dec.integers(jp, "opt", p, 0, int64_t(kMaxDeviceBytes), pr.opt) ||
        !dec.integers(jp, "max", p, 0, int64_t(kMaxDeviceBytes), pr.max) ||
        !dec.integers(jp, "specialisations", p, 0, 1 << 12, specs, 1 << 12))
      return false;
    for (int64_t s : specs) pr.specialisations.push_back(int32_t(s));
    d.profiles.push_back(std::move(pr));
  }
  return true;
}

ParseStatus parseUnchecked(const uint8_t* data, size_t size, EngineDesc& out, std::string& error,
                           ByteRange* weightsInFile) {
  auto malformed = [&](std::string msg) {
    error = std::move(msg);
    return ParseStatus::Malformed;
  };
  if (size == 0) return malformed("empty input: not a kiln engine");
  if (!data) return malformed("no data");
  // ---- Header
  size_t magicLen = std::min<size_t>(size, 8);
  if (std::memcmp(data, kEngineMagic, magicLen) != 0)
    return malformed("not a kiln engine (the file does not start with \"KILNENG\")");
  if (size < 12) return malformed("truncated engine: " + std::to_string(size) + " bytes, less than the 64-byte header");
  uint32_t version = getU32(data + 8);
  if (version < kOldestEngineFormatVersion || version > kEngineFormatVersion) {
    error = "engine format version " + std::to_string(version) + ", this runtime reads versions " +
            std::to_string(kOldestEngineFormatVersion) + " to " + std::to_string(kEngineFormatVersion);
    return ParseStatus::UnsupportedVersion;
  }
  if (size < kHeaderSize)
    return malformed("truncated engine: " + std::to_string(size) + " bytes, less than the 64-byte header");
  uint32_t headerSize = getU32(data + 12);
  uint64_t fileSize = getU64(data + 16);
  uint64_t checksum = getU64(data + 24);
  uint32_t sectionCount = getU32(data + 32);
  uint64_t tableOffset = getU64(data + 40);
  if (headerSize != kHeaderSize)
    return malformed("bad header size " + std::to_string(headerSize) + " (format version 1 has " +
                     std::to_string(kHeaderSize) + ")");
  if (fileSize > size)
    return malformed("truncated engine: the header says " + std::to_string(fileSize) + " bytes, got " +
                     std::to_string(size));
  if (fileSize < size)
    return malformed("engine has " + std::to_string(size - fileSize) + " bytes after its end (the header says " +
                     std::to_string(fileSize) + " bytes)");
  if (getU32(data + 36) != 0) return malformed("header: reserved field is not zero");
  for (size_t i = 48; i < kHeaderSize; ++i)
    if (data[i] != 0) return malformed("header: padding byte " + std::to_string(i) + " is not zero");
  uint64_t actual = fnv1a64(data + kHeaderSize, size - kHeaderSize);
  if (actual != checksum) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "checksum mismatch (header %016llx, contents %016llx): the engine is corrupted",
                  (unsigned long long)checksum, (unsigned long long)actual);
    return malformed(buf);
  }

  // ---- Section table
  if (sectionCount > kMaxSections) return malformed("absurd section count " + std::to_string(sectionCount));
  if (tableOffset != kHeaderSize)
    return malformed("section table offset " + std::to_string(tableOffset) + " (format version 1 puts it at 64)");
  const uint64_t tableEnd = kHeaderSize + uint64_t(sectionCount) * kSectionEntrySize;
  if (tableEnd > size)
    return malformed("section table (" + std::to_string(sectionCount) + " entries) runs past the end of the file");
  std::vector<Section> sections(sectionCount);
  int metadataIndex = -1, weightsIndex = -1;
  for (uint32_t i = 0; i < sectionCount; ++i) {
    const uint8_t* e = data + kHeaderSize + uint64_t(i) * kSectionEntrySize;
    Section& s = sections[i];
    s.kind = getU32(e);
    s.offset = getU64(e + 8);
    s.size = getU64(e + 16);
    std::string what = "section " + std::to_string(i);
    if (s.kind < uint32_t(SectionKind::Metadata) || s.kind > uint32_t(SectionKind::Weights))
      return malformed(what + ": unknown kind " + std::to_string(s.kind));
    what += std::string(" (") + kindName(s.kind) + ")";
    if (getU32(e + 4) != 0) return malformed(what + ": reserved field is not zero");
    if (s.offset % kSectionAlignment != 0)
      return malformed(what + ": offset " + std::to_string(s.offset) + " is not 64-byte aligned");
    if (s.offset < tableEnd || s.offset > size || s.size > size - s.offset)
      return malformed(what + ": bytes [" + std::to_string(s.offset) + ", +" + std::to_string(s.size) +
                       ") are outside the file's " + std::to_string(tableEnd) + ".." + std::to_string(size) +
                       " data area");
    if (s.kind == uint32_t(SectionKind::Metadata)) {
      if (metadataIndex >= 0) return malformed(what + ": a second METADATA section");
      metadataIndex = int(i);
    }
    if (s.kind == uint32_t(SectionKind::Weights)) {
      if (weightsIndex >= 0) return malformed(what + ": a second WEIGHTS section");
      weightsIndex = int(i);
    }
  }
  // Overlap: sort the non-empty sections by offset and compare neighbours.
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < sectionCount; ++i)
    if (sections[i].size) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return sections[a].offset < sections[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const Section& a = sections[order[k - 1]];
    const Section& b = sections[order[k]];
    if (a.offset + a.size > b.offset)
      return malformed("sections " + std::to_string(order[k - 1]) + " and " + std::to_string(order[k]) + " overlap");
  }
  if (metadataIndex < 0) return malformed("no METADATA section");
  if (weightsIndex < 0) return malformed("no WEIGHTS section");

  // ---- Metadata
  const Section& ms = sections[size_t(metadataIndex)];
  if (ms.size > kMaxMetadataBytes) return malformed("metadata of " + std::to_string(ms.size) + " bytes is absurd");
  json meta;
  try {
    // The metadata schema nests 5 levels deep; refusing deeper input bounds the parser's memory
    // to a small multiple of the section's size. The depth is checked by a SAX pass first: a
    // parse callback would do it too, but nlohmann's callback parser scans the enclosing array at
    // the end of every element (quadratic: a million empty objects hung kiln_engine_load).
    DepthCheck depth;
    if (!json::sax_parse(data + ms.offset, data + ms.offset + ms.size, &depth)) {
      if (depth.tooDeep)
        return malformed("metadata is nested more than " + std::to_string(kMaxMetadataDepth) + " levels deep");
      return malformed("metadata is not valid JSON: " + depth.error);
    }
    meta = json::parse(data + ms.offset, data + ms.offset + ms.size);
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
    std::string w = e.what();
    size_t p = w.find("] ");
    return malformed("metadata is not valid JSON: " + (p == std::string::npos ? w : w.substr(p + 2)));
  }
  Decoder dec;
  std::vector<std::pair<int64_t, int64_t>> moduleSections;
  uint64_t weightsBytes = 0;
  out = EngineDesc();
  if (!decodeMetadata(meta, out, moduleSections, weightsBytes, dec, version)) return malformed(dec.error);

  // ---- Cross-checks between metadata and sections
  const Section& ws = sections[size_t(weightsIndex)];
  if (weightsBytes != ws.size)
    return malformed("memory.weights_bytes is " + std::to_string(weightsBytes) + " but the WEIGHTS section has " +
                     std::to_string(ws.size) + " bytes");
  std::vector<bool> used(sectionCount, false);
  used[size_t(metadataIndex)] = used[size_t(weightsIndex)] = true;
  // Each image section belongs to one module: the modules' copies then add up to at most the
  // file's size (thousands of modules naming one large section would otherwise allocate
  // gigabytes from a small file).
  std::vector<int64_t> usedBy(sectionCount, -1);
  out.modules.resize(moduleSections.size());
  for (size_t i = 0; i < moduleSections.size(); ++i) {
    const std::pair<int64_t, SectionKind> refs[2] = {{moduleSections[i].first, SectionKind::Cubin},
                                                     {moduleSections[i].second, SectionKind::Ptx}};
    for (const auto& [index, kind] : refs) {
      if (index < 0) continue;
      std::string what = "modules[" + std::to_string(i) + "]." + (kind == SectionKind::Cubin ? "cubin" : "ptx");
      if (uint64_t(index) >= sectionCount)
        return malformed("metadata: " + what + ": section index " + std::to_string(index) + " out of range (" +
                         std::to_string(sectionCount) + " sections)");
      const Section& s = sections[size_t(index)];
      if (s.kind != uint32_t(kind))
        return malformed("metadata: " + what + ": section " + std::to_string(index) + " is " + kindName(s.kind) +
                         ", not " + kindName(uint32_t(kind)));
      if (usedBy[size_t(index)] >= 0)
        return malformed("metadata: " + what + ": section " + std::to_string(index) +
                         " is already the image of module " + std::to_string(usedBy[size_t(index)]));
      used[size_t(index)] = true;
      usedBy[size_t(index)] = int64_t(i);
      const uint8_t* p = data + s.offset;
      if (kind == SectionKind::Cubin)
        out.modules[i].cubin.assign(p, p + s.size);
      else
        out.modules[i].ptx.assign(reinterpret_cast<const char*>(p), size_t(s.size));
    }
  }
  for (uint32_t i = 0; i < sectionCount; ++i)
    if (!used[i])
      return malformed("section " + std::to_string(i) + " (" + kindName(sections[i].kind) +
                       ") is not referenced by the metadata");

  if (weightsInFile) {
    weightsInFile->offset = ws.offset;
    weightsInFile->size = ws.size;
  } else {
    out.weights.assign(data + ws.offset, data + ws.offset + ws.size);
  }
  std::string problem = checkEngineDesc(out, ws.size);
  if (!problem.empty()) return malformed(problem);
  return ParseStatus::Ok;
}

}  // namespace

ParseStatus parseEngine(const uint8_t* data, size_t size, EngineDesc& out, std::string& error,
                        ByteRange* weightsInFile) {
  try {
    return parseUnchecked(data, size, out, error, weightsInFile);
  } catch (const std::bad_alloc&) {
    error = "out of memory while reading the engine";
  } catch (const std::exception& e) {
    error = std::string("internal error while reading the engine: ") + e.what();
  } catch (...) {
    error = "internal error while reading the engine";
  }
  return ParseStatus::Malformed;
}

}  // namespace kiln::rt
