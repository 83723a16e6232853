// The engine format: round trip, determinism, layout, and that every kind of damaged or
// inconsistent file is rejected through the C API with KILN_ERROR_FORMAT (or _VERSION) and a
// message that says what is wrong.
#include "TestEngine.h"
#include "kiln/kiln.h"
#include "runtime/format/EngineFormat.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include <sys/stat.h>
#include <unistd.h>

using namespace kiln::rt;
using nlohmann::json;

namespace {

uint64_t u64At(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(b[at + i]) << (8 * i);
  return v;
}
uint32_t u32At(const std::vector<uint8_t>& b, size_t at) { return uint32_t(u64At(b, at) & 0xffffffffu); }
void putU64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = uint8_t(v >> (8 * i));
}

// Recomputes the checksum after a deliberate edit, so that the edit reaches the later checks.
void reseal(std::vector<uint8_t>& b) { putU64(b, 24, fnv1a64(b.data() + kHeaderSize, b.size() - kHeaderSize)); }

struct RawSection {
  uint32_t kind;
  std::vector<uint8_t> bytes;
};

// Splits engine bytes back into sections (trusting them: only for files the writer made).
std::vector<RawSection> sectionsOf(const std::vector<uint8_t>& b) {
  std::vector<RawSection> out;
  uint32_t n = u32At(b, 32);
  for (uint32_t i = 0; i < n; ++i) {
    size_t e = kHeaderSize + i * kSectionEntrySize;
    uint64_t off = u64At(b, e + 8), size = u64At(b, e + 16);
    out.push_back({u32At(b, e), std::vector<uint8_t>(b.begin() + off, b.begin() + off + size)});
  }
  return out;
}

std::vector<uint8_t> pack(const std::vector<RawSection>& sections, uint32_t version = kEngineFormatVersion) {
  std::vector<SectionData> data;
  for (const RawSection& s : sections) data.push_back({s.kind, s.bytes.data(), s.bytes.size()});
  return packSections(data, version);
}

// The test engine with its metadata JSON edited by `edit`.
std::vector<uint8_t> withMetadata(const std::function<void(json&)>& edit) {
  std::vector<RawSection> sections = sectionsOf(writeEngine(test::makeAxpbEngine(16)));
  json meta = json::parse(sections[0].bytes.begin(), sections[0].bytes.end());
  edit(meta);
  std::string text = meta.dump();
  sections[0].bytes.assign(text.begin(), text.end());
  return pack(sections);
}

struct LoadResult {
  kiln_status status;
  std::string message;
};

LoadResult load(const std::vector<uint8_t>& bytes) {
  static int sentinel;
  kiln_engine* e = reinterpret_cast<kiln_engine*>(&sentinel);  // must be reset to NULL on failure
  kiln_status s = kiln_engine_load_from_memory(bytes.data(), bytes.size(), &e);
  LoadResult r{s, kiln_status_message(s)};
  if (s == KILN_OK)
    kiln_engine_destroy(e);
  else
    EXPECT_EQ(e, nullptr);
  return r;
}

#define EXPECT_REJECTED(bytes, code, text)                                                                             \
  do {                                                                                                                 \
    LoadResult r_ = load(bytes);                                                                                       \
    EXPECT_EQ(r_.status, code) << r_.message;                                                                          \
    EXPECT_NE(r_.message.find(text), std::string::npos) << "message: " << r_.message;                                  \
  } while (0)

TEST(EngineFormat, RoundTrip) {
  EngineDesc d = test::makeAxpbEngine();
  d.route = "gemm.tile=64x128;precision=fp16";
  d.environment["cuda"] = "13.0";
  d.modules[0].cubin = {0x7f, 'E', 'L', 'F', 1, 2, 3};
  d.cudaGraph = true;
  d.gemmSearch = true;
  d.launches[0].flops = 2000, d.launches[0].trafficBytes = 12000;  // (optional keys; the copy has none)
  std::vector<uint8_t> bytes = writeEngine(d);

  EngineDesc back;
  std::string error;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error), ParseStatus::Ok) << error;
  EXPECT_EQ(back.kilnVersion, d.kilnVersion);
  EXPECT_EQ(back.arch, "sm_90");
  EXPECT_EQ(back.sm, 90);
  EXPECT_EQ(back.route, d.route);
  EXPECT_EQ(back.environment, d.environment);
  ASSERT_EQ(back.io.size(), 2u);
  EXPECT_EQ(back.io[1].name, "y");
  EXPECT_FALSE(back.io[1].isInput);
  EXPECT_EQ(back.io[1].shape, std::vector<int64_t>{1000});
  EXPECT_EQ(back.modules[0].ptx, d.modules[0].ptx);
  EXPECT_EQ(back.modules[0].cubin, d.modules[0].cubin);
  EXPECT_EQ(back.kernels[0].entry, "axpb");
  EXPECT_EQ(back.arenaBytes, 4000u);
  EXPECT_EQ(back.weights, d.weights);
  ASSERT_EQ(back.launches.size(), 2u);
  EXPECT_EQ(back.launches[0].grid[0], 4u);
  EXPECT_EQ(back.launches[0].args[3].f32, test::kAxpbA);
  EXPECT_EQ(back.launches[0].args[5].i64, 1000);
  EXPECT_EQ(back.launches[1].kind, Launch::Kind::Copy);
  EXPECT_EQ(back.launches[1].dst.io, 1);
  EXPECT_EQ(back.launches[0].flops, 2000u);
  EXPECT_EQ(back.launches[0].trafficBytes, 12000u);
  EXPECT_EQ(back.launches[1].flops, 0u);
  EXPECT_TRUE(back.cudaGraph);
  EXPECT_TRUE(back.gemmSearch);
  // Everything survived: writing the decoded desc gives the same bytes.
  EXPECT_EQ(writeEngine(back), bytes);

  // The runtime's zero-copy form leaves the weights in the file.
  ByteRange w;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error, &w), ParseStatus::Ok) << error;
  EXPECT_TRUE(back.weights.empty());
  ASSERT_EQ(w.size, d.weights.size());
  EXPECT_EQ(w.offset % 64, 0u);
  EXPECT_EQ(0, std::memcmp(bytes.data() + w.offset, d.weights.data(), d.weights.size()));
}

TEST(EngineFormat, Deterministic) {
  EngineDesc a = test::makeAxpbEngine();
  EngineDesc b = test::makeAxpbEngine();
  a.environment = {{"zeta", "1"}, {"alpha", "2"}};
  b.environment.clear();
  b.environment["alpha"] = "2";
  b.environment["zeta"] = "1";
  EXPECT_EQ(writeEngine(a), writeEngine(a));
  EXPECT_EQ(writeEngine(a), writeEngine(b));
}

