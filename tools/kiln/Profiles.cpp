#include "tools/kiln/Profiles.h"

#include "compiler/support/Parallel.h"
#include "compiler/target/GpuTarget.h"
#include "runtime/format/EngineFormat.h"
#include "passes/Passes.h"
#include "tools/kiln/Evaluate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include <unistd.h>

namespace kiln::cli {

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

// How many specialisations to build at once: one per core (or --jobs), fewer where memory is
// short. A build holds the imported module and its engine, a few times the model file.
unsigned specialisationWidth(unsigned jobs, size_t specs, const std::string &modelPath) {
  std::error_code ec;
  uint64_t fileBytes = std::filesystem::file_size(modelPath, ec);
  uint64_t perBuild = std::max<uint64_t>(uint64_t(256) << 20, (ec ? 0 : fileBytes) * 4);
  uint64_t memory = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t byMemory = std::max<uint64_t>(1, memory / 2 / perBuild);
  return unsigned(std::min<uint64_t>({jobs ? jobs : support::hardwareThreads(), specs, byMemory}));
}

// A dim of the profiles: the input axes that share it, its range over all profiles, and its
// range and buckets in each.
struct Group {
  std::string name;
  int64_t min = 0, max = 0;
  std::vector<ProfileReport::Range> ranges;          // per profile
  std::vector<std::pair<std::string, size_t>> axes;  // (input, axis)
};

// Every input's shape with the groups at `values`.
Shapes shapesAt(const Shapes &opt, const std::vector<Group> &groups, const std::vector<int64_t> &values) {
  Shapes s = opt;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const auto &[input, axis] : groups[g].axes) s[input][axis] = values[g];
  return s;
}

// The model imported at `shapes` and `dims` (as --shapes gives them; the plain fp32 graph, for
// the evaluator), or null with `error`.
mlir::func::FuncOp importAt(const ModelOptions &model, const Shapes &shapes, const std::map<std::string, int64_t> &dims,
                            mlir::MLIRContext &ctx, codegen::ModelBuild &m, std::string &error) {
  ImportOptions io;
  if (auto e = model.importOptions(io); !e.empty()) return error = e, nullptr;
  io.shapes = shapes;
  io.dims = dims;
  m = codegen::lowerModelWith(model.model, io, ctx, [](mlir::OpPassManager &pm) { buildImportCleanupPipeline(pm); });
  if (!m.ok()) return error = m.error, nullptr;
  return (*m.import.module).lookupSymbol<mlir::func::FuncOp>("main");
}

// Calls f(index) for every index of `shape`, row-major.
template <typename F> void forEachIndex(const std::vector<int64_t> &shape, F f) {
  int64_t n = tuner::numElements(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t k = shape.size(); k-- > 0;)
      if (++idx[k] < shape[k])
        break;
      else
        idx[k] = 0;
  }
}

int64_t offsetIn(const std::vector<int64_t> &shape, const std::vector<int64_t> &idx) {
  int64_t o = 0;
  for (size_t k = 0; k < shape.size(); ++k) o = o * shape[k] + idx[k];
  return o;
}

// `t` zero-padded to `shape` (each dim at least t's).
tuner::HostTensor padded(const tuner::HostTensor &t, const std::vector<int64_t> &shape) {
  tuner::HostTensor r = t;
  const size_t e = tuner::dtypeSize(t.dtype);
  r.shape = shape;
  r.data.assign(size_t(tuner::numElements(shape)) * e, 0);
  forEachIndex(t.shape, [&](const std::vector<int64_t> &idx) {
    std::copy_n(t.data.begin() + offsetIn(t.shape, idx) * int64_t(e), e,
                r.data.begin() + offsetIn(shape, idx) * int64_t(e));
  });
  return r;
}

