// The tuner's CPU side: route expressions and search plans, accuracy constraints. (The SQLite
// cache: cache_test.cpp.)
#include "compiler/knobs/Knob.h"
#include "passes/Passes.h"
#include "tests/runtime/TestEngine.h"
#include "tuner/Accuracy.h"
#include "tuner/Cache.h"
#include "tuner/Child.h"
#include "tuner/Space.h"

#include <gtest/gtest.h>

#include <cmath>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kiln::tuner {
namespace {

TEST(RouteExpression, DimensionsAndPlans) {
  SearchSpace s;
  std::string err;
  ASSERT_TRUE(parseSpace("precision=fp16|bf16;fusion\\..*=.*;node\\.fc.\\.precision=fp32|fp16",
                         {{"fc1", "MatMul"}, {"fc2", "Gemm"}, {"act", "Relu"}}, s, err))
      << err;
  // precision (base fp16: the default fp32 is not selected), 10 fusion knobs, 2 node knobs.
  ASSERT_EQ(s.dims.size(), 13u);
  EXPECT_EQ(s.dims[0].knob, "precision");
  EXPECT_EQ(s.dims[0].base, "fp16");
  EXPECT_EQ(s.base().canonical(), "precision=fp16");
  std::vector<knobs::Route> fast = s.fast();
  // The base, then one flip per other value: precision bf16, 10 fusion flips, node knobs fp32
  // (their fp16 is what they inherit).
  EXPECT_EQ(fast.size(), 1u + 1 + 10 + 2);
  EXPECT_EQ(fast.back().canonical(), "node.fc2.precision=fp32;precision=fp16");
  EXPECT_EQ(s.fullCount(), 2u * 1024 * 4);
  EXPECT_EQ(s.full().size(), 8192u);
  EXPECT_EQ(s.combinations({0, 1}).size(), 4u);
}

// A full search of 30 products' precision knobs has 5^30 candidates: counted with saturation (it was
// printed as -9223372036854775808), never built; combinations stop at their limit, in the order
// the search visits them (first dimension slowest).
TEST(RouteExpression, HugeSpacesAreCountedNotBuilt) {
  std::vector<knobs::NodeRef> nodes;
  for (int i = 0; i < 30; ++i) nodes.push_back({"mm" + std::to_string(i), "MatMul"});
  SearchSpace s;
  std::string err;
  ASSERT_TRUE(parseSpace("node\\..*\\.precision=.*", nodes, s, err)) << err;
  ASSERT_EQ(s.dims.size(), 30u);
  EXPECT_EQ(s.fullCount(), UINT64_MAX);
  EXPECT_GT(s.fullCountApprox(), 1e20);
  std::vector<knobs::Route> first = s.full(3);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(s.combinationCount({0, 1}), s.dims[0].values.size() * s.dims[1].values.size());
  std::vector<knobs::Route> two = s.combinations({0, 1});
  ASSERT_EQ(two.size(), s.combinationCount({0, 1}));
  ASSERT_EQ(s.dims[0].values[0], "fp32");  // (the default: canonical routes omit it)
  EXPECT_EQ(two[1].canonical(), "node.mm1.precision=" + s.dims[1].values[1]);
  EXPECT_EQ(two[s.dims[1].values.size()].canonical(), "node.mm0.precision=" + s.dims[0].values[1]);
}

// The nodes search: one sweep per per-node knob value (every node that offers it set at once), so
// 30 nodes' precisions cost 2 sweeps, not 60 builds; then each node takes the value its own
// launches ran fastest under, if that beats the base by more than the margin, read from the
// profiles of sweeps that keep the base's global knobs.
TEST(RouteExpression, NodeSweepsAndPicks) {
  std::vector<knobs::NodeRef> nodes;
  for (int i = 0; i < 30; ++i) nodes.push_back({"c" + std::to_string(i), "Conv"});
  SearchSpace s;
  std::string err;
  ASSERT_TRUE(parseSpace("fusion\\.elementwise=.*;node\\..*\\.precision=fp32|fp16|bf16", nodes, s, err)) << err;
  EXPECT_EQ(s.dims[1].node, "c0");
  EXPECT_EQ(s.dims[1].kind, "precision");
  std::vector<knobs::Route> plan = s.nodeSweeps();
  // The base, the global flip, then a sweep for fp16 and one for bf16 (fp32 is what every node
  // inherits).
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].canonical(), "");
  EXPECT_EQ(plan[1].canonical(), "fusion.elementwise=off");
  EXPECT_EQ(plan[2].values().size(), 30u);  // every node at once
  EXPECT_EQ(plan[2].values().begin()->second, "fp16");
  EXPECT_EQ(plan[3].values().begin()->second, "bf16");

  // Profiles: the base; the fp16 sweep (c0 faster by 50 % with its own kernels; c1 faster by 50 %
  // too, but with the base's kernels: the value changed nothing there, so that is noise); a bf16
  // route with another global value (faster still, but ignored).
  knobs::Route ra, rb;
  ASSERT_TRUE(knobs::Route::parse("node.c0.precision=fp16;node.c1.precision=fp16", &ra, &err)) << err;
  ASSERT_TRUE(knobs::Route::parse("fusion.elementwise=off;node.c0.precision=bf16", &rb, &err)) << err;
  std::vector<std::pair<knobs::Route, std::vector<NodeLaunch>>> profiles = {
      {knobs::Route(),
       {{"c0+bn0", "mma_a", 0.2}, {"c0", "copy", 0.1}, {"c1+relu", "mma_b", 0.1}, {"c10", "mma_c", 0.5}}},
      {ra, {{"c0+bn0", "mma_h", 0.1}, {"c0", "copy", 0.05}, {"c1+relu", "mma_b", 0.05}, {"c10", "mma_c", 0.5}}},
      {rb, {{"c0+bn0", "mma_x", 0.01}, {"c1+relu", "mma_y", 0.01}}},
  };
  std::vector<NodeChoice> picks = s.pickNodeValues(profiles, 0.03);
  ASSERT_EQ(picks.size(), 1u);
  EXPECT_EQ(picks[0].knob, "node.c0.precision");
  EXPECT_EQ(picks[0].value, "fp16");
  EXPECT_NEAR(picks[0].baseMs, 0.3, 1e-12);  // both launches naming c0, not c10's
  EXPECT_NEAR(picks[0].ms, 0.15, 1e-12);
  EXPECT_EQ(s.pickNodeValues(profiles, 0.6).size(), 0u);  // a 50 % gain under a 60 % margin
  // Tables show a sweep by its knob and value.
  EXPECT_EQ(shortRoute(plan[2].canonical()), "node.*.precision=fp16 (30 nodes)");
  EXPECT_EQ(shortRoute("node.a.b.precision=fp16;node.c.precision=fp16;precision=bf16"),
            "node.a.b.precision=fp16;node.c.precision=fp16;precision=bf16");
  EXPECT_EQ(shortRoute("node.a.b.precision=fp16;node.c.precision=fp16;node.d.precision=fp16;precision=bf16"),
            "node.*.precision=fp16 (3 nodes);precision=bf16");
}