TEST(EngineFormat, LayoutIsAligned) {
  std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine());
  EXPECT_EQ(0, std::memcmp(bytes.data(), "KILNENG\0", 8));
  EXPECT_EQ(u32At(bytes, 8), kEngineFormatVersion);
  EXPECT_EQ(u32At(bytes, 12), 64u);
  EXPECT_EQ(u64At(bytes, 16), bytes.size());
  EXPECT_EQ(bytes.size() % 64, 0u);
  uint32_t n = u32At(bytes, 32);
  EXPECT_EQ(n, 3u);  // metadata, PTX, weights
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(u64At(bytes, kHeaderSize + i * kSectionEntrySize + 8) % 64, 0u);
}

TEST(EngineFormat, SpecialFloatsRoundTrip) {
  EngineDesc d = test::makeAxpbEngine(16);
  const float values[] = {std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min(),
                          -0.0f,
                          0.1f,
                          std::numeric_limits<float>::max()};
  for (float v : values) d.launches[0].args.push_back(LaunchArg::ofF32(v));
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string error;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error), ParseStatus::Ok) << error;
  for (size_t i = 0; i < std::size(values); ++i) {
    float got = back.launches[0].args[6 + i].f32;
    EXPECT_EQ(0, std::memcmp(&got, &values[i], 4)) << i;
  }
}

TEST(EngineFormat, EveryTruncationIsRejected) {
  std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine(16));
  ASSERT_EQ(load(bytes).status, KILN_OK) << load(bytes).message;
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    LoadResult r = load(cut);
    ASSERT_EQ(r.status, KILN_ERROR_FORMAT) << "length " << n << ": " << r.message;
    ASSERT_FALSE(r.message.empty());
    if (n >= 12) {
      ASSERT_NE(r.message.find("truncated"), std::string::npos) << "length " << n << ": " << r.message;
    }
  }
}

TEST(EngineFormat, EveryByteFlipIsDetected) {
  const std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine(16));
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= mask;
      LoadResult r = load(bad);
      ASSERT_TRUE(r.status == KILN_ERROR_FORMAT || r.status == KILN_ERROR_VERSION) << "byte " << i << ": " << r.message;
      ASSERT_FALSE(r.message.empty());
      if (i >= kHeaderSize) {
        ASSERT_NE(r.message.find("checksum mismatch"), std::string::npos) << "byte " << i << ": " << r.message;
      }
    }
  }
}

// Random damage with a repaired checksum reaches the section table, JSON and validation code;
// none of it may crash (this test runs under ASan/UBSan in the fuzz build).
TEST(EngineFormat, RandomDamageBehindTheChecksum) {
  const std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine(16));
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> bad = bytes;
    int edits = 1 + int(rng() % 4);
    for (int k = 0; k < edits; ++k) bad[kHeaderSize + rng() % (bad.size() - kHeaderSize)] = uint8_t(rng());
    reseal(bad);
    LoadResult r = load(bad);
    if (r.status != KILN_OK) {
      ASSERT_FALSE(r.message.empty());
    }
  }
}

TEST(EngineFormat, WrongMagic) {
  std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine(16));
  bytes[3] = 'X';
  EXPECT_REJECTED(bytes, KILN_ERROR_FORMAT, "not a kiln engine");
  EXPECT_REJECTED(std::vector<uint8_t>{}, KILN_ERROR_FORMAT, "empty");
  std::vector<uint8_t> onnx = {0x08, 0x07, 0x12, 0x04};
  EXPECT_REJECTED(onnx, KILN_ERROR_FORMAT, "not a kiln engine");
}

TEST(EngineFormat, WrongVersion) {
  std::vector<uint8_t> v8 = pack(sectionsOf(writeEngine(test::makeAxpbEngine(16))), 8);
  EXPECT_REJECTED(v8, KILN_ERROR_VERSION, "engine format version 8, this runtime reads versions 1 to 7");
  // A newer file says so even when it is cut short.
  v8.resize(20);
  EXPECT_REJECTED(v8, KILN_ERROR_VERSION, "engine format version 8");
  // Header and metadata must agree.
  std::vector<uint8_t> v1 = pack(sectionsOf(writeEngine(test::makeAxpbEngine(16))), 1);
  EXPECT_REJECTED(v1, KILN_ERROR_FORMAT, "format_version: 7 disagrees with the header's 1");
}