// Whether dim `g` may be padded: the model on random inputs with every dim at its min, against
// the model with dim g one larger, the same inputs zero-padded and the outputs cut back. "" if
// the outputs agree (1e-5 of their largest magnitude), else why not.
std::string padCheck(const ModelOptions &model, const Shapes &opt, const std::vector<Group> &groups, size_t g) {
  std::vector<int64_t> small, large;
  for (const Group &x : groups) small.push_back(x.min);
  large = small;
  large[g] += 1;
  std::string error;
  std::vector<tuner::HostTensor> outSmall, outLarge, inLarge;
  {
    mlir::MLIRContext ctx;
    codegen::ModelBuild m;
    mlir::func::FuncOp f = importAt(model, shapesAt(opt, groups, small), {}, ctx, m, error);
    if (!f) return "the model does not import at its min shapes: " + error;
    std::vector<tuner::HostTensor> in = tuner::randomInputs(modelInputs(f), 7);
    if (!evaluateModel(f, in, outSmall, error)) return error;
    Shapes big = shapesAt(opt, groups, large);
    for (const tuner::HostTensor &t : in) inLarge.push_back(padded(t, big.at(t.name)));
  }
  mlir::MLIRContext ctx;
  codegen::ModelBuild m;
  mlir::func::FuncOp f = importAt(model, shapesAt(opt, groups, large), {}, ctx, m, error);
  if (!f) return "the model does not import with " + groups[g].name + " = " + std::to_string(large[g]) + ": " + error;
  if (!evaluateModel(f, inLarge, outLarge, error)) return error;
  for (size_t o = 0; o < outSmall.size() && o < outLarge.size(); ++o) {
    const tuner::HostTensor &a = outSmall[o], &b = outLarge[o];
    if (a.shape.size() != b.shape.size()) return "output '" + a.name + "' changes rank";
    for (size_t k = 0; k < a.shape.size(); ++k)
      if (b.shape[k] < a.shape[k]) return "output '" + a.name + "' gets smaller";
    double scale = 0, worst = 0;
    forEachIndex(a.shape, [&](const std::vector<int64_t> &idx) {
      double x = tuner::elementAsDouble(a, offsetIn(a.shape, idx)),
             y = tuner::elementAsDouble(b, offsetIn(b.shape, idx));
      scale = std::max(scale, std::fabs(x));
      worst = std::max(worst, std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(x - y));
    });
    if (!(worst <= 1e-5 * scale + 1e-7)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g", worst);
      return "output '" + a.name + "' changes by " + buf + " when " + groups[g].name + " is padded from " +
             std::to_string(small[g]) + " to " + std::to_string(large[g]) + " (an op mixes values along it)";
    }
  }
  return "";
}

// Merges specialisations into the first one's engine: modules, kernels and weight regions (a
// constant from its start to the next one's) that are byte-identical are stored once (found by
// hash, then compared byte for byte).
class Merger {
 public:
  Merger(rt::EngineDesc &out, const std::vector<uint64_t> &starts) : out_(out) {
    for (size_t i = 0; i < out_.modules.size(); ++i) moduleByKey_[moduleKey(out_.modules[i])].push_back(int32_t(i));
    for (size_t i = 0; i < out_.kernels.size(); ++i)
      kernelByKey_[{out_.kernels[i].module, out_.kernels[i].entry}] = int32_t(i);
    for (size_t i = 0; i < starts.size(); ++i) {
      uint64_t end = i + 1 < starts.size() ? starts[i + 1] : out_.weights.size();
      regionByKey_[regionKey(out_.weights.data() + starts[i], end - starts[i])].push_back(starts[i]);
    }
  }

