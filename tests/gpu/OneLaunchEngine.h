// The kernel checks' engines (gemm8_check, attention_check): one launch of one compiled kernel
// whose parameters are the I/O tensors in order, written in the engine format: pointers, or the
// tensor maps the kernel asks for (KernelLaunch::tensorMaps) over them.
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "runtime/format/EngineFormat.h"

#include <cstdio>
#include <string>
#include <vector>

namespace kiln::testing {

inline std::vector<uint8_t> oneLaunchEngine(const codegen::KernelLaunch &k, const codegen::CompileOutput &bin,
                                            std::vector<rt::IoTensor> io, const std::string &name) {
  rt::EngineDesc d;
  d.kilnVersion = name;
  d.io = std::move(io);
  rt::ModuleDesc m;
  m.cubin.assign(bin.cubin.begin(), bin.cubin.end());
  m.ptx = bin.ptx;
  d.modules.push_back(m);
  d.kernels.push_back({0, k.entry, name});
  rt::Launch l;
  l.kernel = 0;
  for (int i = 0; i < 3; ++i) l.grid[i] = k.grid[i], l.block[i] = k.block[i];
  l.sharedBytes = k.sharedBytes;
  l.node = name;
  for (int i = 0; i < int(d.io.size()); ++i) {
    rt::BufferRef tensor{rt::BufferRef::Space::Io, 0, i};
    auto map = k.tensorMaps.find(i);
    if (map == k.tensorMaps.end()) {
      l.args.push_back(rt::LaunchArg::buf(tensor));
      continue;
    }
    rt::TensorMap m = map->second;
    m.buffer = tensor;
    l.args.push_back(rt::LaunchArg::ofTensorMap(std::move(m)));
  }
  d.launches.push_back(l);
  std::string problem = rt::checkEngineDesc(d);
  if (!problem.empty()) std::fprintf(stderr, "invalid engine: %s\n", problem.c_str());
  return rt::writeEngine(d);
}

}  // namespace kiln::testing
