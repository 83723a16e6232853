// `kiln calibrate MODEL --data DIR|FILE.npz -o model.calib`: activation ranges for int8/fp8
// post-training quantization, collected on the CPU reference evaluator (see compiler/quant).
#include "codegen/lowering/ModelBuild.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/quant/Calibration.h"
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/Evaluate.h"
#include "tools/kiln/ModelLoading.h"
#include "tuner/TensorFiles.h"

#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace kiln::cli {

namespace {

// The .npz batches of --data: the file itself, or every *.npz of the folder in name order.
bool batchFiles(const std::string &data, std::vector<std::string> &files, std::string &error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(data, ec)) {
    for (const auto &e : fs::directory_iterator(data, ec))
      if (e.path().extension() == ".npz") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) error = "no .npz files in '" + data + "'";
  } else if (fs::exists(data, ec)) {
    files.push_back(data);
  } else {
    error = "'" + data + "' does not exist";
  }
  return error.empty();
}

}  // namespace

Runner addCalibrateCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("calibrate", "Collect activation ranges for int8/fp8 quantization (CPU evaluator)");
  auto opts = std::make_shared<ModelOptions>();
  auto data = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto method = std::make_shared<std::string>("entropy");
  auto percentileText = std::make_shared<std::string>("99.99");
  auto json = std::make_shared<bool>(false);
  opts->add(*cmd);
  cmd->add_option("--data", *data, "Calibration batches: an .npz (arrays named after the inputs) or a folder of them")
      ->required();
  cmd->add_option("--method", *method, "Threshold: minmax, percentile or entropy")->capture_default_str();
  cmd->add_option("--percentile", *percentileText, "For --method percentile: the share of |x| kept, in (0, 100]")
      ->capture_default_str();
  cmd->add_option("-o,--output", *out, "Calibration file to write")->required();
  cmd->add_flag("--json", *json, "Print a JSON summary");
  return [=]() -> int {
    if (!*cmd) return -1;
    quant::Method m;
    if (!quant::parseMethod(*method, m)) {
      std::cerr << "kiln: error: unknown --method '" << *method << "' (minmax, percentile, entropy)\n";
      return 2;
    }
    // Every option is checked before any work: a NaN or out-of-range percentile would write a
    // file kiln cannot read back, or wrong ranges.
    char *end = nullptr;
    const double percentile = std::strtod(percentileText->c_str(), &end);
    if (percentileText->empty() || *end || !std::isfinite(percentile) || percentile <= 0 || percentile > 100) {
      std::cerr << "kiln: error: --percentile: " << *percentileText << " is not a percentage in (0, 100]\n";
      return 2;
    }
    if (cmd->count("--percentile") && m != quant::Method::Percentile) {
      std::cerr << "kiln: error: --percentile applies to --method percentile (the method is " << *method << ")\n";
      return 2;
    }
    std::string error;
    std::vector<std::string> files;
    if (!batchFiles(*data, files, error)) {
      std::cerr << "kiln: error: --data: " << error << "\n";
      return 2;
    }
    std::vector<std::string> inputs = files;
    inputs.push_back(opts->model);
    if (auto why = support::checkOutputPath(*out, inputs); !why.empty()) {
      std::cerr << "kiln: error: -o: " << why << "\n";
      return 2;
    }
    mlir::MLIRContext ctx;
    codegen::ModelBuild lowered;
    mlir::func::FuncOp f = lowerForEvaluation(
        *opts, ctx, [](mlir::OpPassManager &pm) { buildCalibrationPipeline(pm, ""); }, lowered);
    if (!f) return 2;
    // The activation operands of convolutions and matrix products, as the int8 pass sees them.
    std::map<std::string, quant::RangeCollector> ranges;
    OpObserver observe = [&](mlir::Operation *op, const std::vector<const ops::Tensor *> &args) {
      if (!isQuantizableProduct(op)) return;
      for (unsigned k = 0; k < 2 && k < args.size(); ++k)
        if (args[k] && ops::isFloat(args[k]->dtype) && !isConstant(op->getOperand(k)))
          ranges[quant::rangeKey(nodeName(op), k)].add(args[k]->f.data(), int64_t(args[k]->f.size()));
    };
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < files.size(); ++i) {
      std::vector<tuner::HostTensor> inputs, outputs;
      if (!tuner::readTensors(files[i], inputs, error)) {  // (the message names the file)
        std::cerr << "kiln: error: " << error << "\n";
        return 2;
      }
      if (!evaluateModel(f, inputs, outputs, error, observe)) {
        std::cerr << "kiln: error: " << files[i] << ": " << error << "\n";
        return 2;
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "calibrate: batch %zu/%zu (%s), %.1f s\n", i + 1, files.size(),
                   support::printableLine(files[i]).c_str(), secs);
    }
    quant::CalibrationTable table;
    table.kilnVersion = KILN_VERSION;
    table.modelHash = modelFileHash(opts->model);
    table.method = quant::methodName(m);
    table.percentile = percentile;
    table.batches = int64_t(files.size());
    for (const auto &[key, c] : ranges) table.ranges[key] = {c.min(), c.max(), c.amax(m, percentile)};
    if (!support::writeFileAtomically(*out, quant::toJson(table), error, inputs)) {
      std::cerr << "kiln: error: -o: " << error << "\n";
      return 2;
    }
    if (*json) {
      std::cout << jsonText(nlohmann::json{{"calibration", *out},
                                           {"method", table.method},
                                           {"batches", table.batches},
                                           {"ranges", table.ranges.size()}})
                << "\n";
    } else {
      std::printf("wrote %s: %zu activation ranges (%s) from %zu batches\n", support::printableLine(*out).c_str(),
                  table.ranges.size(), table.method.c_str(), files.size());
    }
    return 0;
  };
}

}  // namespace kiln::cli
