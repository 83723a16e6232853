// `kiln inspect model.kiln`: what an engine holds — target, route, I/O, kernels, launches,
// memory — read with the runtime's verifying reader (a corrupt file is an error, not a crash).
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "runtime/format/EngineFormat.h"
#include "tuner/EngineRunner.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"
#include "tools/kiln/Profiles.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>

namespace kiln::cli {

static std::string shapeText(const std::vector<int64_t> &s) {
  std::string r;
  for (size_t k = 0; k < s.size(); ++k) r += (k ? "x" : "") + std::to_string(s[k]);
  return r.empty() ? "scalar" : r;
}

// The precision a launch computes a matrix product or convolution in ("" for other launches):
// kiln's product kernels are named kiln_<kind>_<type tag>_<hash> (codegen/kernels/KernelUtil.h).
static std::string productPrecision(const rt::EngineDesc &d, const rt::Launch &l) {
  if (l.kind == rt::Launch::Kind::Gemm)
    return l.gemm.abType == 10   ? "fp16"
           : l.gemm.abType == 16 ? "bf16"
           : l.gemm.abType == 17 ? "fp8"
           : l.gemm.tf32         ? "tf32"
                                 : "fp32";
  if (l.kind != rt::Launch::Kind::Kernel) return "";
  const std::string &e = d.kernels[size_t(l.kernel)].entry;
  for (const char *kind :
       {"kiln_mma_", "kiln_mm_", "kiln_wgmma_tma_", "kiln_wgmma_", "kiln_conv_", "kiln_convnhwc_", "kiln_attn_"}) {
    if (e.rfind(kind, 0) != 0) continue;
    std::string tag =
        e.substr(std::string(kind).size(), e.find('_', std::string(kind).size()) - std::string(kind).size());
    return tag == "s8" || tag == "u8" ? "int8"
           : tag == "e4m3"            ? "fp8"
           : tag == "f16"             ? "fp16"
           : tag == "bf16"            ? "bf16"
           : tag == "f32"             ? "fp32"
                                      : tag;
  }
  return "";
}

Runner addInspectCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("inspect", "Show what an engine file holds");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("engine", *path, "Engine file (.kiln)")->required();
  cmd->add_flag("--json", *json, "Print a JSON document");
  return [=]() -> int {
    if (!*cmd) return -1;
    std::vector<uint8_t> bytes;
    rt::EngineDesc d;
    std::string err;
    if (!support::readFile(*path, bytes, err, "engine file")) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    if (rt::parseEngine(bytes.data(), bytes.size(), d, err) != rt::ParseStatus::Ok) {
      std::cerr << "kiln: error: " << *path << ": " << err << "\n";
      return 2;
    }
    size_t cubin = 0, ptx = 0;
    for (auto &m : d.modules) cubin += m.cubin.size(), ptx += m.ptx.size();
    std::map<std::string, int> launchesPerNode;
    int copies = 0;
    for (auto &l : d.launches) l.kind == rt::Launch::Kind::Copy ? ++copies : launchesPerNode[l.node]++;
    // Dynamic shapes: per profile each input's min/opt/max, the dims' ranges and the
    // specialisations it runs on.
    if (*json) {
      nlohmann::json profiles = nlohmann::json::array();
      for (size_t pi = 0; pi < d.numProfiles(); ++pi) {
        const rt::Profile pr = d.profileAt(pi);
        nlohmann::json profile = {{"inputs", nlohmann::json::object()}, {"dims", nlohmann::json::array()}};
        for (size_t i = 0; i < d.io.size(); ++i)
          if (d.io[i].isInput)
            profile["inputs"][d.io[i].name] = {
                {"min", d.shapeWith(i, pr.min)}, {"opt", d.shapeWith(i, pr.opt)}, {"max", d.shapeWith(i, pr.max)}};
        for (size_t k = 0; k < d.dims.size(); ++k) {
          const rt::ProfileDim &p = d.dims[k];
          nlohmann::json axes = nlohmann::json::array();
          for (const rt::DimAxis &a : p.axes)
            axes.push_back({{"tensor", d.io[size_t(a.io)].name}, {"axis", a.axis}, {"num", a.num}, {"den", a.den}});
          profile["dims"].push_back({{"name", p.name},
                                     {"min", pr.min[k]},
                                     {"opt", pr.opt[k]},
                                     {"max", pr.max[k]},
                                     {"pad", p.pad},
                                     {"axes", axes}});
        }
        profile["specialisations"] = nlohmann::json::array();
        for (int32_t s : pr.specialisations)
          profile["specialisations"].push_back({{"index", s},
                                                {"values", d.valuesOf(size_t(s))},
                                                {"launches", d.launchesOf(size_t(s)).size()},
                                                {"arena_bytes", d.arenaOf(size_t(s))}});
        profiles.push_back(profile);
      }
      nlohmann::json io = nlohmann::json::array();
      for (auto &t : d.io)
        io.push_back({{"name", t.name},
                      {"dtype", t.dtype},
                      {"dtype_name", tuner::dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"is_input", t.isInput}});
      nlohmann::json kernels = nlohmann::json::array();
      for (auto &k : d.kernels) kernels.push_back({{"entry", k.entry}, {"node", k.node}, {"module", k.module}});
      std::map<std::string, int> products;  // launches of matrix products / convolutions per precision
      for (auto &l : d.launches)
        if (auto p = productPrecision(d, l); !p.empty()) products[p]++;
      // Every launch in execution order: what it runs, its launch shape and the memory it reads
      // and writes (arena / weights offsets, or the I/O tensor bound there).
      auto buffer = [&](const rt::BufferRef &b) -> nlohmann::json {
        if (b.space == rt::BufferRef::Space::Io)
          return {{"space", "io"},
                  {"tensor", b.io >= 0 && size_t(b.io) < d.io.size() ? d.io[size_t(b.io)].name : ""},
                  {"offset", b.offset}};
        return {{"space", b.space == rt::BufferRef::Space::Arena ? "arena" : "weights"}, {"offset", b.offset}};
      };
      nlohmann::json launchList = nlohmann::json::array();
      for (auto &l : d.launches) {
        nlohmann::json e = {{"node", l.node}, {"flops", l.flops}, {"traffic_bytes", l.trafficBytes}};
        if (l.kind == rt::Launch::Kind::Copy) {
          e.update({{"kind", "copy"}, {"bytes", l.bytes}, {"buffers", {buffer(l.src), buffer(l.dst)}}});
        } else if (l.kind == rt::Launch::Kind::Gemm) {
          const rt::GemmCall &g = l.gemm;
          e.update({{"kind", "cublaslt"},
                    {"precision", productPrecision(d, l)},
                    {"m", g.m},
                    {"n", g.n},
                    {"k", g.k},
                    {"batch", g.batch},
                    {"buffers", {buffer(g.a), buffer(g.b), buffer(g.d)}}});
        } else {
          nlohmann::json buffers = nlohmann::json::array();
          for (auto &a : l.args)
            if (const rt::BufferRef *b = a.bufferRef()) buffers.push_back(buffer(*b));
          e.update({{"kind", "kernel"},
                    {"precision", productPrecision(d, l)},
                    {"kernel", d.kernels[size_t(l.kernel)].entry},
                    {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                    {"block", {l.block[0], l.block[1], l.block[2]}},
                    {"shared_bytes", l.sharedBytes},
                    {"buffers", buffers}});
        }
        launchList.push_back(e);
      }
      nlohmann::json j = {{"engine", *path},
                          {"bytes", bytes.size()},
                          {"kiln_version", d.kilnVersion},
                          {"arch", d.arch},
                          {"route", d.route},
                          {"environment", d.environment},
                          {"io", io},
                          {"kernels", kernels},
                          {"launches", d.launches.size()},
                          {"launch_list", launchList},
                          {"copies", copies},
                          {"product_precisions", products},
                          {"arena_bytes", d.arenaBytes},
                          {"weights_bytes", d.weights.size()},
                          {"cubin_bytes", cubin},
                          {"ptx_bytes", ptx},
                          {"cuda_graph", d.cudaGraph},
                          {"gemm_search", d.gemmSearch},
                          {"profiles", profiles}};
      std::cout << jsonText(j) << "\n";
      return 0;
    }
    // Every string of the metadata comes from the file: shown with control characters escaped,
    // and in the per-launch rows at most 120 bytes of it (a 4 MB kernel name on each of 50,000
    // rows would be 200 GB of output).
    auto text = [](const std::string &s) { return support::printableLine(s); };
    auto cell = [&](const std::string &s) { return text(s.size() <= 120 ? s : s.substr(0, 117) + "..."); };
    std::printf("engine:   %s (%s)\nkiln:     %s\ntarget:   %s\nroute:    %s\n", text(*path).c_str(),
                humanBytes(bytes.size()).c_str(), text(d.kilnVersion).c_str(), text(d.arch).c_str(),
                d.route.empty() ? "(default)" : text(d.route).c_str());
    for (auto &[k, v] : d.environment) std::printf("env:      %s = %s\n", text(k).c_str(), text(v).c_str());
    for (auto &t : d.io)
      std::printf("%-9s %-24s %-8s %s\n", t.isInput ? "input" : "output", text(t.name).c_str(),
                  tuner::dtypeName(t.dtype).c_str(), shapeText(t.shape).c_str());
    for (const rt::ProfileDim &p : d.dims) {
      std::string scaled;  // output axes that are a fraction or multiple of the dim
      for (const rt::DimAxis &a : p.axes)
        if (a.scaled())
          scaled += "; " + text(d.io[size_t(a.io)].name) + " axis " + std::to_string(a.axis) + " = " +
                    text(scaledAxisText(p.name, a));
      std::printf("dim       %-24s %lld..%lld (opt %lld)%s%s\n", text(p.name).c_str(), (long long)p.min,
                  (long long)p.max, (long long)p.opt, p.pad ? ", values between padded" : ", only the built values",
                  scaled.c_str());
    }
    if (!d.dims.empty()) {
      std::string built;
      for (size_t s = 0; s < d.numSpecialisations(); ++s) {
        std::string v;
        for (int64_t x : d.valuesOf(s)) v += (v.empty() ? "" : ",") + std::to_string(x);
        built += (s ? " " : "") + ("(" + v + ")");
      }
      std::printf("shapes:   %zu specialisations %s; the launches below are the first's\n", d.numSpecialisations(),
                  built.c_str());
    }
    for (size_t pi = 0; d.numProfiles() > 1 && pi < d.numProfiles(); ++pi) {
      const rt::Profile pr = d.profileAt(pi);
      std::string line;
      for (size_t k = 0; k < d.dims.size(); ++k)
        line += (k ? ", " : "") + text(d.dims[k].name) + " " + std::to_string(pr.min[k]) + ".." +
                std::to_string(pr.max[k]) + " (opt " + std::to_string(pr.opt[k]) + ")";
      std::string specs;
      for (int32_t sp : pr.specialisations) specs += (specs.empty() ? "" : " ") + std::to_string(sp + 1);
      std::printf("profile %zu: %s; specialisations %s\n", pi, line.c_str(), specs.c_str());
    }
    std::printf("kernels:  %zu unique (%s cubin, %s PTX), %zu launches, %d output copies\n", d.kernels.size(),
                humanBytes(cubin).c_str(), humanBytes(ptx).c_str(), d.launches.size() - copies, copies);
    std::printf("memory:   arena %s, weights %s\n", humanBytes(d.arenaBytes).c_str(),
                humanBytes(d.weights.size()).c_str());
    std::printf("runtime:  CUDA graph %s, cuBLASLt algorithms %s\n", d.cudaGraph ? "on" : "off",
                d.gemmSearch ? "timed at context creation" : "the heuristic's first");
    std::printf("\n%-5s %-32s %-9s %s\n", "#", "node", "precision", "kernel");
    int i = 0;
    for (auto &l : d.launches) {
      if (l.kind == rt::Launch::Kind::Copy) {
        std::printf("%-5d %-32s %-9s copy %llu bytes\n", i++, cell(l.node).c_str(), "",
                    static_cast<unsigned long long>(l.bytes));
        continue;
      }
      if (l.kind == rt::Launch::Kind::Gemm) {
        const rt::GemmCall &g = l.gemm;
        std::string batch = std::to_string(g.batch);
        if (g.pointerBatch()) batch += " (address arrays, " + shapeText(g.batchDims) + ")";
        std::printf("%-5d %-32s %-9s cuBLASLt matmul %lldx%lldx%lld (column-major m x n x k) batch %s epilogue %d\n",
                    i++, cell(l.node).c_str(), productPrecision(d, l).c_str(), (long long)g.m, (long long)g.n,
                    (long long)g.k, batch.c_str(), g.epilogue);
        continue;
      }
      const auto &k = d.kernels[l.kernel];
      std::printf("%-5d %-32s %-9s %s grid %ux%ux%u block %u\n", i++, cell(l.node).c_str(),
                  text(productPrecision(d, l)).c_str(), cell(k.entry).c_str(), l.grid[0], l.grid[1], l.grid[2],
                  l.block[0] * l.block[1] * l.block[2]);
    }
    return 0;
  };
}

}  // namespace kiln::cli
