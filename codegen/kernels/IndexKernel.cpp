#include "codegen/kernels/IndexKernel.h"

#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

KernelLaunch emitIndexKernel(const IndexKernelSpec &s) {
  bool anyOutput = false;
  for (const auto &p : s.params) anyOutput = anyOutput || p.output;
  if (!anyOutput) throw std::invalid_argument(s.kind + ": a kernel needs an output");
  for (int64_t d : s.space)
    if (d < 0) throw std::invalid_argument(s.kind + ": negative dim");
  const int64_t total = numElementsOf(s.space);
  constexpr int kBlock = 256;

  std::string src = "// kiln " + s.comment + "\n";
  src += kDevicePrelude;
  src += s.prologue;
  src += "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) + ") KILN_ENTRY(";
  for (size_t k = 0; k < s.params.size(); ++k) {
    const auto &p = s.params[k];
    src +=
        std::string(k ? ", " : "") + (p.output ? "" : "const ") + storageTypeName(p.type) + "* __restrict__ " + p.name;
  }
  src += ") {\n";
  src += "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < " + std::to_string(total) +
         "LL; i += (long long)gridDim.x * blockDim.x) {\n";
  src += "    long long r_ = i;\n";
  for (size_t d = s.space.size(); d-- > 0;) {
    std::string c = "c" + std::to_string(d), n = std::to_string(s.space[d]) + "LL";
    src += d ? "    const long long " + c + " = r_ % " + n + "; r_ /= " + n + ";\n"
             : "    const long long " + c + " = r_;\n";
  }
  src += "    (void)r_;\n";
  src += s.body;
  src += "  }\n}\n";
  KernelLaunch k = finalizeKernel(s.kind, src);
  k.block = {kBlock, 1, 1};
  k.grid = {gridStrideBlocks(total, kBlock), 1, 1};
  k.numParams = static_cast<int>(s.params.size());
  return k;
}

}  // namespace kiln::codegen
