#include "tools/kiln/ModelLoading.h"

#include "codegen/nvrtc/Nvrtc.h"
#include "compiler/quant/Calibration.h"
#include "compiler/support/Files.h"
#include "passes/Passes.h"
#include "runtime/format/EngineFormat.h"
#include "tuner/TensorFiles.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

namespace kiln::cli {

void ModelOptions::add(CLI::App &cmd) {
  cmd.add_option("model", model, "ONNX model (.onnx, or text format .onnxtxt)")->required();
  cmd.add_option("--shapes", shapes,
                 "Input shapes, e.g. x:1x3x224x224,mask:1x128 (overrides the model's), or symbolic dimensions by name, "
                 "e.g. batch=8,sequence=128 (both forms may be mixed)");
  cmd.add_option("--constant-inputs", constantInputs,
                 "Bind graph inputs to these values at build time (.npz, arrays named after the inputs): they "
                 "become constants (an If on them folds to its branch) and leave the engine's I/O table");
  addExternalFlag(cmd);
}

void ModelOptions::addExternalFlag(CLI::App &cmd) {
  cmd.add_flag("--allow-external-outside", allowExternalOutside,
               "Read external data outside the model's folder too (absolute locations, '..', symbolic links "
               "leading out)");
}

std::string ModelOptions::importOptions(ImportOptions &io) const {
  io.allowExternalOutside = allowExternalOutside;
  if (auto e = parseShapeOverrides(shapes, io); !e.empty()) return e;
  if (constantInputs.empty()) return "";
  std::vector<tuner::HostTensor> arrays;
  std::string error;
  if (!tuner::readTensors(constantInputs, arrays, error)) return "--constant-inputs: " + error;
  for (const tuner::HostTensor &t : arrays)
    io.constantInputs[t.name] = ops::tensorFromBytes(ops::DType(t.dtype), t.shape, t.data.data(), t.data.size());
  return "";
}

LoadedModel loadModel(const ModelOptions &opts, mlir::MLIRContext &ctx, bool cleanup) {
  LoadedModel m;
  ImportOptions io;
  if (auto err = opts.importOptions(io); !err.empty()) {
    std::cerr << "kiln: error: " << err << "\n";
    m.import.error = err;
    return m;
  }
  m.import = importModelFile(opts.model, ctx, io);
  for (auto &w : m.import.warnings) warning(w);
  if (!m.import.error.empty()) {
    std::cerr << "kiln: error: " << opts.model << ": " << m.import.error << "\n";
    return m;
  }
  if (cleanup) {
    std::string diag;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      llvm::raw_string_ostream os(diag);
      os << d << "\n";
      return mlir::success();
    });
    mlir::PassManager pm(&ctx);
    buildImportCleanupPipeline(pm);
    if (mlir::failed(pm.run(*m.import.module))) {
      m.import.error = diag;
      std::cerr << "kiln: error: " << opts.model << ": " << diag;
    }
  }
  return m;
}

bool parseRoute(const std::string &route, const std::string &precision, knobs::Route &out, std::string &error) {
  if (!knobs::Route::parse(route, &out, &error)) {
    error = "--route: " + error;
    return false;
  }
  if (precision.empty()) return true;
  const knobs::KnobDef *p = knobs::findKnob("precision");
  if (route.find("precision") != std::string::npos && out.values().count("precision") && out.get(*p) != precision) {
    error = "--precision " + precision + " contradicts the route's precision=" + out.get(*p);
    return false;
  }
  if (!out.set("precision", precision, &error)) {
    error = "--precision: " + error;
    return false;
  }
  return true;
}

std::string parseTarget(const std::string &arch, target::GpuTarget &out) {
  std::string error;
  auto t = target::GpuTarget::parse(arch, error);
  if (!t) return error;
  if (error = codegen::validateArch(arch); !error.empty()) return error;
  out = *t;
  return "";
}

std::string jsonText(const nlohmann::json &j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string humanBytes(int64_t b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string humanCount(double v) {
  const char *units[] = {"", " K", " M", " G", " T", " P"};
  int u = 0;
  while (v >= 1000 && u < 5) v /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
  return buf;
}

// The model file's hash, as calibration files record it ("" when unreadable).
std::string modelFileHash(const std::string &path) {
  std::vector<uint8_t> bytes;
  std::string error;
  if (!support::readFile(path, bytes, error)) return "";
  return rt::fnv1a64Hex(bytes.data(), bytes.size());
}

bool checkCalibration(const std::string &calib, const std::string &model, std::string &error) {
  quant::CalibrationTable table;
  if (!quant::readCalibration(calib, table, error)) return false;
  std::string hash = modelFileHash(model);
  if (table.modelHash != hash) {
    error = calib + " was made for another model (hash " + table.modelHash + ", '" + model + "' has " + hash + ")";
    return false;
  }
  return true;
}

bool checkQuantFlags(const knobs::Route &route, const std::string &calib, const std::string &keepFloat,
                     const std::string &model, std::string &error) {
  bool quantizes = routeQuantizes(route);
  if (quantizes && calib.empty())
    error = "precision int8/fp8 needs --calib FILE (made by `kiln calibrate` for this model)";
  else if (!quantizes && !calib.empty())
    error =
        "--calib applies to int8 and fp8: add --precision int8|fp8 (or node.<name>.precision=int8|fp8 to the route)";
  else if (!keepFloat.empty() && calib.empty())
    error = "--keep-float applies to --calib";
  else if (!calib.empty())
    return checkCalibration(calib, model, error);
  return error.empty();
}

}  // namespace kiln::cli
