// EngineDesc -> engine bytes. The metadata is JSON built with nlohmann::json, whose objects keep
// keys sorted, so the same desc always gives the same bytes (no timestamps, no pointers).
#include "runtime/format/EngineFormat.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace kiln::rt {

using nlohmann::json;

namespace {

json bufferJson(const BufferRef& b) {
  json j;
  switch (b.space) {
    case BufferRef::Space::Arena: j["space"] = "arena"; break;
    case BufferRef::Space::Weights: j["space"] = "weights"; break;
    case BufferRef::Space::Io:
      j["space"] = "io";
      j["io"] = b.io;
      break;
  }
  j["offset"] = b.offset;
  return j;
}

// JSON has no NaN or infinity; those f32 scalars are written as the strings "nan", "inf" and
// "-inf". Finite values are written as the double that equals the float exactly; nlohmann prints
// the shortest text that reads back to that double, so the float round-trips bit for bit.
json f32Json(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return double(v);
}

json argJson(const LaunchArg& a) {
  switch (a.kind) {
    case LaunchArg::Kind::Buffer: return bufferJson(a.buffer);
    case LaunchArg::Kind::I32: return json{{"i32", a.i32}};
    case LaunchArg::Kind::I64: return json{{"i64", a.i64}};
    case LaunchArg::Kind::F32: return json{{"f32", f32Json(a.f32)}};
    case LaunchArg::Kind::TensorMap: {
      const TensorMap& m = a.tensorMap;
      json j = bufferJson(m.buffer);
      j["dtype"] = m.dtype, j["dims"] = m.dims, j["strides"] = m.strides, j["box"] = m.box, j["swizzle"] = m.swizzle;
      return json{{"tensor_map", j}};
    }
  }
  return json();
}

json launchJson(const Launch& l) {
  json j;
  if (l.flops) j["flops"] = l.flops;
  if (l.trafficBytes) j["traffic_bytes"] = l.trafficBytes;
  if (l.kind == Launch::Kind::Copy) {
    j["copy"] = {{"src", bufferJson(l.src)}, {"dst", bufferJson(l.dst)}, {"bytes", l.bytes}};
    if (!l.node.empty()) j["node"] = l.node;
    return j;
  }
  if (l.kind == Launch::Kind::Gemm) {
    const GemmCall& g = l.gemm;
    json jg = {{"ab_type", g.abType},
               {"cd_type", g.cdType},
               {"trans_a", g.transA},
               {"trans_b", g.transB},
               {"m", g.m},
               {"n", g.n},
               {"k", g.k},
               {"lda", g.lda},
               {"ldb", g.ldb},
               {"ldc", g.ldc},
               {"batch", g.batch},
               {"stride_a", g.strideA},
               {"stride_b", g.strideB},
               {"stride_c", g.strideC},
               {"alpha", f32Json(g.alpha)},
               {"beta", f32Json(g.beta)},
               {"epilogue", g.epilogue},
               {"a", bufferJson(g.a)},
               {"b", bufferJson(g.b)},
               {"d", bufferJson(g.d)}};
    if (g.beta != 0.f) jg["c"] = bufferJson(g.c);
    if (g.epilogue & GemmCall::Bias) jg["bias"] = bufferJson(g.bias);
    if (g.tf32) jg["tf32"] = true;  // (absent: exact fp32, as engines before the field)
    if (g.fp8()) jg["scale_a"] = bufferJson(g.scaleA), jg["scale_b"] = bufferJson(g.scaleB);
    if (g.pointerBatch())
      jg["batch_dims"] = g.batchDims, jg["batch_steps_a"] = g.batchStepsA, jg["batch_steps_b"] = g.batchStepsB,
      jg["batch_steps_c"] = g.batchStepsC;
    j["gemm"] = jg;
    j["node"] = l.node;
    return j;
  }
  j["kernel"] = l.kernel;
  j["grid"] = {l.grid[0], l.grid[1], l.grid[2]};
  j["block"] = {l.block[0], l.block[1], l.block[2]};
  j["shared_bytes"] = l.sharedBytes;
  j["node"] = l.node;
  j["args"] = json::array();
  for (const LaunchArg& a : l.args) j["args"].push_back(argJson(a));
  return j;
}

}  // namespace

