// Importing a model for a CLI command: parse --shapes, import, run the cleanup pipeline, and
// print errors the same way everywhere.
#pragma once

#include "compiler/target/GpuTarget.h"
#include "compiler/importer/Importer.h"
#include "compiler/knobs/Knob.h"
#include "tools/kiln/Commands.h"

#include "mlir/IR/MLIRContext.h"

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

struct LoadedModel {
  ImportResult import;
  bool ok() const { return import.module && import.error.empty(); }
};

// The importer's options for a model: --shapes parsed, --allow-external-outside. False with
// `error` on a bad --shapes.
bool importOptions(const ModelOptions &opts, ImportOptions &io, std::string &error);

// On failure prints "kiln: error: ..." to stderr and returns a result with !ok().
LoadedModel loadModel(const ModelOptions &opts, mlir::MLIRContext &ctx, bool cleanup = true);

// The build route of --route and --precision (a shorthand for the precision knob; it may not
// contradict the route). False with an error message on a bad route.
bool parseRoute(const std::string &route, const std::string &precision, knobs::Route &out, std::string &error);

// The model file's hash (FNV-1a 64, hex), as calibration files record it; "" when unreadable.
std::string modelFileHash(const std::string &path);

// Whether `calib` is a readable calibration file made for the model at `model` (its hash).
bool checkCalibration(const std::string &calib, const std::string &model, std::string &error);

// The int8 flags of compile and eval against the route: int8 in the route needs --calib (made
// for this model), --calib needs int8 in the route, --keep-float needs --calib.
bool checkQuantFlags(const knobs::Route &route, const std::string &calib, const std::string &keepFloat,
                     const std::string &model, std::string &error);

// `--arch` as a target: an architecture kiln knows and the installed NVRTC compiles for; the
// error otherwise.
std::string parseTarget(const std::string &arch, target::GpuTarget &out);
// A command's --json document: 2-space indent; bytes that are not UTF-8 (a name from a hostile
// file) become U+FFFD instead of aborting the dump. Control characters are escaped by JSON itself.
std::string jsonText(const nlohmann::json &j);

std::string humanBytes(int64_t b);
std::string humanCount(double v);  // 1.2 G, 340 M

}  // namespace kiln::cli