// A library GEMM launch (format version 2): written, read back field by field, and its buffers
// checked against their spaces.
TEST(EngineFormat, GemmLaunch) {
  EngineDesc d = test::makeAxpbEngine(64);
  d.arenaBytes = 64 * 64 * 2 * 3;
  Launch l;
  l.kind = Launch::Kind::Gemm;
  l.node = "fc";
  GemmCall& g = l.gemm;
  g.m = 64, g.n = 32, g.k = 16, g.lda = 64, g.ldb = 32, g.ldc = 64, g.transB = true;
  g.alpha = 0.5f, g.epilogue = GemmCall::Bias;
  g.a = {BufferRef::Space::Arena, 0, -1};
  g.b = {BufferRef::Space::Arena, 64 * 16 * 2, -1};
  g.d = {BufferRef::Space::Arena, 8192, -1};
  g.bias = {BufferRef::Space::Weights, 0, -1};
  d.launches.push_back(l);
  ASSERT_EQ(checkEngineDesc(d), "");
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string err;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, err), ParseStatus::Ok) << err;
  const GemmCall& h = back.launches.back().gemm;
  EXPECT_EQ(back.launches.back().kind, Launch::Kind::Gemm);
  EXPECT_EQ(back.launches.back().node, "fc");
  EXPECT_EQ(h.m, 64);
  EXPECT_EQ(h.n, 32);
  EXPECT_EQ(h.k, 16);
  EXPECT_TRUE(h.transB);
  EXPECT_FALSE(h.transA);
  EXPECT_EQ(h.alpha, 0.5f);
  EXPECT_EQ(h.epilogue, GemmCall::Bias);
  EXPECT_EQ(h.d.offset, 8192u);
  EXPECT_EQ(h.bias.space, BufferRef::Space::Weights);
  // D past the end of the arena, a leading dimension below the rows, an unsupported type.
  EngineDesc bad = d;
  bad.launches.back().gemm.d.offset = d.arenaBytes - 16;
  EXPECT_NE(checkEngineDesc(bad).find("gemm D"), std::string::npos) << checkEngineDesc(bad);
  bad = d;
  bad.launches.back().gemm.lda = 8;
  EXPECT_NE(checkEngineDesc(bad).find("leading dimension 8 is below its 64 rows"), std::string::npos);
  bad = d;
  bad.launches.back().gemm.abType = 7;
  EXPECT_NE(checkEngineDesc(bad).find("element types"), std::string::npos);
  // fp8 A and B (op(A) = Aᵀ, op(B) = B) with their scale vectors: written and read back; the
  // other operand forms, and a scale vector past the weights, are refused.
  EngineDesc f8 = d;
  GemmCall& q = f8.launches.back().gemm;
  q.abType = 17, q.transA = true, q.transB = false, q.lda = 16, q.ldb = 16;
  q.scaleA = {BufferRef::Space::Weights, 0, -1};
  q.scaleB = {BufferRef::Space::Weights, 0, -1};
  f8.weights.resize(64 * 4);
  ASSERT_EQ(checkEngineDesc(f8), "");
  bytes = writeEngine(f8);
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, err), ParseStatus::Ok) << err;
  EXPECT_TRUE(back.launches.back().gemm.fp8());
  EXPECT_EQ(back.launches.back().gemm.scaleB.space, BufferRef::Space::Weights);
  bad = f8;
  bad.launches.back().gemm.transB = true;
  EXPECT_NE(checkEngineDesc(bad).find("fp8 products take op(A) = Aᵀ, op(B) = B"), std::string::npos)
      << checkEngineDesc(bad);
  bad = f8;
  bad.launches.back().gemm.scaleA.offset = 64;
  EXPECT_NE(checkEngineDesc(bad).find("scale_a"), std::string::npos) << checkEngineDesc(bad);
  // TF32 (gemm.tf32): float A and B only; written only when set, so an exact product's launch
  // reads back exact.
  EngineDesc t = d;
  t.weights.resize(64 * 4);
  GemmCall& tg = t.launches.back().gemm;
  tg.abType = tg.cdType = 1, tg.tf32 = true;
  ASSERT_EQ(checkEngineDesc(t), "");
  bytes = writeEngine(t);
  EXPECT_NE(std::string(bytes.begin(), bytes.end()).find("\"tf32\":true"), std::string::npos);
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, err), ParseStatus::Ok) << err;
  EXPECT_TRUE(back.launches.back().gemm.tf32);
  tg.tf32 = false;
  bytes = writeEngine(t);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()).find("\"tf32\""), std::string::npos);
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, err), ParseStatus::Ok) << err;
  EXPECT_FALSE(back.launches.back().gemm.tf32);
  bad = d;
  bad.launches.back().gemm.tf32 = true;
  EXPECT_NE(checkEngineDesc(bad).find("tf32 is for float A and B"), std::string::npos) << checkEngineDesc(bad);
}

// Pointer-array batches (format version 3): BERT-like heads [B, S, H, D] = [2, 8, 3, 4] read
// in place, 6 products of op(A) 8x4 from A's [2, 8, 12] (steps 96 and 4) times a shared B
// (step 0), D contiguous 8x8 each. Read back field by field; the steps, the batch and the spaces
// are checked.
TEST(EngineFormat, PointerBatchGemm) {
  EngineDesc d = test::makeAxpbEngine(64);
  d.arenaBytes = 4096 * 4;
  Launch l;
  l.kind = Launch::Kind::Gemm;
  l.node = "qk";
  GemmCall& g = l.gemm;
  g.abType = g.cdType = 1;
  g.m = 8, g.n = 8, g.k = 4, g.transA = true, g.lda = 12, g.ldb = 4, g.ldc = 8, g.batch = 6;
  g.batchDims = {2, 3}, g.batchStepsA = {96, 4}, g.batchStepsB = {0, 0}, g.batchStepsC = {192, 64};
  g.a = {BufferRef::Space::Arena, 0, -1};
  g.b = {BufferRef::Space::Weights, 0, -1};
  g.d = {BufferRef::Space::Arena, 1024 * 4, -1};
  d.weights.resize(8 * 4 * 4);
  d.launches.push_back(l);
  ASSERT_EQ(checkEngineDesc(d), "");
  EXPECT_EQ(g.batchOffset(g.batchStepsA, 4), 96 + 4);  // product (1, 1)
  EXPECT_EQ(g.batchOffset(g.batchStepsC, 5), 192 + 2 * 64);
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string err;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, err), ParseStatus::Ok) << err;
  const GemmCall& h = back.launches.back().gemm;
  EXPECT_TRUE(h.pointerBatch());
  EXPECT_EQ(h.batchDims, g.batchDims);
  EXPECT_EQ(h.batchStepsA, g.batchStepsA);
  EXPECT_EQ(h.batchStepsB, g.batchStepsB);
  EXPECT_EQ(h.batchStepsC, g.batchStepsC);
  // A strided batch writes none of the fields.
  EngineDesc strided = d;
  GemmCall& sg = strided.launches.back().gemm;
  sg.batchDims.clear(), sg.batchStepsA.clear(), sg.batchStepsB.clear(), sg.batchStepsC.clear();
  sg.strideA = 4, sg.strideC = 64;
  ASSERT_EQ(checkEngineDesc(strided), "");
  std::vector<uint8_t> plain = writeEngine(strided);
  EXPECT_EQ(std::string(plain.begin(), plain.end()).find("batch_dims"), std::string::npos);
  auto rejects = [&](auto change, const std::string& want) {
    EngineDesc bad = d;
    change(bad.launches.back().gemm);
    std::string why = checkEngineDesc(bad);
    EXPECT_NE(why.find(want), std::string::npos) << "got: " << why;
  };
  rejects([](GemmCall& b) { b.batchStepsB = {0}; }, "batch_dims and batch_steps_a/b/c differ in length");
  rejects([](GemmCall& b) { b.batch = 7; }, "batch_dims make 6 products, batch says 7");
  rejects([](GemmCall& b) { b.batchStepsA = {96, 4000}; }, "gemm A");  // past the arena's end
  rejects([](GemmCall& b) { b.batchStepsC = {192, 64 * 1000}; }, "gemm D");
  rejects(
      [](GemmCall& b) {
        b.a = {BufferRef::Space::Io, 0, 0};
      },
      "gemm A: an I/O tensor read through pointer-array batches");
  rejects([](GemmCall& b) { b.d = {BufferRef::Space::Io, 0, 1}; }, "gemm D: an I/O tensor");
  // A negative step in the file: the reader names it.
  std::vector<RawSection> sections = sectionsOf(bytes);
  json meta = json::parse(sections[0].bytes.begin(), sections[0].bytes.end());
  meta["launches"].back()["gemm"]["batch_steps_a"][1] = -4;
  std::string text = meta.dump();
  sections[0].bytes.assign(text.begin(), text.end());
  EXPECT_REJECTED(pack(sections), KILN_ERROR_FORMAT, "gemm.batch_steps_a[1]: ");
}

