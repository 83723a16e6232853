// The knob registry and build routes: parsing, canonical text, per-node instances, errors.
#include "compiler/knobs/Knob.h"
#include "passes/Passes.h"

#include <gtest/gtest.h>

namespace kiln::knobs {
namespace {

// The passes register these (linked into this test through kiln_passes).
const KnobDef &knob(const char *name) {
  const KnobDef *k = findKnob(name);
  EXPECT_NE(k, nullptr) << name;
  return *k;
}

TEST(Route, CanonicalTextIsSortedWithoutDefaults) {
  Route r;
  std::string err;
  ASSERT_TRUE(Route::parse(" precision = fp16 ; fusion.epilogue=off;layout.conv=auto;; ", &r, &err)) << err;
  EXPECT_EQ(r.canonical(), "fusion.epilogue=off;precision=fp16");
  EXPECT_EQ(r.get(knob("precision")), "fp16");
  EXPECT_EQ(r.get(knob("layout.conv")), "auto");
  Route empty;
  ASSERT_TRUE(Route::parse("", &empty, &err));
  EXPECT_EQ(empty.canonical(), "");
  Route again;
  ASSERT_TRUE(Route::parse(r.canonical(), &again, &err));
  EXPECT_EQ(again, r);
}

TEST(Route, PerNodeValuesOverrideTheGlobalOne) {
  Route r;
  std::string err;
  ASSERT_TRUE(Route::parse("precision=fp16;node./layer1/conv.2.precision=fp32", &r, &err)) << err;
  EXPECT_EQ(r.get(knob("precision"), "/layer1/conv.2"), "fp32");
  EXPECT_EQ(r.get(knob("precision"), "other"), "fp16");
  std::string node;
  const KnobDef *def = nullptr;
  ASSERT_TRUE(parseNodeKnob("node./layer1/conv.2.precision", &node, &def));
  EXPECT_EQ(node, "/layer1/conv.2");
  EXPECT_EQ(def, &knob("precision"));
  // A node value equal to the global one it would inherit is dropped from the canonical text.
  ASSERT_TRUE(Route::parse("precision=fp16;node.a.precision=fp16", &r, &err));
  EXPECT_EQ(r.canonical(), "precision=fp16");
}

TEST(Route, ErrorsNameTheTerm) {
  Route r;
  std::string err;
  EXPECT_FALSE(Route::parse("precision", &r, &err));
  EXPECT_NE(err.find("'precision' is not KNOB=VALUE"), std::string::npos) << err;
  EXPECT_FALSE(Route::parse("no.such=1", &r, &err));
  EXPECT_NE(err.find("unknown knob 'no.such'"), std::string::npos) << err;
  EXPECT_FALSE(Route::parse("precision=fp4", &r, &err));
  EXPECT_NE(err.find("no value 'fp4' (domain: fp32|fp16|bf16|int8|fp8)"), std::string::npos) << err;
  EXPECT_FALSE(Route::parse("precision=fp16;precision=fp16", &r, &err));
  EXPECT_NE(err.find("twice"), std::string::npos) << err;
  EXPECT_FALSE(Route::parse("node.x.nosuchsuffix=1", &r, &err));
}

TEST(Knobs, InstancesForAModel) {
  std::vector<KnobInstance> inst = knobInstances({{"conv1", "Conv"}, {"relu1", "Relu"}});
  bool convPrecision = false, reluAny = false;
  for (auto &k : inst) {
    convPrecision |= k.name == "node.conv1.precision";
    reluAny |= k.node == "relu1";
  }
  EXPECT_TRUE(convPrecision);
  EXPECT_FALSE(reluAny);
  for (const KnobDef *k : allKnobs()) {
    EXPECT_FALSE(k->owner.empty()) << k->name;
    EXPECT_FALSE(k->help.empty()) << k->name;
  }
}

}  // namespace
}  // namespace kiln::knobs