  void add(rt::EngineDesc &d, const std::vector<uint64_t> &starts, std::vector<int64_t> values) {
    std::vector<int32_t> module(d.modules.size()), kernel(d.kernels.size());
    for (size_t i = 0; i < d.modules.size(); ++i) {
      std::vector<int32_t> &same = moduleByKey_[moduleKey(d.modules[i])];
      auto it = std::find_if(same.begin(), same.end(), [&](int32_t m) {
        return out_.modules[size_t(m)].cubin == d.modules[i].cubin && out_.modules[size_t(m)].ptx == d.modules[i].ptx;
      });
      if (it == same.end()) {
        same.push_back(int32_t(out_.modules.size()));
        out_.modules.push_back(std::move(d.modules[i]));
        it = same.end() - 1;
      }
      module[i] = *it;
    }
    for (size_t i = 0; i < d.kernels.size(); ++i) {
      rt::KernelDesc k = d.kernels[i];
      k.module = module[size_t(k.module)];
      auto [it, added] = kernelByKey_.emplace(std::make_pair(k.module, k.entry), int32_t(out_.kernels.size()));
      if (added) out_.kernels.push_back(k);
      kernel[i] = it->second;
    }
    std::vector<uint64_t> moved(starts.size());
    for (size_t i = 0; i < starts.size(); ++i) {
      const uint64_t end = i + 1 < starts.size() ? starts[i + 1] : d.weights.size(), n = end - starts[i];
      const uint8_t *bytes = d.weights.data() + starts[i];
      std::vector<uint64_t> &same = regionByKey_[regionKey(bytes, n)];
      auto it = std::find_if(same.begin(), same.end(),
                             [&](uint64_t at) { return std::memcmp(out_.weights.data() + at, bytes, n) == 0; });
      if (it == same.end()) {
        same.push_back((out_.weights.size() + 63) / 64 * 64);
        out_.weights.resize(same.back());
        out_.weights.insert(out_.weights.end(), bytes, bytes + n);
        it = same.end() - 1;
      }
      moved[i] = *it;
    }
    auto relocate = [&](rt::BufferRef &b) {
      if (b.space != rt::BufferRef::Space::Weights || starts.empty()) return;
      size_t i = size_t(std::upper_bound(starts.begin(), starts.end(), b.offset) - starts.begin()) - 1;
      b.offset = moved[i] + (b.offset - starts[i]);
    };
    for (rt::Launch &l : d.launches) {
      if (l.kind == rt::Launch::Kind::Kernel) l.kernel = kernel[size_t(l.kernel)];
      for (rt::LaunchArg &a : l.args)
        if (rt::BufferRef *b = a.bufferRef()) relocate(*b);
      relocate(l.src), relocate(l.dst);
      for (rt::BufferRef *b :
           {&l.gemm.a, &l.gemm.b, &l.gemm.c, &l.gemm.d, &l.gemm.bias, &l.gemm.scaleA, &l.gemm.scaleB})
        relocate(*b);
    }
    out_.gemmSearch = out_.gemmSearch || d.gemmSearch;
    // (one arch-specific specialisation — sm_90a kernels for its larger products — makes the
    // whole engine so)
    if (d.arch == target::archSpecificName(out_.arch)) out_.arch = d.arch;
    out_.specialisations.push_back({std::move(values), d.arenaBytes, std::move(d.launches)});
  }

 private:
  static std::string moduleKey(const rt::ModuleDesc &m) {
    return rt::fnv1a64Hex(m.cubin.data(), m.cubin.size()) + "/" + std::to_string(m.cubin.size()) + "/" +
           rt::fnv1a64Hex(m.ptx.data(), m.ptx.size()) + "/" + std::to_string(m.ptx.size());
  }
  static std::string regionKey(const uint8_t *p, uint64_t n) { return rt::fnv1a64Hex(p, n) + "/" + std::to_string(n); }

  rt::EngineDesc &out_;
  std::map<std::string, std::vector<int32_t>> moduleByKey_;
  std::map<std::pair<int32_t, std::string>, int32_t> kernelByKey_;
  std::map<std::string, std::vector<uint64_t>> regionByKey_;
};

}  // namespace

void ProfileOptions::add(CLI::App &cmd, const std::string &optRole) {
  const std::string more = " (repeat the three flags for more profiles, in order)";
  cmd.add_option("--min-shapes", minShapes,
                 "Dynamic shapes: the smallest input shapes, as --shapes (x:1x3x224x224 or batch=1); with "
                 "--opt-shapes and --max-shapes" +
                     more)
      ->allow_extra_args(false);
  cmd.add_option("--opt-shapes", optShapes, "Dynamic shapes: " + optRole)->allow_extra_args(false);
  cmd.add_option("--max-shapes", maxShapes, "Dynamic shapes: the largest input shapes")->allow_extra_args(false);
}

std::string ProfileOptions::problem(const std::string &shapes) const {
  if (!any()) return "";
  if (!shapes.empty()) return "--shapes and --min/--opt/--max-shapes do not mix: give the profile's shapes";
  if (minShapes.empty() || optShapes.empty() || maxShapes.empty())
    return "a profile needs all three of --min-shapes, --opt-shapes and --max-shapes";
  if (minShapes.size() != optShapes.size() || optShapes.size() != maxShapes.size())
    return "each profile needs all three of --min-shapes, --opt-shapes and --max-shapes, but they are given " +
           std::to_string(minShapes.size()) + ", " + std::to_string(optShapes.size()) + " and " +
           std::to_string(maxShapes.size()) + " times";
  return "";
}