TEST(EngineFormat, SizeMismatch) {
  std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine(16));
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 64);
  EXPECT_REJECTED(cut, KILN_ERROR_FORMAT, "truncated engine: the header says " + std::to_string(bytes.size()));
  std::vector<uint8_t> longer = bytes;
  longer.resize(bytes.size() + 5);
  EXPECT_REJECTED(longer, KILN_ERROR_FORMAT, "5 bytes after its end");
}

TEST(EngineFormat, SectionTableProblems) {
  const std::vector<uint8_t> good = writeEngine(test::makeAxpbEngine(16));
  const size_t ptxEntry = kHeaderSize + 1 * kSectionEntrySize, weightsEntry = kHeaderSize + 2 * kSectionEntrySize;
  {
    std::vector<uint8_t> b = good;
    putU64(b, weightsEntry + 16, b.size());  // weights size runs past the end
    reseal(b);
    EXPECT_REJECTED(b, KILN_ERROR_FORMAT, "section 2 (WEIGHTS): bytes [");
  }
  {
    std::vector<uint8_t> b = good;
    putU64(b, weightsEntry + 8, u64At(b, ptxEntry + 8));  // weights on top of the PTX
    reseal(b);
    EXPECT_REJECTED(b, KILN_ERROR_FORMAT, "overlap");
  }
  {
    std::vector<uint8_t> b = good;
    putU64(b, ptxEntry + 8, u64At(b, ptxEntry + 8) + 8);
    reseal(b);
    EXPECT_REJECTED(b, KILN_ERROR_FORMAT, "not 64-byte aligned");
  }
  {
    std::vector<uint8_t> b = good;
    b[ptxEntry] = 9;
    reseal(b);
    EXPECT_REJECTED(b, KILN_ERROR_FORMAT, "section 1: unknown kind 9");
  }
  {
    std::vector<RawSection> s = sectionsOf(good);
    s.push_back({uint32_t(SectionKind::Ptx), {'x'}});
    EXPECT_REJECTED(pack(s), KILN_ERROR_FORMAT, "section 3 (PTX) is not referenced");
  }
  {
    std::vector<RawSection> s = sectionsOf(good);
    s.pop_back();
    EXPECT_REJECTED(pack(s), KILN_ERROR_FORMAT, "no WEIGHTS section");
  }
}

TEST(EngineFormat, BadJson) {
  std::vector<RawSection> s = sectionsOf(writeEngine(test::makeAxpbEngine(16)));
  s[0].bytes = {'{', '"', 'i', 'o', '"', ':'};
  EXPECT_REJECTED(pack(s), KILN_ERROR_FORMAT, "metadata is not valid JSON: parse error");
  s[0].bytes = {'[', ']'};
  EXPECT_REJECTED(pack(s), KILN_ERROR_FORMAT, "metadata: (top level): expected an object");
  std::string deep(100, '[');
  s[0].bytes.assign(deep.begin(), deep.end());
  EXPECT_REJECTED(pack(s), KILN_ERROR_FORMAT, "nested more than");
}

TEST(EngineFormat, MissingOrWronglyTypedFields) {
  EXPECT_REJECTED(withMetadata([](json& m) { m.erase("route"); }), KILN_ERROR_FORMAT,
                  "metadata: missing field 'route'");
  EXPECT_REJECTED(withMetadata([](json& m) { m["io"][0]["dtype"] = "float"; }), KILN_ERROR_FORMAT,
                  "metadata: io[0].dtype: expected an integer");
  EXPECT_REJECTED(withMetadata([](json& m) {
                    m["launches"][0]["grid"] = {1, 1};
                  }),
                  KILN_ERROR_FORMAT, "launches[0].grid: expected 3 integers");
  EXPECT_REJECTED(withMetadata([](json& m) {
                    m["launches"][0]["args"][4] = {{"i32", 1ll << 40}};
                  }),
                  KILN_ERROR_FORMAT, "launches[0].args[4].i32: out of range");
  EXPECT_REJECTED(withMetadata([](json& m) {
                    m["launches"][0]["args"][3] = {{"f32", 1e300}};
                  }),
                  KILN_ERROR_FORMAT, "outside the float32 range");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][0]["args"][0]["space"] = "heap"; }), KILN_ERROR_FORMAT,
                  "'heap' is not arena, weights or io");
  EXPECT_REJECTED(withMetadata([](json& m) { m["environment"]["x"] = 3; }), KILN_ERROR_FORMAT,
                  "environment.x: expected a string");
  EXPECT_REJECTED(withMetadata([](json& m) { m["format_version"] = 6; }), KILN_ERROR_FORMAT,
                  "disagrees with the header");
  EXPECT_REJECTED(withMetadata([](json& m) { m["memory"]["weights_bytes"] = 8; }), KILN_ERROR_FORMAT,
                  "memory.weights_bytes is 8 but the WEIGHTS section has 64 bytes");
  EXPECT_REJECTED(withMetadata([](json& m) { m["modules"][0]["ptx"] = 2; }), KILN_ERROR_FORMAT,
                  "modules[0].ptx: section 2 is WEIGHTS, not PTX");
  EXPECT_REJECTED(withMetadata([](json& m) { m["modules"][0]["ptx"] = 9; }), KILN_ERROR_FORMAT,
                  "section index 9 out of range");
  EXPECT_REJECTED(withMetadata([](json& m) { m["target"]["arch"] = "sm_80"; }), KILN_ERROR_FORMAT,
                  "target arch 'sm_80' disagrees with target sm 90");
  EXPECT_REJECTED(withMetadata([](json& m) { m["cuda_graph"] = 1; }), KILN_ERROR_FORMAT,
                  "metadata: cuda_graph: expected true or false");
  // Optional fields may be absent.
  EXPECT_EQ(load(withMetadata([](json& m) { m.erase("cuda_graph"); })).status, KILN_OK);
}