// Patterns are matched in linear time: a catastrophic one finishes at once, a node name longer
// than the matching limit is an error naming the term.
TEST(RouteExpression, PatternsCannotHangOrOverflow) {
  SearchSpace s;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(parseSpace("(.*a){12}b=.*", {{std::string(40, 'a'), "MatMul"}}, s, err));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(err.find("'(.*a){12}b=.*' matches no knob"), std::string::npos) << err;
  SearchSpace s2;
  EXPECT_FALSE(parseSpace("node\\..*=.*", {{std::string(100000, 'n'), "MatMul"}}, s2, err));
  EXPECT_NE(err.find("a name of 100015 bytes is longer than the 4096"), std::string::npos) << err;
  SearchSpace s3;
  EXPECT_FALSE(parseSpace(std::string(50000, '(') + "x" + std::string(50000, ')') + "=.*", {}, s3, err));
  EXPECT_NE(err.find("is longer than the limit of 4096"), std::string::npos) << err;
  EXPECT_LT(err.size(), 300u);  // the term is quoted by its start
}

TEST(RouteExpression, ErrorsNameTheTerm) {
  SearchSpace s;
  std::string err;
  EXPECT_FALSE(parseSpace("gemm\\.tile=(", {}, s, err));
  EXPECT_NE(err.find("invalid regular expression"), std::string::npos) << err;
  SearchSpace s2;
  EXPECT_FALSE(parseSpace("nope=.*", {}, s2, err));
  EXPECT_NE(err.find("'nope=.*' matches no knob"), std::string::npos) << err;
  SearchSpace s3;
  EXPECT_FALSE(parseSpace("precision=fp4", {}, s3, err));
  EXPECT_NE(err.find("leaves knob 'precision' no value"), std::string::npos) << err;
  // Without a calibration file int8 and fp8 are no candidates; a term left with only them says why.
  SearchSpace s6;
  ASSERT_TRUE(parseSpace("precision=.*", {}, s6, err, /*withCalibration=*/false)) << err;
  ASSERT_EQ(s6.dims.size(), 1u);
  EXPECT_EQ(s6.dims[0].values, (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  // ... and not silently: a note names what was left out (none with a calibration file).
  ASSERT_EQ(s6.notes.size(), 1u);
  EXPECT_NE(s6.notes[0].find("selects int8 and fp8 for 'precision': left out"), std::string::npos) << s6.notes[0];
  SearchSpace s7;
  ASSERT_TRUE(parseSpace("precision=fp16|int8", {}, s7, err, /*withCalibration=*/true)) << err;
  EXPECT_TRUE(s7.notes.empty());
  EXPECT_EQ(s7.dims[0].values, (std::vector<std::string>{"fp16", "int8"}));
  EXPECT_FALSE(parseSpace("precision=int8|fp8", {}, s6, err, false));
  EXPECT_NE(err.find("only int8/fp8, which need --calib"), std::string::npos) << err;
  SearchSpace s4;
  EXPECT_FALSE(parseSpace("precision=.*;prec.*=fp16", {}, s4, err));
  EXPECT_NE(err.find("matched by route terms"), std::string::npos) << err;
  SearchSpace s5;
  EXPECT_FALSE(parseSpace("precision", {}, s5, err));
}

TEST(Accuracy, ConstraintsAndMetrics) {
  std::vector<Constraint> c;
  std::string err;
  ASSERT_TRUE(parseConstraints("cos>=0.999, max_abs<0.5; logits:top1>=1", c, err)) << err;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].output, "logits");
  EXPECT_FALSE(parseConstraints("cosine>=1", c, err));
  EXPECT_FALSE(parseConstraints("cos=1", c, err));
  HostTensor ref{"logits", 1, {2, 3}, {}}, got = ref;
  float r[] = {1, 2, 3, 3, 2, 1}, g[] = {1, 2, 3.5f, 1, 2, 3};
  ref.data.assign(reinterpret_cast<uint8_t *>(r), reinterpret_cast<uint8_t *>(r) + sizeof r);
  got.data.assign(reinterpret_cast<uint8_t *>(g), reinterpret_cast<uint8_t *>(g) + sizeof g);
  Metrics m = compare(got, ref);
  EXPECT_DOUBLE_EQ(m.maxAbs, 2.0);
  EXPECT_DOUBLE_EQ(m.top1, 0.5);
  EXPECT_NEAR(m.l0, 3.0 / 6, 1e-12);
  std::vector<std::string> v = violations(c, {{"logits", m}});
  EXPECT_EQ(v.size(), 3u);  // cos, max_abs and top1 all fail
  EXPECT_TRUE(violations(defaultConstraints(""), {{"logits", compare(ref, ref)}}).empty());
  // The default by route: exact fp32 is held to rel_l2 <= 1e-4; half precisions and TF32 products
  // (fp16-like error: ResNet-50 5.9e-4 on the H200) to rel_l2 <= 1e-2 and cos >= 0.999.
  Metrics tf32Like;
  tf32Like.relL2 = 6e-4, tf32Like.cos = 0.99999;
  for (const char *route : {"", "fusion.elementwise=off", "gemm.tf32=off"})
    EXPECT_EQ(violations(defaultConstraints(route), {{"y", tf32Like}}).size(), 1u) << route;
  for (const char *route : {"gemm.tf32=on", "precision=fp16", "gemm.tf32=on;precision=bf16"})
    EXPECT_TRUE(violations(defaultConstraints(route), {{"y", tf32Like}}).empty()) << route;
  // fp16 overflow: one infinity among close values fails even though rel_l2 and cos skip it; the
  // same infinity in the reference does not.
  std::vector<float> big(64, 1.0f), over = big;
  over[5] = INFINITY;
  HostTensor a{"y", 1, {64}, {}}, b = a;
  a.data.assign(reinterpret_cast<uint8_t *>(over.data()), reinterpret_cast<uint8_t *>(over.data() + over.size()));
  b.data.assign(reinterpret_cast<uint8_t *>(big.data()), reinterpret_cast<uint8_t *>(big.data() + big.size()));
  Metrics inf = compare(a, b);
  EXPECT_TRUE(inf.nanMismatch);
  EXPECT_EQ(violations(defaultConstraints("precision=fp16"), {{"y", inf}}).size(), 1u);
  EXPECT_FALSE(compare(a, a).nanMismatch);
}

