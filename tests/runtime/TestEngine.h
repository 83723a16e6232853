// A small engine built by hand, without any code generator: y = a * x + b + k over n float32
// values, with b in the WEIGHTS section, a (f32), k (i32) and n (i64) as scalar arguments. The
// kernel writes into the arena and a device copy moves the result to the output, so one engine
// exercises every part of the format: I/O table, PTX module, kernel and copy launches, all
// argument kinds and all three buffer spaces.
#pragma once

#include "runtime/format/EngineFormat.h"

#include <cstring>
#include <vector>

namespace kiln::rt::test {

// Hand-written PTX (ISA 8.0, sm_90), JIT-compiled by the driver on sm_90 and newer GPUs.
inline const char* axpbPtx() {
  return R"PTX(.version 8.0
.target sm_90
.address_size 64

// y[i] = fma(a, x[i], b[i]) + float(k)  for i < n
.visible .entry axpb(
  .param .u64 p_x,
  .param .u64 p_b,
  .param .u64 p_y,
  .param .f32 p_a,
  .param .u32 p_k,
  .param .u64 p_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<12>;

  ld.param.u64 %rd1, [p_x];
  ld.param.u64 %rd2, [p_b];
  ld.param.u64 %rd3, [p_y];
  ld.param.f32 %f1, [p_a];
  ld.param.u32 %r1, [p_k];
  ld.param.u64 %rd4, [p_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  cvt.u64.u32 %rd5, %r5;
  setp.ge.u64 %p1, %rd5, %rd4;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd6, %rd1;
  cvta.to.global.u64 %rd7, %rd2;
  cvta.to.global.u64 %rd8, %rd3;
  shl.b64 %rd9, %rd5, 2;
  add.u64 %rd10, %rd6, %rd9;
  ld.global.f32 %f2, [%rd10];
  add.u64 %rd10, %rd7, %rd9;
  ld.global.f32 %f3, [%rd10];
  cvt.rn.f32.s32 %f4, %r1;
  fma.rn.f32 %f5, %f1, %f2, %f3;
  add.f32 %f5, %f5, %f4;
  add.u64 %rd11, %rd8, %rd9;
  st.global.f32 [%rd11], %f5;
DONE:
  ret;
}
)PTX";
}

constexpr float kAxpbA = 2.5f;
constexpr int32_t kAxpbK = 1;

inline float axpbB(int i) { return 0.25f * float(i) - 3.0f; }
inline float axpbX(int i) { return float(i % 17) - 8.0f; }

inline EngineDesc makeAxpbEngine(int n = 1000) {
  EngineDesc d;
  d.kilnVersion = "0.1.0";
  d.arch = "sm_90";
  d.sm = 90;
  d.route = "";
  d.environment = {{"builder", "tests/runtime/TestEngine.h"}};
  const int64_t bytes = int64_t(n) * 4;
  d.io = {{"x", 1, {n}, true}, {"y", 1, {n}, false}};
  ModuleDesc m;
  m.ptx = axpbPtx();
  d.modules.push_back(m);
  d.kernels.push_back({0, "axpb", "/axpb"});
  d.arenaBytes = uint64_t(bytes);
  d.weights.resize(size_t(bytes));
  for (int i = 0; i < n; ++i) {
    float b = axpbB(i);
    std::memcpy(d.weights.data() + 4 * i, &b, 4);
  }
  Launch k;
  k.kind = Launch::Kind::Kernel;
  k.kernel = 0;
  k.block[0] = 256;
  k.grid[0] = uint32_t((n + 255) / 256);
  k.node = "/axpb";
  k.args = {LaunchArg::buf({BufferRef::Space::Io, 0, 0}),
            LaunchArg::buf({BufferRef::Space::Weights, 0, -1}),
            LaunchArg::buf({BufferRef::Space::Arena, 0, -1}),
            LaunchArg::ofF32(kAxpbA),
            LaunchArg::ofI32(kAxpbK),
            LaunchArg::ofI64(n)};
  d.launches.push_back(k);
  Launch c;
  c.kind = Launch::Kind::Copy;
  c.node = "/copy_out";
  c.src = {BufferRef::Space::Arena, 0, -1};
  c.dst = {BufferRef::Space::Io, 0, 1};
  c.bytes = uint64_t(bytes);
  d.launches.push_back(c);
  return d;
}

// The same engine with a dynamic n (version 4): dim "n" in 100..1000 (opt 1000), shared by x and y,
// built for 1000 (the top-level plan), 500 and 100, other values padded to the next.
inline EngineDesc makeDynamicAxpbEngine() {
  EngineDesc d = makeAxpbEngine(1000);
  d.dims.push_back({"n", 100, 1000, 1000, true, {{0, 0}, {1, 0}}});
  for (int n : {500, 100}) {
    EngineDesc s = makeAxpbEngine(n);
    d.specialisations.push_back({{n}, s.arenaBytes, s.launches});
  }
  return d;
}

// The same with two profiles (version 6): n in 500..1000 (opt 1000) on the specialisations 1000
// and 500, and n in 100..500 (opt 100) on 500 and 100.
inline EngineDesc makeTwoProfileAxpbEngine() {
  EngineDesc d = makeDynamicAxpbEngine();
  d.profiles = {{{500}, {1000}, {1000}, {0, 1}}, {{100}, {100}, {500}, {1, 2}}};
  return d;
}

}  // namespace kiln::rt::test