TEST(EngineFormat, IndicesOutOfRange) {
  EXPECT_REJECTED(withMetadata([](json& m) { m["kernels"][0]["module"] = 5; }), KILN_ERROR_FORMAT,
                  "kernel 0 ('axpb'): module index 5 out of range (1 modules)");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][0]["kernel"] = 3; }), KILN_ERROR_FORMAT,
                  "launch 0 (node '/axpb'): kernel index 3 out of range (1 kernels)");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][0]["args"][0]["io"] = 7; }), KILN_ERROR_FORMAT,
                  "arg 0: io index 7 out of range (2 I/O tensors)");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][1]["copy"]["dst"]["io"] = -1; }), KILN_ERROR_FORMAT,
                  "copy destination: io index -1 out of range");
}

TEST(EngineFormat, BuffersOutOfBounds) {
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][0]["args"][2]["offset"] = 64; }), KILN_ERROR_FORMAT,
                  "arg 2: arena range [64, +0) is outside the arena (64 bytes)");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][0]["args"][1]["offset"] = 100; }), KILN_ERROR_FORMAT,
                  "is outside the weights (64 bytes)");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][1]["copy"]["bytes"] = 65; }), KILN_ERROR_FORMAT,
                  "copy source: arena range [0, +65) is outside the arena");
  EXPECT_REJECTED(withMetadata([](json& m) { m["launches"][1]["copy"]["dst"]["offset"] = 4; }), KILN_ERROR_FORMAT,
                  "copy destination: io range [4, +64) is outside I/O tensor 1 'y' (64 bytes)");
  EXPECT_REJECTED(withMetadata([](json& m) { m["memory"]["arena_bytes"] = 1ull << 60; }), KILN_ERROR_FORMAT,
                  "memory.arena_bytes: 1152921504606846976 exceeds the limit");
  EXPECT_REJECTED(withMetadata([](json& m) {
                    m["io"][0]["shape"] = {1ll << 30, 1ll << 30, 1ll << 30};
                  }),
                  KILN_ERROR_FORMAT, "io[0] 'x': tensor size is absurd");
  EXPECT_REJECTED(withMetadata([](json& m) { m["io"][0]["dtype"] = 8; }), KILN_ERROR_FORMAT, "unsupported dtype 8");
}

TEST(EngineFormat, CheckEngineDescCatchesPlanErrors) {
  EngineDesc d = test::makeAxpbEngine(16);
  EXPECT_EQ(checkEngineDesc(d), "");
  EngineDesc e = d;
  e.launches[1].dst = {BufferRef::Space::Io, 0, 0};
  EXPECT_NE(checkEngineDesc(e).find("copy into input 'x', which is read-only"), std::string::npos);
  e = d;
  e.launches[1].dst = {BufferRef::Space::Weights, 0, -1};
  EXPECT_NE(checkEngineDesc(e).find("copy into the weights"), std::string::npos);
  e = d;
  e.launches[1].dst = {BufferRef::Space::Arena, 8, -1};
  e.launches[1].bytes = 16;
  EXPECT_NE(checkEngineDesc(e).find("overlap"), std::string::npos);
  e = d;
  e.launches[0].block[0] = 2048;
  EXPECT_NE(checkEngineDesc(e).find("block [2048,1,1] is outside CUDA's limits"), std::string::npos);
  e = d;
  e.io[1].name = "x";
  EXPECT_NE(checkEngineDesc(e).find("duplicate I/O tensor name"), std::string::npos);
  e = d;
  e.modules[0].ptx.clear();
  EXPECT_NE(checkEngineDesc(e).find("module 0 has neither cubin nor PTX"), std::string::npos);
  e = d;
  e.arch = "compute_90";
  EXPECT_NE(checkEngineDesc(e).find("not of the form sm_<number>"), std::string::npos);
  e = d;
  e.arch = "sm_90a";
  EXPECT_EQ(checkEngineDesc(e), "");
}

TEST(EngineFormat, CApiLoadFromFile) {
  std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine());
  std::string path = ::testing::TempDir() + "kiln_engine_format_test.kiln";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  kiln_engine* e = nullptr;
  ASSERT_EQ(kiln_engine_load(path.c_str(), &e), KILN_OK) << kiln_status_message(KILN_ERROR_FORMAT);
  EXPECT_EQ(kiln_engine_num_io(e), 2);
  EXPECT_STREQ(kiln_engine_io_name(e, 0), "x");
  EXPECT_EQ(kiln_engine_io_dtype(e, 0), KILN_DTYPE_FLOAT32);
  EXPECT_EQ(kiln_engine_io_rank(e, 0), 1);
  EXPECT_EQ(kiln_engine_io_shape(e, 0)[0], 1000);
  EXPECT_EQ(kiln_engine_io_is_input(e, 1), 0);
  EXPECT_STREQ(kiln_engine_target_arch(e), "sm_90");
  EXPECT_STREQ(kiln_engine_route(e), "");
  EXPECT_EQ(kiln_engine_io_name(e, 2), nullptr);
  kiln_engine_destroy(e);
  std::remove(path.c_str());

  kiln_engine* none = nullptr;
  kiln_status s = kiln_engine_load((path + ".missing").c_str(), &none);
  EXPECT_EQ(s, KILN_ERROR_IO);
  EXPECT_NE(std::string(kiln_status_message(s)).find("No such file"), std::string::npos) << kiln_status_message(s);
}

// Only a regular file is read: a directory (whose "size" is 2^63) and a FIFO (which would block
// the open) are refused with KILN_ERROR_IO at once.
TEST(EngineFormat, CApiLoadRefusesDirectoriesAndFifos) {
  std::string dir = ::testing::TempDir() + "kiln_engine_dir_test";
  std::string fifo = ::testing::TempDir() + "kiln_engine_fifo_test";
  ::rmdir(dir.c_str());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {dir, fifo, std::string("/dev/zero")}) {
    kiln_engine* e = reinterpret_cast<kiln_engine*>(&e);
    kiln_status s = kiln_engine_load(path.c_str(), &e);
    EXPECT_EQ(s, KILN_ERROR_IO) << path;
    EXPECT_EQ(e, nullptr);
    std::string message = kiln_status_message(s);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(path == dir ? "it is a directory" : "not a regular file"), std::string::npos) << message;
  }
  ::rmdir(dir.c_str());
  ::unlink(fifo.c_str());
}