// Helper processes (check --ort's Python) run by name from PATH, in the caller's process group
// when asked; a program that cannot run ends with 127 and says so on its stderr.
TEST(Child, RunsByNameAndReportsWhatCannotRun) {
  char dir[] = "/tmp/kiln-child-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string out = std::string(dir) + "/out", err = std::string(dir) + "/err", error;
  Child c;
  // (field 5 of /proc/PID/stat: the process group)
  const char *script = "cut -d' ' -f5 /proc/$$/stat; echo oops >&2; exit 3";
  ASSERT_TRUE(spawn({"sh", "-c", script}, {}, out, err, 30, c, error, /*ownProcessGroup=*/false)) << error;
  int code = 0;
  bool timedOut = true;
  wait(c, code, timedOut);
  EXPECT_EQ(code, 3);
  EXPECT_FALSE(timedOut);
  EXPECT_EQ(readText(err), "oops\n");
  EXPECT_EQ(readText(out), std::to_string(getpgrp()) + "\n");  // the caller's group
  ASSERT_TRUE(spawn({"sh", "-c", script}, {}, out, err, 30, c, error)) << error;
  pid_t pid = c.pid;
  wait(c, code, timedOut);
  EXPECT_EQ(readText(out), std::to_string(pid) + "\n");  // a group of its own (the tuner's children)
  ASSERT_TRUE(spawn({"kiln-no-such-program"}, {}, out, err, 30, c, error));
  wait(c, code, timedOut);
  EXPECT_EQ(code, 127);
  EXPECT_EQ(readText(err).rfind("cannot run kiln-no-such-program: ", 0), 0u) << readText(err);
  std::filesystem::remove_all(dir);
}