std::vector<uint8_t> writeEngine(const EngineDesc& desc) {
  // Section order: metadata, then each module's cubin and PTX, then the weights.
  std::vector<SectionData> sections;
  sections.push_back({uint32_t(SectionKind::Metadata), nullptr, 0});  // filled in below
  json modules = json::array();
  for (const ModuleDesc& m : desc.modules) {
    json jm{{"cubin", -1}, {"ptx", -1}};
    if (!m.cubin.empty()) {
      jm["cubin"] = sections.size();
      sections.push_back({uint32_t(SectionKind::Cubin), m.cubin.data(), m.cubin.size()});
    }
    if (!m.ptx.empty()) {
      jm["ptx"] = sections.size();
      sections.push_back({uint32_t(SectionKind::Ptx), reinterpret_cast<const uint8_t*>(m.ptx.data()), m.ptx.size()});
    }
    modules.push_back(jm);
  }
  sections.push_back({uint32_t(SectionKind::Weights), desc.weights.data(), desc.weights.size()});

  json meta;
  meta["kiln_version"] = desc.kilnVersion;
  meta["format_version"] = kEngineFormatVersion;
  meta["target"] = {{"arch", desc.arch}, {"sm", desc.sm}};
  meta["route"] = desc.route;
  meta["environment"] = json::object();
  for (const auto& [k, v] : desc.environment) meta["environment"][k] = v;
  meta["io"] = json::array();
  for (const IoTensor& t : desc.io)
    meta["io"].push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"is_input", t.isInput}});
  meta["modules"] = modules;
  meta["kernels"] = json::array();
  for (const KernelDesc& k : desc.kernels)
    meta["kernels"].push_back({{"module", k.module}, {"entry", k.entry}, {"node", k.node}});
  meta["memory"] = {{"arena_bytes", desc.arenaBytes}, {"weights_bytes", desc.weights.size()}};
  meta["cuda_graph"] = desc.cudaGraph;
  if (desc.gemmSearch) meta["gemm_search"] = true;
  meta["launches"] = json::array();
  for (const Launch& l : desc.launches) meta["launches"].push_back(launchJson(l));
  if (!desc.dims.empty()) {  // (absent: a static engine, as before version 4)
    meta["dims"] = json::array();
    for (const ProfileDim& d : desc.dims) {
      json axes = json::array();
      for (const DimAxis& a : d.axes)
        axes.push_back(a.scaled() ? json{a.io, a.axis, a.num, a.den} : json{a.io, a.axis});
      meta["dims"].push_back(
          {{"name", d.name}, {"min", d.min}, {"opt", d.opt}, {"max", d.max}, {"pad", d.pad}, {"axes", axes}});
    }
    meta["specialisations"] = json::array();
    for (const Specialisation& sp : desc.specialisations) {
      json launches = json::array();
      for (const Launch& l : sp.launches) launches.push_back(launchJson(l));
      meta["specialisations"].push_back(
          {{"values", sp.values}, {"arena_bytes", sp.arenaBytes}, {"launches", launches}});
    }
    if (!desc.profiles.empty()) {  // (absent: one profile, as before version 6)
      meta["profiles"] = json::array();
      for (const Profile& p : desc.profiles)
        meta["profiles"].push_back(
            {{"min", p.min}, {"opt", p.opt}, {"max", p.max}, {"specialisations", p.specialisations}});
    }
  }

  // Invalid UTF-8 in a name is replaced (U+FFFD) rather than thrown: writing never fails.
  std::string text = meta.dump(-1, ' ', false, json::error_handler_t::replace);
  sections[0].data = reinterpret_cast<const uint8_t*>(text.data());
  sections[0].size = text.size();
  return packSections(sections);
}

}  // namespace kiln::rt