// Modules that all name one image section would be copied once each: a small file could ask for
// gigabytes. A section belongs to one module.
TEST(EngineFormat, ASectionIsTheImageOfOneModule) {
  std::vector<uint8_t> bytes = withMetadata([](json& m) {
    m["modules"].push_back(m["modules"][0]);
    m["kernels"].push_back(m["kernels"][0]);
    m["kernels"][1]["module"] = 1;
  });
  EXPECT_REJECTED(bytes, KILN_ERROR_FORMAT, "modules[1].ptx: section 1 is already the image of module 0");
}

// Operand extents are computed in checked 64-bit arithmetic: A spans 2^62 float elements,
// 2^64 bytes, which wrapped to 0 and passed as "inside the arena".
TEST(EngineFormat, GemmExtentsThatWrapAreRefused) {
  EngineDesc d = test::makeAxpbEngine(64);
  d.arenaBytes = uint64_t(1) << 40;
  Launch l;
  l.kind = Launch::Kind::Gemm;
  l.node = "wrap";
  GemmCall& g = l.gemm;
  const int64_t big = (int64_t(1) << 31) - 1;
  g.abType = g.cdType = 1;
  g.m = 1, g.n = 1, g.k = (int64_t(1) << 30) + 1, g.lda = big, g.ldb = g.k, g.ldc = 1;
  g.batch = (int64_t(1) << 30) + 2, g.strideA = big;
  g.a = g.b = g.d = {BufferRef::Space::Arena, 0, -1};
  d.launches.push_back(l);
  uint64_t bytes = 0;
  EXPECT_FALSE(gemmOperandBytes(g, GemmOperand::A, bytes));
  ASSERT_TRUE(gemmOperandBytes(g, GemmOperand::B, bytes));
  EXPECT_EQ(bytes, uint64_t(g.k) * 4);
  EXPECT_NE(checkEngineDesc(d).find("gemm A: extent of 1073741826 products overflows 64 bits"), std::string::npos)
      << checkEngineDesc(d);
  EXPECT_REJECTED(writeEngine(d), KILN_ERROR_FORMAT, "overflows 64 bits");
}

// Tensor-map arguments (version 7) round-trip, and the checker holds them to TMA's rules and
// inside their buffer: a map of 125 rows of 8 floats (32-byte rows) spans the 4000 weight bytes.
TEST(EngineFormat, TensorMapArguments) {
  EngineDesc d = test::makeAxpbEngine(1000);
  TensorMap m;
  m.buffer = {BufferRef::Space::Weights, 0, -1};
  m.dtype = 1, m.dims = {8, 125}, m.strides = {32}, m.box = {8, 16}, m.swizzle = 32;
  d.launches[0].args.push_back(LaunchArg::ofTensorMap(m));
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string error;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error), ParseStatus::Ok) << error;
  const LaunchArg& a = back.launches[0].args.back();
  ASSERT_EQ(a.kind, LaunchArg::Kind::TensorMap);
  EXPECT_EQ(a.tensorMap.buffer.space, BufferRef::Space::Weights);
  EXPECT_EQ(a.tensorMap.dims, m.dims);
  EXPECT_EQ(a.tensorMap.strides, m.strides);
  EXPECT_EQ(a.tensorMap.box, m.box);
  EXPECT_EQ(a.tensorMap.swizzle, 32);
  EXPECT_EQ(a.tensorMap.dtype, 1);
  EXPECT_EQ(writeEngine(back), bytes);
  struct Bad {
    std::function<void(TensorMap&)> change;
    const char* message;
  };
  for (const Bad& b : std::vector<Bad>{
           {[](TensorMap& t) { t.dims[1] = 126; }, "weights range [0, +4032) is outside"},
           {[](TensorMap& t) { t.buffer.offset = 8; }, "an offset that is no multiple of 16"},
           {[](TensorMap& t) { t.box[0] = 12; }, "a box row of 48 bytes"},
           {[](TensorMap& t) { t.box[1] = 300; }, "box dim 1 outside 1..256"},
           {[](TensorMap& t) { t.strides[0] = 40; }, "a stride that is no multiple of 16"},
           {[](TensorMap& t) { t.swizzle = 48; }, "swizzle 48"},
           {[](TensorMap& t) { t.dtype = 7; }, "element type 7 has no TMA form"},
           {[](TensorMap& t) { t.strides.clear(); }, "strides or box do not match the rank 2"},
       }) {
    EngineDesc bad = d;
    b.change(bad.launches[0].args.back().tensorMap);
    std::string problem = checkEngineDesc(bad);
    EXPECT_NE(problem.find(b.message), std::string::npos) << problem;
    EXPECT_NE(problem.find("arg 6: tensor map"), std::string::npos) << problem;
  }
}

// Messages quote names clipped: 20,000 launches of a kernel whose entry name has 1 MB made the
// checker copy that name once per launch, and a launch's node name was copied once per argument
// (tens of GB: kiln_engine_load seemed to hang).
TEST(EngineFormat, LongNamesCostLinearTime) {
  EngineDesc d = test::makeAxpbEngine(16);
  d.kernels[0].entry = std::string(1 << 20, 'e');
  Launch& l = d.launches[0];
  l.node = std::string(4 << 20, 'n');
  while (l.args.size() < 1000) l.args.push_back(LaunchArg::buf({BufferRef::Space::Arena, 0, -1}));
  Launch small = l;
  small.node.clear();
  small.args.resize(1);
  d.launches.insert(d.launches.end(), 20000, small);
  std::vector<uint8_t> bytes = writeEngine(d);
  auto t0 = std::chrono::steady_clock::now();
  LoadResult r = load(bytes);
  EXPECT_EQ(r.status, KILN_OK) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  d.launches[0].args.back().buffer.offset = d.arenaBytes + 64;  // and a failure quotes it clipped
  std::string problem = checkEngineDesc(d);
  EXPECT_NE(problem.find("(node 'nnn"), std::string::npos) << problem.substr(0, 200);
  EXPECT_LT(problem.size(), 400u);
}

// Metadata of many small objects parses in linear time: nlohmann's callback parser (the old depth
// limit) rescanned the enclosing array at the end of every element — a million empty objects hung
// kiln_engine_load. Unknown keys are ignored, so this loads.
TEST(EngineFormat, ManySmallObjectsParseInLinearTime) {
  std::vector<uint8_t> bytes =
      withMetadata([](json& m) { m["padding"] = json(std::vector<json>(200000, json::object())); });
  auto t0 = std::chrono::steady_clock::now();
  LoadResult r = load(bytes);
  EXPECT_EQ(r.status, KILN_OK) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_REJECTED(withMetadata([](json& m) { m["deep"] = json::parse(std::string(20, '[') + std::string(20, ']')); }),
                  KILN_ERROR_FORMAT, "metadata is nested more than 16 levels deep");
}