// Profiles get each launch's FLOPs and bytes from the engine, matched by the launch list's nodes
// (a dynamic engine's specialisations differ); a profile of other launches gets none.
TEST(EngineRunner, AttachLaunchCosts) {
  kiln::rt::EngineDesc d = kiln::rt::test::makeAxpbEngine(16);
  d.launches[0].node = "axpb", d.launches[0].flops = 32, d.launches[0].trafficBytes = 192;
  d.launches[1].node = "output y", d.launches[1].trafficBytes = 128;
  std::vector<uint8_t> bytes = kiln::rt::writeEngine(d);
  std::vector<LaunchTime> t = {{"axpb", "axpb", 0.5f}, {"output y", "copy", 0.1f}};
  attachLaunchCosts(bytes, t);
  EXPECT_EQ(t[0].flops, 32u);
  EXPECT_EQ(t[0].trafficBytes, 192u);
  EXPECT_EQ(t[1].trafficBytes, 128u);
  std::vector<LaunchTime> other = {{"other", "axpb", 0.5f}, {"output y", "copy", 0.1f}};
  attachLaunchCosts(bytes, other);
  EXPECT_EQ(other[0].flops, 0u);
  EXPECT_EQ(other[1].trafficBytes, 0u);
}

// The cache stores metrics as JSON and the tuner judges cached results again from them: the round
// trip must keep every metric (NaN too) so a stricter constraint sees the real numbers.
TEST(Accuracy, MetricsJsonRoundTrip) {
  Metrics a;
  a.maxAbs = 0.0625, a.maxRel = 8.8, a.l0 = 0.3, a.relL2 = 6.4e-4, a.cos = 0.9999998, a.top1 = 1;
  Metrics b;
  b.maxAbs = std::nan(""), b.nanMismatch = true;
  std::vector<std::pair<std::string, Metrics>> back;
  ASSERT_TRUE(metricsFromJson(metricsToJson({{"logits", a}, {"hidden", b}}), back));
  ASSERT_EQ(back.size(), 2u);
  const Metrics &x = back[0].first == "logits" ? back[0].second : back[1].second;
  const Metrics &y = back[0].first == "logits" ? back[1].second : back[0].second;
  EXPECT_DOUBLE_EQ(x.maxAbs, 0.0625);
  EXPECT_DOUBLE_EQ(x.cos, 0.9999998);
  EXPECT_DOUBLE_EQ(x.top1, 1);
  EXPECT_TRUE(std::isnan(y.maxAbs));
  EXPECT_TRUE(y.nanMismatch);
  std::vector<Constraint> tight;
  std::string err;
  ASSERT_TRUE(parseConstraints("max_abs<=1e-6", tight, err));
  EXPECT_EQ(violations(tight, {{"logits", x}}).size(), 1u);           // max_abs 0.0625 > 1e-6
  EXPECT_FALSE(metricsFromJson("{\"logits\": {\"cos\": 1}}", back));  // a metric missing
  EXPECT_FALSE(metricsFromJson("not json", back));
}

}  // namespace
}  // namespace kiln::tuner
