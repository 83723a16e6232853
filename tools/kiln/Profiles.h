// Dynamic shapes at build time: one engine for a range of input shapes (trtexec's optimization
// profile, --min-shapes/--opt-shapes/--max-shapes). The compiler's kernels are specialised to
// static shapes, so the engine holds one specialisation per bucket of each profile dim (its min,
// opt and max and the powers of two between), built by the ordinary pipeline and merged: kernels
// and weights they have in common are stored once. Whether a value between two buckets may run
// zero-padded on the larger one is checked per dim on the CPU evaluator (docs/architecture.md,
// "Dynamic shapes").
#pragma once

#include "codegen/lowering/ModelBuild.h"
#include "runtime/format/EngineFormat.h"
#include "tools/kiln/Commands.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cli {

struct ProfileOptions {
  // One entry per profile (each flag repeated, in order), as --shapes: "x:1x3x224x224,..." or
  // "batch=1,...".
  std::vector<std::string> minShapes, optShapes, maxShapes;
  bool pad = true;  // allow padding where the evaluator check passes
  int maxSpecialisations = 64;
  bool any() const { return !minShapes.empty() || !optShapes.empty() || !maxShapes.empty(); }
  size_t count() const { return optShapes.size(); }
  // Registers --min-shapes, --opt-shapes and --max-shapes; `optRole` says what the command does
  // at the opt shapes.
  void add(CLI::App &cmd, const std::string &optRole);
  // "" when no profile is given, or all three shapes are, as often each, and `shapes` (--shapes)
  // is empty; else the error.
  std::string problem(const std::string &shapes) const;
};

// What the profile build did, for kiln compile's report.
struct ProfileReport {
  struct Range {  // a dim in one profile
    int64_t min = 0, opt = 0, max = 0;
    std::vector<int64_t> buckets;
  };
  struct Dim {
    std::string name;
    std::vector<Range> ranges;  // per profile
    bool pad = false;
    std::string noPad;  // why padding is off
  };
  std::vector<Dim> dims;
  size_t specialisations = 0;
};

// Builds `model` for the profile with `options` (route, target, cache, progress): every
// specialisation through codegen::buildModel, then the merge. `build` gets the first
// specialisation's import and remarks, phases summed over all, and the merged engine's bytes and
// stats; on failure build.error names the input, dim or specialisation.
void buildProfileEngine(const ModelOptions &model, const ProfileOptions &profile, const codegen::BuildOptions &options,
                        codegen::ModelBuild &build, ProfileReport &report);

// A scaled dim axis's length in words: "width / 8", "seq * 2 / 3" (`dim`: the dim's name).
std::string scaledAxisText(const std::string &dim, const rt::DimAxis &axis);

}  // namespace kiln::cli