// With no driver library the context fails cleanly. (The driver is loaded once per process, so
// this must be the only test here that creates a context.)
TEST(EngineFormat, NoDriverMeansNoDevice) {
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::vector<uint8_t> bytes = writeEngine(test::makeAxpbEngine(16));
  kiln_engine* e = nullptr;
  ASSERT_EQ(kiln_engine_load_from_memory(bytes.data(), bytes.size(), &e), KILN_OK);
  kiln_context* c = reinterpret_cast<kiln_context*>(e);
  kiln_status s = kiln_context_create(e, &c);
  EXPECT_EQ(s, KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(kiln_status_message(s)).find("cannot load the NVIDIA driver library"), std::string::npos)
      << kiln_status_message(s);
  kiln_engine_destroy(e);
}

}  // namespace

// Dynamic shapes (version 4): dims and specialisations round-trip, the checker holds every
// specialisation's launches inside its own I/O shapes and arena, and bad profiles are refused.
TEST(EngineFormat, DynamicShapes) {
  EngineDesc d = test::makeDynamicAxpbEngine();
  ASSERT_EQ(checkEngineDesc(d), "");
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string error;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error), ParseStatus::Ok) << error;
  ASSERT_EQ(back.dims.size(), 1u);
  EXPECT_EQ(back.dims[0].name, "n");
  EXPECT_TRUE(back.dims[0].pad);
  EXPECT_EQ(back.numSpecialisations(), 3u);
  EXPECT_EQ(back.valuesOf(0), std::vector<int64_t>{1000});
  EXPECT_EQ(back.valuesOf(2), std::vector<int64_t>{100});
  EXPECT_EQ(back.shapeOf(1, 1), std::vector<int64_t>{500});
  EXPECT_EQ(back.arenaOf(1), 2000u);
  EXPECT_EQ(back.launchesOf(2)[0].args[5].i64, 100);
  EXPECT_EQ(writeEngine(back), bytes);

  auto problem = [](const std::function<void(EngineDesc&)>& edit) {
    EngineDesc e = test::makeDynamicAxpbEngine();
    edit(e);
    return checkEngineDesc(e);
  };
  EXPECT_NE(problem([](EngineDesc& e) { e.dims[0].min = 2000; }).find("not min <= opt <= max"), std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.dims[0].axes.push_back({1, 3});
            }).find("not an I/O tensor's"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.specialisations[0].values = {50}; }).find("outside its range"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.specialisations[1].values = {500}; }).find("repeats"), std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.dims[0].axes = {{1, 0}}; }).find("no input has it"), std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.dims.push_back({"m", 100, 1000, 1000, true, {{0, 0}}});
              e.specialisations[0].values.push_back(500), e.specialisations[1].values.push_back(100);
            }).find("belongs to two dims"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.specialisations[0].values = {1000, 1};
            }).find("2 values"),
            std::string::npos);
  // Specialisation 2 (n = 100) copying 400 bytes... made to copy 4000: outside its own y.
  EXPECT_NE(problem([](EngineDesc& e) { e.specialisations[1].launches[1].bytes = 4000; }).find("specialisation 2"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.specialisations[1].arenaBytes = 100; }).find("outside the arena"),
            std::string::npos);
  // The same damage through the reader.
  std::vector<uint8_t> bad = withMetadata([](json& m) {
    m["dims"] = json::array({{{"name", "n"}, {"min", 1}, {"opt", 16}, {"max", 16}, {"pad", true}, {"axes", {{0, 0}}}}});
    m["specialisations"] = json::array({{{"values", {8}}, {"arena_bytes", 10}, {"launches", m["launches"]}}});
  });
  EXPECT_REJECTED(bad, KILN_ERROR_FORMAT, "specialisation 1");
  EXPECT_REJECTED(withMetadata([](json& m) { m["dims"] = 3; }), KILN_ERROR_FORMAT, "dims");
}

// Version 6: several profiles round-trip, an engine without them has one (every dim's range and
// every specialisation), and profiles that do not fit their dims or specialisations are refused.
TEST(EngineFormat, SeveralProfiles) {
  EngineDesc one = test::makeDynamicAxpbEngine();
  ASSERT_EQ(one.numProfiles(), 1u);
  EXPECT_EQ(one.profileAt(0).specialisations, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(one.boundValues(EngineDesc::Bound::Min, 0), std::vector<int64_t>{100});

  EngineDesc d = test::makeTwoProfileAxpbEngine();
  ASSERT_EQ(checkEngineDesc(d), "");
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string error;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error), ParseStatus::Ok) << error;
  ASSERT_EQ(back.numProfiles(), 2u);
  EXPECT_EQ(back.boundValues(EngineDesc::Bound::Opt, 1), std::vector<int64_t>{100});
  EXPECT_EQ(back.boundValues(EngineDesc::Bound::Max, 1), std::vector<int64_t>{500});
  EXPECT_EQ(back.profileAt(1).specialisations, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(writeEngine(back), bytes);

  auto problem = [](const std::function<void(EngineDesc&)>& edit) {
    EngineDesc e = test::makeTwoProfileAxpbEngine();
    edit(e);
    return checkEngineDesc(e);
  };
  EXPECT_NE(problem([](EngineDesc& e) { e.profiles[1].max = {2000}; }).find("profile 1: dim 'n' range 100..2000"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.profiles[1].opt = {300}; }).find("no specialisation has its opt"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.profiles[0].specialisations = {0, 2};
            }).find("outside its range"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.profiles[1].specialisations = {1}, e.profiles[1].opt = {500};
            }).find("specialisation 2 belongs to no profile"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { std::swap(e.profiles[0], e.profiles[1]); }).find("profile 0's opt"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.profiles[0].min = {}; }).find("one min, opt and max per profile dim"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.profiles[1].specialisations = {1, 7};
            }).find("is not one"),
            std::string::npos);
  EXPECT_REJECTED(withMetadata([](json& m) { m["profiles"] = 3; }), KILN_ERROR_FORMAT, "profiles");
}