void buildProfileEngine(const ModelOptions &model, const ProfileOptions &profile, const codegen::BuildOptions &options,
                        codegen::ModelBuild &build, ProfileReport &report) {
  auto fail = [&](const std::string &e) { build.error = e; };
  if (std::string e = profile.problem(model.shapes); !e.empty() || !profile.any())
    return fail(e.empty() ? "no profile given" : e);
  const size_t numProfiles = profile.count();
  const char *flags[3] = {"--min-shapes", "--opt-shapes", "--max-shapes"};
  // "--min-shapes" or, with several profiles, "--min-shapes of profile 1".
  auto flagOf = [&](size_t p, int bound) {
    return std::string(flags[bound]) + (numProfiles > 1 ? " of profile " + std::to_string(p) : "");
  };
  std::vector<std::array<ImportOptions, 3>> given(numProfiles);  // per profile: min, opt, max
  for (size_t p = 0; p < numProfiles; ++p)
    for (int b = 0; b < 3; ++b) {
      const std::string &text = (b == 0 ? profile.minShapes : b == 1 ? profile.optShapes : profile.maxShapes)[p];
      if (auto e = parseShapeOverrides(text, given[p][size_t(b)]); !e.empty()) return fail(flagOf(p, b) + ": " + e);
    }

  // The model at the first profile's opt shapes: its inputs, their shapes and declared dim names.
  Shapes opt;
  std::map<std::string, std::vector<std::string>> dimNames;
  {
    mlir::MLIRContext ctx;
    codegen::ModelBuild m;
    std::string error;
    mlir::func::FuncOp f = importAt(model, given[0][1].shapes, given[0][1].dims, ctx, m, error);
    if (!f) return fail("at the " + flagOf(0, 1) + ": " + error);
    build.import.warnings = m.import.warnings;
    dimNames = m.import.inputDimNames;
    for (const tuner::HostTensor &t : modelInputs(f)) opt[t.name] = t.shape;
  }
  std::set<std::string> known;
  for (const auto &[input, names] : dimNames) known.insert(names.begin(), names.end());
  known.erase("");
  // Every profile's min, opt and max as whole shapes: what a flag gives, else the first opt's.
  std::vector<std::array<Shapes, 3>> at(numProfiles);
  for (size_t p = 0; p < numProfiles; ++p)
    for (int b = 0; b < 3; ++b) {
      const ImportOptions &io = given[p][size_t(b)];
      const std::string flag = flagOf(p, b);
      for (const auto &[name, shape] : io.shapes)
        if (!opt.count(name)) return fail(flag + " names '" + name + "', which is not a graph input");
      for (const auto &[dim, value] : io.dims)
        if (!known.count(dim)) {
          std::string list;
          for (const std::string &k : known) list += (list.empty() ? "" : ", ") + k;
          return fail(
              flag + " sets dimension '" + dim + "', which no graph input has (" +
              (list.empty() ? std::string("they have no named dimensions") : "their named dimensions: " + list) + ")");
        }
      for (const auto &[name, shape] : opt) {
        std::vector<int64_t> s = shape;
        const std::vector<std::string> &names = dimNames[name];
        if (auto it = io.shapes.find(name); it != io.shapes.end()) {
          if (it->second.size() != shape.size())
            return fail(flag + " gives input '" + name + "' rank " + std::to_string(it->second.size()) +
                        ", the model's is " + std::to_string(shape.size()));
          s = it->second;
        } else {
          for (size_t k = 0; k < s.size(); ++k)
            if (k < names.size() && io.dims.count(names[k])) s[k] = io.dims.at(names[k]);
        }
        at[p][size_t(b)][name] = s;
      }
    }

  // The dims: input axes whose range is not one value in some profile, or that differ between
  // profiles, shared by ONNX dim name.
  std::vector<Group> groups;
  for (const auto &[name, shape] : opt)
    for (size_t k = 0; k < shape.size(); ++k) {
      std::string where = "input '" + name + "' axis " + std::to_string(k);
      std::vector<ProfileReport::Range> ranges;
      bool varies = false;
      for (size_t p = 0; p < numProfiles; ++p) {
        int64_t a = at[p][0][name][k], o = at[p][1][name][k], b = at[p][2][name][k];
        if (a < 1 || a > o || o > b)
          return fail(where + (numProfiles > 1 ? " in profile " + std::to_string(p) : std::string()) + ": min " +
                      std::to_string(a) + ", opt " + std::to_string(o) + ", max " + std::to_string(b) +
                      " is not 1 <= min <= opt <= max");
        varies = varies || a != b || o != shape[k];
        ranges.push_back({a, o, b, {}});
      }
      if (!varies) continue;
      const std::string &dn = k < dimNames[name].size() ? dimNames[name][k] : std::string();
      std::string key = dn.empty() ? name + ":" + std::to_string(k) : dn;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group &x) { return x.name == key; });
      if (g == groups.end()) {
        Group n{key, ranges[0].min, ranges[0].max, ranges, {}};
        for (const ProfileReport::Range &r : ranges) n.min = std::min(n.min, r.min), n.max = std::max(n.max, r.max);
        groups.push_back(n);
        g = groups.end() - 1;
      } else {
        for (size_t p = 0; p < numProfiles; ++p) {
          const ProfileReport::Range &r = ranges[p], &h = g->ranges[p];
          if (r.min != h.min || r.opt != h.opt || r.max != h.max)
            return fail(where + " is dim '" + key + "' with the range " + std::to_string(r.min) + ".." +
                        std::to_string(r.max) + " (opt " + std::to_string(r.opt) + ")" +
                        (numProfiles > 1 ? " in profile " + std::to_string(p) : std::string()) +
                        ", but another input gives it " + std::to_string(h.min) + ".." + std::to_string(h.max) +
                        " (opt " + std::to_string(h.opt) + ")");
        }
      }
      g->axes.push_back({name, k});
    }
  if (groups.empty()) return fail("the profile's min and max shapes are the same: compile with --shapes instead");
  auto tooMany = [&](size_t count, const std::string &what) {
    return fail("the profile" + std::string(numProfiles > 1 ? "s need " : " needs ") + std::to_string(count) +
                " specialisations" + what + ", more than --max-specialisations " +
                std::to_string(profile.maxSpecialisations) + "; narrow the ranges or raise it");
  };
  for (size_t p = 0; p < numProfiles; ++p) {
    size_t count = 1;
    std::string what;
    for (Group &g : groups) {
      ProfileReport::Range &r = g.ranges[p];
      std::set<int64_t> b = {r.min, r.opt, r.max};
      for (int64_t v = 1; v < r.max; v *= 2)
        if (v > r.min) b.insert(v);
      r.buckets.assign(b.begin(), b.end());
      count *= r.buckets.size();
      what += (what.empty() ? "" : " x ") + std::to_string(r.buckets.size()) + " " + g.name;
    }
    if (count > size_t(profile.maxSpecialisations))
      return tooMany(count, " (" + what + (numProfiles > 1 ? " in profile " + std::to_string(p) : "") + ")");
  }

  // The specialisations: the first profile's opt values first, then every other combination of
  // each profile's buckets (a combination that two profiles share is built once).
  std::vector<std::vector<int64_t>> specs;
  std::map<std::vector<int64_t>, int32_t> specIndex;
  std::vector<std::vector<int32_t>> profileSpecs(numProfiles);
  auto addSpec = [&](const std::vector<int64_t> &v, size_t p) {
    auto [it, added] = specIndex.emplace(v, int32_t(specs.size()));
    if (added) specs.push_back(v);
    if (std::find(profileSpecs[p].begin(), profileSpecs[p].end(), it->second) == profileSpecs[p].end())
      profileSpecs[p].push_back(it->second);
  };
  for (size_t p = 0; p < numProfiles; ++p) {
    std::vector<int64_t> optValues;
    for (const Group &g : groups) optValues.push_back(g.ranges[p].opt);
    addSpec(optValues, p);
    std::vector<size_t> pick(groups.size(), 0);
    for (bool more = true; more;) {
      std::vector<int64_t> v;
      for (size_t g = 0; g < groups.size(); ++g) v.push_back(groups[g].ranges[p].buckets[pick[g]]);
      addSpec(v, p);
      more = false;
      for (size_t g = groups.size(); g-- > 0 && !more;)
        if (++pick[g] < groups[g].ranges[p].buckets.size())
          more = true;
        else
          pick[g] = 0;
    }
    std::sort(profileSpecs[p].begin(), profileSpecs[p].end());
  }
  if (specs.size() > size_t(profile.maxSpecialisations)) return tooMany(specs.size(), " in all");

  // Padding, per dim, checked on the CPU evaluator at the min shapes.
  report.dims.clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    ProfileReport::Dim d{groups[g].name, groups[g].ranges, false, ""};
    if (!profile.pad)
      d.noPad = "--no-pad";
    else if ((d.noPad = padCheck(model, opt, groups, g)).empty())
      d.pad = true;
    report.dims.push_back(d);
  }

  // Build the specialisations, several at once where cores and memory allow, and merge them in
  // order (so the engine is the same whatever the parallelism). Each build holds its module and
  // engine until merged: a batch of `width` at a time bounds the memory.
  auto label = [&](size_t s) {
    std::string l;
    for (size_t g = 0; g < groups.size(); ++g)
      l += (g ? ", " : "") + groups[g].name + "=" + std::to_string(specs[s][g]);
    return l;
  };
  unsigned width = specialisationWidth(options.jobs, specs.size(), model.model);
  codegen::BuildOptions specOptions = options;
  if (width > 1)
    specOptions.progress = nullptr, specOptions.onPhase = nullptr;  // (one line per specialisation instead)
  struct Built {
    std::string error;
    codegen::BuildResult engine;
    std::vector<std::string> remarks;
    std::vector<std::pair<std::string, double>> phases;
  };
  std::mutex printing;
  auto buildOne = [&](size_t s, Built &out) {
    if (width == 1)
      info(0, "specialisation " + std::to_string(s + 1) + "/" + std::to_string(specs.size()) + ": " + label(s));
    ImportOptions io;
    if (auto e = model.importOptions(io); !e.empty()) return void(out.error = e);
    io.shapes = shapesAt(opt, groups, specs[s]);
    mlir::MLIRContext ctx(width > 1 ? mlir::MLIRContext::Threading::DISABLED : mlir::MLIRContext::Threading::ENABLED);
    codegen::ModelBuild m = codegen::buildModel(model.model, io, specOptions, ctx);
    out.error = m.error, out.engine = std::move(m.engine), out.remarks = std::move(m.remarks);
    out.phases = std::move(m.phases);
    if (width > 1) {
      std::lock_guard<std::mutex> lock(printing);
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f s", m.seconds);
      info(0, "specialisation " + std::to_string(s + 1) + "/" + std::to_string(specs.size()) + " (" + label(s) +
                  ") built in " + secs);
    }
  };
  if (width > 1)
    info(0, "building " + std::to_string(specs.size()) + " specialisations, " + std::to_string(width) + " at a time");

  rt::EngineDesc merged;
  std::unique_ptr<Merger> merger;
  codegen::BuildStats &stats = build.engine.stats;
  std::vector<std::vector<std::vector<int64_t>>> ioShapes;  // per specialisation, per I/O tensor
  std::map<std::string, double> phases;
  for (size_t first = 0; first < specs.size(); first += width) {
    std::vector<Built> batch(std::min<size_t>(width, specs.size() - first));
    support::parallelFor(batch.size(), width, [&](size_t i) { buildOne(first + i, batch[i]); });
    for (size_t i = 0; i < batch.size(); ++i) {
      size_t s = first + i;
      Built &m = batch[i];
      if (!m.error.empty()) return fail("specialisation " + label(s) + ": " + m.error);
      for (auto &[phase, secs] : m.phases) phases[phase] += secs;
      if (s == 0) build.remarks = m.remarks;
      rt::EngineDesc d;
      std::string err;
      if (rt::parseEngine(m.engine.engine.data(), m.engine.engine.size(), d, err) != rt::ParseStatus::Ok)
        return fail("internal error: specialisation " + label(s) + " does not parse: " + err);
      if (s) {  // the same I/O table but for the dims' values
        bool same = d.io.size() == merged.io.size();
        for (size_t k = 0; same && k < d.io.size(); ++k)
          same = d.io[k].name == merged.io[k].name && d.io[k].isInput == merged.io[k].isInput &&
                 d.io[k].dtype == merged.io[k].dtype && d.io[k].shape.size() == merged.io[k].shape.size();
        if (!same)
          return fail("specialisation " + label(s) + " has other inputs or outputs (names, dtypes or ranks) than at " +
                      "the opt shapes (a Squeeze of an axis that is 1 at some shapes?); narrow the profile");
      }
      ioShapes.emplace_back();
      for (const rt::IoTensor &t : d.io) ioShapes.back().push_back(t.shape);
      stats.cacheHits += m.engine.stats.cacheHits, stats.compiled += m.engine.stats.compiled;
      stats.compileSeconds += m.engine.stats.compileSeconds;
      stats.arenaBytes = std::max(stats.arenaBytes, m.engine.stats.arenaBytes);
      if (s) {
        merger->add(d, m.engine.weightStarts, specs[s]);
        m = Built{};  // (its bytes are merged: free them before the next batch)
        continue;
      }
      merged = std::move(d);
      stats.launches = m.engine.stats.launches;
      merger = std::make_unique<Merger>(merged, m.engine.weightStarts);
      for (size_t g = 0; g < groups.size(); ++g) {
        rt::ProfileDim pd{groups[g].name, groups[g].min,      groups[g].ranges[0].opt,
                          groups[g].max,  report.dims[g].pad, {}};
        for (const auto &[input, axis] : groups[g].axes)
          for (size_t k = 0; k < merged.io.size(); ++k)
            if (merged.io[k].name == input) pd.axes.push_back({int32_t(k), int32_t(axis)});
        merged.dims.push_back(pd);
      }
    }
  }
  // Outputs: an axis that varies between specialisations must be one of the dims, or a fixed
  // fraction or multiple of one (a recognizer's sequence of width / 8), which that dim's padding
  // cannot keep (the runtime then takes the values built only).
  for (size_t i = 0; i < merged.io.size(); ++i) {
    if (merged.io[i].isInput) continue;
    for (size_t k = 0; k < merged.io[i].shape.size(); ++k) {
      auto valueIn = [&](size_t s) { return ioShapes[s][i][k]; };
      bool varies = false;
      for (size_t s = 1; s < specs.size(); ++s) varies = varies || valueIn(s) != valueIn(0);
      if (!varies) continue;
      size_t g = 0;
      rt::DimAxis axis{int32_t(i), int32_t(k)};
      for (; g < groups.size(); ++g) {  // the dim whose value · num / den it is in every specialisation
        int64_t n = valueIn(0), d = specs[0][g], common = std::gcd(n, d);
        axis.num = common ? n / common : 0, axis.den = common ? d / common : 0;
        bool same = axis.num >= 1 && axis.den >= 1 && axis.num <= rt::kMaxAxisRatio && axis.den <= rt::kMaxAxisRatio;
        for (size_t s = 0; s < specs.size() && same; ++s)
          same = axis.whole(specs[s][g]) && axis.at(specs[s][g]) == valueIn(s);
        if (same) break;
      }
      if (g == groups.size()) {
        std::string values;
        for (size_t s = 0; s < specs.size() && s < 6; ++s) values += (s ? ", " : "") + std::to_string(valueIn(s));
        return fail("output '" + merged.io[i].name + "' axis " + std::to_string(k) +
                    " changes with the input shapes but is neither one of the profile's dims nor a fixed fraction or " +
                    "multiple of one (it is " + values + (specs.size() > 6 ? ", ..." : "") +
                    " in the specialisations); kiln cannot describe it yet");
      }
      merged.dims[g].axes.push_back(axis);
      if (axis.scaled() && merged.dims[g].pad) {
        merged.dims[g].pad = report.dims[g].pad = false;
        report.dims[g].noPad = "output '" + merged.io[i].name + "' axis " + std::to_string(k) + " is " +
                               scaledAxisText(groups[g].name, axis);
      }
    }
  }
  if (numProfiles > 1)
    for (size_t p = 0; p < numProfiles; ++p) {
      rt::Profile pr;
      for (const Group &g : groups)
        pr.min.push_back(g.ranges[p].min), pr.opt.push_back(g.ranges[p].opt), pr.max.push_back(g.ranges[p].max);
      pr.specialisations = profileSpecs[p];
      merged.profiles.push_back(std::move(pr));
    }
  if (auto e = rt::checkEngineDesc(merged); !e.empty())
    return fail("internal error: the merged engine does not validate: " + e);
  build.engine.engine = rt::writeEngine(merged);
  build.engine.weightStarts.clear();
  stats.uniqueKernels = merged.kernels.size();
  stats.weightsBytes = merged.weights.size();
  stats.arch = merged.arch;
  for (const char *phase : {"import", "passes", "codegen", "kernels"})
    if (phases.count(phase)) build.phases.push_back({phase, phases[phase]});
  report.specialisations = specs.size();
}

std::string scaledAxisText(const std::string &dim, const rt::DimAxis &axis) {
  return dim + (axis.num != 1 ? " * " + std::to_string(axis.num) : "") +
         (axis.den != 1 ? " / " + std::to_string(axis.den) : "");
}

}  // namespace kiln::cli