// Version 5: an output axis that is a fixed multiple or fraction of a dim (here y = 2n long) keeps
// its ratio through the file, takes it in every specialisation's shapes, and is refused on an
// input, with padding, or where a value would make it no whole number.
TEST(EngineFormat, ScaledOutputAxes) {
  auto scaled = [](EngineDesc& e) {
    e.dims[0].pad = false;
    e.dims[0].axes[1] = {1, 0, 2, 1};
    e.io[1].shape = {2000};
  };
  EngineDesc d = test::makeDynamicAxpbEngine();
  scaled(d);
  ASSERT_EQ(checkEngineDesc(d), "");
  std::vector<uint8_t> bytes = writeEngine(d);
  EngineDesc back;
  std::string error;
  ASSERT_EQ(parseEngine(bytes.data(), bytes.size(), back, error), ParseStatus::Ok) << error;
  ASSERT_EQ(back.dims[0].axes.size(), 2u);
  EXPECT_EQ(back.dims[0].axes[1].num, 2);
  EXPECT_EQ(back.dims[0].axes[1].den, 1);
  EXPECT_EQ(back.valuesOf(0), std::vector<int64_t>{1000});
  EXPECT_EQ(back.shapeOf(1, 1), std::vector<int64_t>{1000});  // n = 500
  EXPECT_EQ(back.shapeWith(1, back.boundValues(EngineDesc::Bound::Min)), std::vector<int64_t>{200});
  EXPECT_EQ(writeEngine(back), bytes);

  auto problem = [&](const std::function<void(EngineDesc&)>& edit) {
    EngineDesc e = test::makeDynamicAxpbEngine();
    scaled(e);
    edit(e);
    return checkEngineDesc(e);
  };
  EXPECT_NE(problem([](EngineDesc& e) { e.dims[0].pad = true; }).find("only an output of a dim without padding"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.dims[0].axes[0].num = 2; }).find("only an output of a dim without padding"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) {
              e.dims[0].axes[1] = {1, 0, 1, 3}, e.io[1].shape = {1000 / 3};
            }).find("no whole number"),
            std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.dims[0].axes[1].den = 0; }).find("has the ratio 2/0"), std::string::npos);
  EXPECT_NE(problem([](EngineDesc& e) { e.io[1].shape = {1000}; }).find("disagrees with dim 'n'"), std::string::npos);
}

// regionCopies moves exactly the common part of two shapes, for every axis that may differ.
TEST(EngineFormat, RegionCopies) {
  auto index = [](const std::vector<int64_t>& shape, const std::vector<int64_t>& idx) {
    int64_t o = 0;
    for (size_t k = 0; k < shape.size(); ++k) o = o * shape[k] + idx[k];
    return o;
  };
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {{{7}, {8}},
                                                                                    {{3, 5}, {4, 5}},
                                                                                    {{3, 5}, {3, 8}},
                                                                                    {{3, 5}, {4, 8}},
                                                                                    {{2, 3, 4}, {2, 5, 4}},
                                                                                    {{2, 3, 4}, {3, 3, 6}},
                                                                                    {{2, 2, 3, 4}, {2, 3, 3, 5}},
                                                                                    {{6, 1, 3}, {6, 1, 3}}};
  for (const auto& [small, large] : cases)
    for (bool pad : {true, false}) {
      const std::vector<int64_t>& src = pad ? small : large;
      const std::vector<int64_t>& dst = pad ? large : small;
      int64_t ns = 1, nd = 1;
      for (int64_t v : src) ns *= v;
      for (int64_t v : dst) nd *= v;
      std::vector<int32_t> from(static_cast<size_t>(ns)), to(static_cast<size_t>(nd), -1);
      for (int64_t i = 0; i < ns; ++i) from[size_t(i)] = int32_t(i);
      for (const RegionCopy& c : regionCopies(dst, src, 4))
        for (uint64_t r = 0; r < c.height; ++r)
          std::memcpy(reinterpret_cast<uint8_t*>(to.data()) + c.dstOffset + r * c.dstPitch,
                      reinterpret_cast<const uint8_t*>(from.data()) + c.srcOffset + r * c.srcPitch, c.width);
      // Every element of the common part came from the same index; nothing else was written.
      std::vector<int64_t> idx(small.size(), 0);
      int64_t written = 0;
      for (int32_t v : to) written += v >= 0;
      int64_t common = 1;
      for (int64_t v : small) common *= v;
      EXPECT_EQ(written, common);
      for (int64_t i = 0; i < common; ++i) {
        EXPECT_EQ(to[size_t(index(dst, idx))], index(src, idx));
        for (size_t k = small.size(); k-- > 0;)
          if (++idx[k] < small[k])
            break;
          else
            idx[k] = 0;
      }
    }
}

// The profile queries of the C API (no GPU needed).
TEST(EngineFormat, CApiProfiles) {
  std::vector<uint8_t> bytes = writeEngine(test::makeDynamicAxpbEngine());
  kiln_engine* e = nullptr;
  ASSERT_EQ(kiln_engine_load_from_memory(bytes.data(), bytes.size(), &e), KILN_OK);
  int64_t dims[2] = {0, 0};
  int32_t rank = 0;
  EXPECT_EQ(kiln_engine_num_profiles(e), 1);
  EXPECT_EQ(kiln_engine_profile_shape(e, 0, "x", KILN_PROFILE_MIN, dims, 2, &rank), KILN_OK);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(dims[0], 100);
  EXPECT_EQ(kiln_engine_profile_shape(e, 0, "x", KILN_PROFILE_OPT, dims, 2, &rank), KILN_OK);
  EXPECT_EQ(dims[0], 1000);
  EXPECT_EQ(kiln_engine_profile_shape(e, 0, "nope", KILN_PROFILE_OPT, dims, 2, &rank), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_engine_profile_shape(e, 1, "x", KILN_PROFILE_OPT, dims, 2, &rank), KILN_ERROR_INVALID_ARGUMENT);
  kiln_engine_destroy(e);

  bytes = writeEngine(test::makeTwoProfileAxpbEngine());
  ASSERT_EQ(kiln_engine_load_from_memory(bytes.data(), bytes.size(), &e), KILN_OK);
  EXPECT_EQ(kiln_engine_num_profiles(e), 2);
  EXPECT_EQ(kiln_engine_profile_shape(e, 1, "x", KILN_PROFILE_MAX, dims, 2, &rank), KILN_OK);
  EXPECT_EQ(dims[0], 500);
  EXPECT_EQ(kiln_engine_profile_shape(e, 0, "x", KILN_PROFILE_MIN, dims, 2, &rank), KILN_OK);
  EXPECT_EQ(dims[0], 500);
  EXPECT_EQ(kiln_engine_profile_shape(e, 2, "x", KILN_PROFILE_MIN, dims, 2, &rank), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_status_message(KILN_ERROR_INVALID_ARGUMENT)).find("profile 2 (the engine has 2)"),
            std::string::npos);
  kiln_engine_destroy(e);
}
