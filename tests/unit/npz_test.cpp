// .npy/.npz reader and writer: round trips, interchange with numpy (files written by np.savez /
// np.savez_compressed / np.save read here; ours checked by np.load), and hostile input (every
// truncation, every single-byte flip, patched sizes and offsets) giving errors rather than crashes.
// The numpy tests run /usr/bin/python3 and are skipped where it lacks numpy.
//
// The writer's ZIP64 records are only exercised here through the entry count (> 65535 entries);
// to cover the size and offset paths without 4 GiB files, build this test with
// -DKILN_NPZ_ZIP64_LIMIT=100 -DKILN_NPZ_ZIP64_COUNT_LIMIT=3 on Npz.cpp (every entry past 100 bytes
// and every archive of 3+ entries then uses ZIP64 records) and filter out CrcMismatch and
// PatchedDirectoryFields, which assume the classic layout.
#include "compiler/io/Npz.h"

#include "tests/unit/TempDirTest.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using kiln::io::NpyArray;
using kiln::io::Npz;

namespace {

const char *const kPython = "/usr/bin/python3";

bool haveNumpy() {
  static const bool have = [] {
    std::string cmd = std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1";
    return access(kPython, X_OK) == 0 && std::system(cmd.c_str()) == 0;
  }();
  return have;
}

template <typename T>
NpyArray makeArray(const std::string &descr, std::vector<int64_t> shape, const std::vector<T> &values) {
  NpyArray a;
  a.descr = descr;
  a.shape = std::move(shape);
  a.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

template <typename T> std::vector<T> valuesOf(const NpyArray &a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

void expectSame(const NpyArray &a, const NpyArray &b, const std::string &what) {
  EXPECT_EQ(a.descr, b.descr) << what;
  EXPECT_EQ(a.shape, b.shape) << what;
  EXPECT_EQ(a.data, b.data) << what;
}

void expectSame(const Npz &a, const Npz &b) {
  ASSERT_EQ(a.arrays.size(), b.arrays.size());
  for (size_t i = 0; i < a.arrays.size(); ++i) {
    EXPECT_EQ(a.arrays[i].first, b.arrays[i].first);
    expectSame(a.arrays[i].second, b.arrays[i].second, a.arrays[i].first);
  }
}

// A mix of dtypes and shapes, including a scalar, empty arrays and a non-ASCII name.
Npz sampleNpz() {
  Npz z;
  z.arrays.emplace_back("f32", makeArray<float>("<f4", {2, 3}, {0, 0.5f, 1, 1.5f, 2, -2.5f}));
  z.arrays.emplace_back("scalar_i64", makeArray<int64_t>("<i8", {}, {-(int64_t(1) << 40)}));
  z.arrays.emplace_back("empty", makeArray<float>("<f4", {0}, {}));
  z.arrays.emplace_back("empty3d", makeArray<int32_t>("<i4", {2, 0, 3}, {}));
  z.arrays.emplace_back("flags", makeArray<uint8_t>("|b1", {4}, {1, 0, 0, 1}));
  z.arrays.emplace_back("half", makeArray<uint16_t>("<f2", {2}, {0x3C00, 0xC000}));  // 1.0, -2.0
  z.arrays.emplace_back("u8", makeArray<uint8_t>("|u1", {1, 3}, {0, 128, 255}));
  z.arrays.emplace_back("i8", makeArray<int8_t>("|i1", {2}, {-128, 127}));
  z.arrays.emplace_back("u16", makeArray<uint16_t>("<u2", {2}, {0, 65535}));
  z.arrays.emplace_back("f64", makeArray<double>("<f8", {1}, {3.25}));
  z.arrays.emplace_back("gr\xC3\xB6\xC3\x9F"
                        "e",
                        makeArray<int16_t>("<i2", {1}, {-7}));  // "größe"
  return z;
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Bounds-checked (at() throws, which gtest reports) in case a layout assumption below breaks.
uint16_t rd16(const std::vector<uint8_t> &b, size_t off) {
  return static_cast<uint16_t>(b.at(off) | (b.at(off + 1) << 8));
}
uint32_t rd32(const std::vector<uint8_t> &b, size_t off) { return rd16(b, off) | (uint32_t(rd16(b, off + 2)) << 16); }
void put16(std::vector<uint8_t> &b, size_t off, uint32_t v) {
  b.at(off) = v & 0xFF;
  b.at(off + 1) = (v >> 8) & 0xFF;
}
void put32(std::vector<uint8_t> &b, size_t off, uint32_t v) {
  put16(b, off, v & 0xFFFF);
  put16(b, off + 2, v >> 16);
}

// Offset of the i-th central directory header of a comment-less, non-ZIP64 archive.
size_t centralEntry(const std::vector<uint8_t> &zip, size_t index) {
  size_t off = rd32(zip, zip.size() - 22 + 16);
  for (size_t i = 0; i < index; ++i) off += 46 + rd16(zip, off + 28) + rd16(zip, off + 30) + rd16(zip, off + 32);
  return off;
}

// An .npy file with the given header text (padded like numpy's) and data.
std::vector<uint8_t> rawNpy(std::string header, const std::vector<uint8_t> &data, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back((header.size() >> (8 * i)) & 0xFF);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

class NpzTest : public TempDirTest {
 protected:
  // Runs `script` with the temp dir as argv[1]; true if it exits 0.
  bool python(const std::string &script) {
    std::ofstream(path("script.py")) << script;
    std::string cmd = std::string(kPython) + " '" + path("script.py") + "' '" + dir_.string() + "'";
    int rc = std::system(cmd.c_str());
    return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
  }

  // The arrays numpy writes in writeNumpyFiles(), checked value by value.
  void expectNumpySample(const Npz &z, const std::string &what) {
    SCOPED_TRACE(what);
    std::vector<std::string> names;
    for (const auto &[n, a] : z.arrays) names.push_back(n);
    EXPECT_EQ(names, (std::vector<std::string>{"f32", "f16", "b", "i64", "u8", "f64s", "empty", "i8", "u16", "i32"}));
    const NpyArray *a = z.find("f32");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->descr, "<f4");
    EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 4}));
    std::vector<float> f32 = valuesOf<float>(*a);
    ASSERT_EQ(f32.size(), 12u);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(f32[i], i * 0.5f - 1);
    ASSERT_TRUE(a = z.find("f16"));
    EXPECT_EQ(a->descr, "<f2");
    EXPECT_EQ(valuesOf<uint16_t>(*a), (std::vector<uint16_t>{0x3E00, 0xC080, 0x7BFF, 0x1400}));
    ASSERT_TRUE(a = z.find("b"));
    EXPECT_EQ(a->descr, "|b1");
    EXPECT_EQ(a->shape, (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(a->data, (std::vector<uint8_t>{1, 0, 1}));
    ASSERT_TRUE(a = z.find("i64"));
    EXPECT_EQ(a->descr, "<i8");
    EXPECT_EQ(valuesOf<int64_t>(*a), (std::vector<int64_t>{-(int64_t(1) << 62), -1, 0, (int64_t(1) << 62) + 7}));
    ASSERT_TRUE(a = z.find("u8"));
    EXPECT_EQ(a->descr, "|u1");
    ASSERT_EQ(a->data.size(), 256u);
    for (int i = 0; i < 256; ++i) EXPECT_EQ(a->data[i], i);
    ASSERT_TRUE(a = z.find("f64s"));
    EXPECT_EQ(a->descr, "<f8");
    EXPECT_TRUE(a->shape.empty());
    EXPECT_EQ(valuesOf<double>(*a), (std::vector<double>{3.25}));
    ASSERT_TRUE(a = z.find("empty"));
    EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 0, 3}));
    EXPECT_EQ(a->numElements(), 0);
    EXPECT_TRUE(a->data.empty());
    ASSERT_TRUE(a = z.find("i8"));
    EXPECT_EQ(valuesOf<int8_t>(*a), (std::vector<int8_t>{-128, 127}));
    ASSERT_TRUE(a = z.find("u16"));
    EXPECT_EQ(valuesOf<uint16_t>(*a), (std::vector<uint16_t>{0, 65535}));
    ASSERT_TRUE(a = z.find("i32"));
    EXPECT_EQ(a->descr, "<i4");
    EXPECT_EQ(valuesOf<int32_t>(*a), (std::vector<int32_t>{-5, 0, 5}));
  }

  // plain.npz (np.savez), compressed.npz (np.savez_compressed), single.npy (np.save), the same
  // archives with ZIP64 records everywhere (zipfile's limits lowered), small ones for the corruption
  // loops, and arrays the reader must reject.
  bool writeNumpyFiles() {
    return python(R"PY(
import os, sys, zipfile
import numpy as np
d = sys.argv[1]
arrs = dict(
    f32=(np.arange(12, dtype=np.float32) * 0.5 - 1).reshape(3, 4),
    f16=np.array([1.5, -2.25, 65504, 0.0009765625], dtype=np.float16),
    b=np.array([[True, False, True]]),
    i64=np.array([-(2**62), -1, 0, 2**62 + 7], dtype=np.int64),
    u8=np.arange(256, dtype=np.uint8),
    f64s=np.float64(3.25),
    empty=np.zeros((2, 0, 3), np.float32),
    i8=np.array([-128, 127], np.int8),
    u16=np.array([0, 65535], np.uint16),
    i32=np.array([-5, 0, 5], np.int32),
)
np.savez(os.path.join(d, 'plain.npz'), **arrs)
np.savez_compressed(os.path.join(d, 'compressed.npz'), **arrs)
np.save(os.path.join(d, 'single.npy'), arrs['f32'])
for version in [(2, 0), (3, 0)]:
    with open(os.path.join(d, 'v%d.npy' % version[0]), 'wb') as f:
        np.lib.format.write_array(f, arrs['f32'], version=version)
np.save(os.path.join(d, 'bigendian.npy'), np.arange(3, dtype='>f4'))
np.save(os.path.join(d, 'fortran.npy'), np.asfortranarray(np.arange(24, dtype=np.int16).reshape(2, 3, 4)))
np.save(os.path.join(d, 'object.npy'), np.array([{}, 1], dtype=object), allow_pickle=True)
np.save(os.path.join(d, 'complex.npy'), np.ones(2, np.complex64))
small = dict(x=arrs['f16'], y=arrs['i32'])
np.savez_compressed(os.path.join(d, 'small_compressed.npz'), **small)
zipfile.ZIP64_LIMIT = 1
zipfile.ZIP_FILECOUNT_LIMIT = 1
np.savez(os.path.join(d, 'zip64.npz'), **arrs)
np.savez_compressed(os.path.join(d, 'zip64c.npz'), **arrs)
np.savez(os.path.join(d, 'small_zip64.npz'), **small)
)PY");
  }
};

// --- npy ----------------------------------------------------------------------------------------

TEST(NpyTest, DtypeMapping) {
  for (int32_t t : {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13}) {
    std::string d = kiln::io::descrForOnnxDtype(t);
    EXPECT_FALSE(d.empty()) << t;
    EXPECT_EQ(kiln::io::onnxDtypeForDescr(d), t) << d;
  }
  EXPECT_EQ(kiln::io::descrForOnnxDtype(1), "<f4");
  EXPECT_EQ(kiln::io::descrForOnnxDtype(9), "|b1");
  EXPECT_EQ(kiln::io::descrForOnnxDtype(10), "<f2");
  EXPECT_EQ(kiln::io::descrForOnnxDtype(16), "");  // bfloat16
  EXPECT_EQ(kiln::io::descrForOnnxDtype(0), "");
  EXPECT_EQ(kiln::io::onnxDtypeForDescr("<u1"), 2);  // byte order is irrelevant for one byte
  EXPECT_EQ(kiln::io::onnxDtypeForDescr(">f4"), 0);
  EXPECT_EQ(kiln::io::onnxDtypeForDescr("<c8"), 0);
  EXPECT_EQ(kiln::io::onnxDtypeForDescr("|O"), 0);
  EXPECT_EQ(kiln::io::onnxDtypeForDescr(""), 0);
}

TEST(NpyTest, SizesAndCounts) {
  NpyArray a = makeArray<float>("<f4", {2, 3}, std::vector<float>(6));
  EXPECT_EQ(a.numElements(), 6);
  EXPECT_EQ(a.itemSize(), 4u);
  a.shape = {};
  EXPECT_EQ(a.numElements(), 1);
  a.shape = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(a.numElements(), -1);
  a.shape = {-1};
  EXPECT_EQ(a.numElements(), -1);
  a.descr = "<f8";
  EXPECT_EQ(a.itemSize(), 8u);
  a.descr = "<U4";
  EXPECT_EQ(a.itemSize(), 0u);
}

TEST(NpyTest, RoundTrip) {
  for (const auto &[name, a] : sampleNpz().arrays) {
    std::vector<uint8_t> bytes = kiln::io::writeNpy(a);
    ASSERT_FALSE(bytes.empty()) << name;
    size_t headerEnd = bytes.size() - a.data.size();
    EXPECT_EQ(headerEnd % 64, 0u) << name;  // numpy aligns the data for mmap
    EXPECT_EQ(bytes[headerEnd - 1], '\n') << name;
    NpyArray back;
    std::string error;
    ASSERT_TRUE(kiln::io::parseNpy(bytes.data(), bytes.size(), back, error)) << name << ": " << error;
    expectSame(a, back, name);
  }
}

TEST(NpyTest, WriteRejectsInvalidArrays) {
  EXPECT_TRUE(kiln::io::writeNpy(makeArray<float>("<f4", {2}, {1.0f})).empty());  // size mismatch
  EXPECT_TRUE(kiln::io::writeNpy(makeArray<float>(">f4", {1}, {1.0f})).empty());
  EXPECT_TRUE(kiln::io::writeNpy(makeArray<float>("float32", {1}, {1.0f})).empty());
  NpyArray ok = makeArray<uint8_t>("<u1", {1}, {7});  // canonicalized on write
  std::vector<uint8_t> bytes = kiln::io::writeNpy(ok);
  NpyArray back;
  std::string error;
  ASSERT_TRUE(kiln::io::parseNpy(bytes.data(), bytes.size(), back, error)) << error;
  EXPECT_EQ(back.descr, "|u1");
}

TEST(NpyTest, HeaderErrors) {
  const std::vector<uint8_t> six(24, 0);
  struct Case {
    std::vector<uint8_t> bytes;
    const char *message;
  };
  std::vector<uint8_t> badMagic = rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six);
  badMagic[1] = 'X';
  std::vector<uint8_t> badVersion = rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six);
  badVersion[6] = 4;
  std::vector<uint8_t> longHeader = rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six);
  longHeader[8] = 0xFF;
  longHeader[9] = 0xFF;
  std::vector<Case> cases = {
      {badMagic, "bad magic"},
      {badVersion, "unsupported npy version 4.0"},
      {longHeader, "truncated npy header"},
      {rawNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", six), "big-endian"},
      {rawNpy("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", six), "object dtype"},
      {rawNpy("{'descr': '<U2', 'fortran_order': False, 'shape': (3,), }", six), "unsupported dtype '<U2'"},
      {rawNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", six), "structured"},
      {rawNpy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", six), "'fortran_order' is not a bool"},
      {rawNpy("[1, 2, 3]", six), "not a dict"},
      {rawNpy("{'descr': '<f4', 'shape': (6,), }", six), "lacks"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", six), "unexpected key 'x'"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", six), "'shape'"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,) ", six), "expected ',' or '}'"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } x", six), "trailing"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", six), "'shape'"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", six), "too large"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", six), "data size mismatch"},
      {rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", six), "data size mismatch"},
  };
  for (const Case &c : cases) {
    NpyArray a;
    std::string error;
    EXPECT_FALSE(kiln::io::parseNpy(c.bytes.data(), c.bytes.size(), a, error)) << c.message;
    EXPECT_NE(error.find(c.message), std::string::npos) << "expected '" << c.message << "' in: " << error;
  }
  // Variants numpy accepts: double quotes, no trailing comma, version 2.0, Python 2 longs.
  for (const auto &bytes : {rawNpy("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}", six),
                            rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }", six),
                            rawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, 2)}) {
    NpyArray a;
    std::string error;
    EXPECT_TRUE(kiln::io::parseNpy(bytes.data(), bytes.size(), a, error)) << error;
    EXPECT_EQ(a.numElements(), 6);
  }
}

// Fortran order: the data is column-major; the reader hands it back row-major.
TEST(NpyTest, FortranOrderComesBackInCOrder) {
  // [[0, 1, 2], [3, 4, 5]] stored column by column: 0 3 1 4 2 5.
  NpyArray a;
  std::string error;
  std::vector<uint8_t> data;
  for (float v : {0.f, 3.f, 1.f, 4.f, 2.f, 5.f}) {
    uint8_t b[4];
    std::memcpy(b, &v, 4);
    data.insert(data.end(), b, b + 4);
  }
  std::vector<uint8_t> bytes = rawNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data);
  ASSERT_TRUE(kiln::io::parseNpy(bytes.data(), bytes.size(), a, error)) << error;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(valuesOf<float>(a), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  // One dimension, a scalar and an empty array are the same bytes either way.
  bytes = rawNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", data);
  ASSERT_TRUE(kiln::io::parseNpy(bytes.data(), bytes.size(), a, error)) << error;
  EXPECT_EQ(valuesOf<float>(a), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  bytes = rawNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 0, 3), }", {});
  ASSERT_TRUE(kiln::io::parseNpy(bytes.data(), bytes.size(), a, error)) << error;
  EXPECT_TRUE(a.data.empty());
}

TEST(NpyTest, EveryTruncationFails) {
  std::vector<uint8_t> bytes = kiln::io::writeNpy(makeArray<float>("<f4", {2, 2}, {1, 2, 3, 4}));
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);  // exact-size copy for ASan
    NpyArray a;
    std::string error;
    EXPECT_FALSE(kiln::io::parseNpy(prefix.data(), prefix.size(), a, error)) << n;
    EXPECT_FALSE(error.empty());
  }
  NpyArray a;
  std::string error;
  EXPECT_FALSE(kiln::io::parseNpy(nullptr, 0, a, error));
}

// --- npz: our own files -------------------------------------------------------------------------

TEST_F(NpzTest, RoundTrip) {
  Npz z = sampleNpz(), back;
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("a.npz"), z, error)) << error;
  ASSERT_TRUE(kiln::io::readNpz(path("a.npz"), back, error)) << error;
  expectSame(z, back);
  EXPECT_TRUE(back.find("flags"));
  EXPECT_FALSE(back.find("flags.npy"));
  EXPECT_FALSE(back.find("missing"));
  // Only the file itself: the temporary was renamed away.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  // Reproducible bytes (fixed timestamps).
  ASSERT_TRUE(kiln::io::writeNpz(path("b.npz"), z, error)) << error;
  EXPECT_EQ(readBytes(path("a.npz")), readBytes(path("b.npz")));
}

TEST_F(NpzTest, EmptyArchiveAndOverwrite) {
  Npz empty, back;
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("e.npz"), empty, error)) << error;
  ASSERT_TRUE(kiln::io::readNpz(path("e.npz"), back, error)) << error;
  EXPECT_TRUE(back.arrays.empty());
  ASSERT_TRUE(kiln::io::writeNpz(path("e.npz"), sampleNpz(), error)) << error;
  ASSERT_TRUE(kiln::io::readNpz(path("e.npz"), back, error)) << error;
  expectSame(sampleNpz(), back);
}

TEST_F(NpzTest, SingleNpyFile) {
  NpyArray a = makeArray<int32_t>("<i4", {3}, {1, 2, 3});
  writeBytes(path("weights.npy"), kiln::io::writeNpy(a));
  Npz z;
  std::string error;
  ASSERT_TRUE(kiln::io::readNpz(path("weights.npy"), z, error)) << error;
  ASSERT_EQ(z.arrays.size(), 1u);
  EXPECT_EQ(z.arrays[0].first, "weights");
  expectSame(a, z.arrays[0].second, "weights");
}

TEST_F(NpzTest, ManyEntriesUseZip64EndRecord) {
  Npz z, back;
  const int n = 70000;  // past the 16-bit entry count of the classic end record
  for (int i = 0; i < n; ++i) z.arrays.emplace_back("a" + std::to_string(i), makeArray<int32_t>("<i4", {1}, {i}));
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("many.npz"), z, error)) << error;
  ASSERT_TRUE(kiln::io::readNpz(path("many.npz"), back, error)) << error;
  ASSERT_EQ(back.arrays.size(), size_t(n));
  EXPECT_EQ(back.arrays[n - 1].first, "a69999");
  EXPECT_EQ(valuesOf<int32_t>(back.arrays[n - 1].second), (std::vector<int32_t>{n - 1}));
  if (!haveNumpy()) return;
  EXPECT_TRUE(python(R"PY(
import os, sys
import numpy as np
z = np.load(os.path.join(sys.argv[1], 'many.npz'))
assert len(z.files) == 70000, len(z.files)
assert z['a69999'].tolist() == [69999] and z['a0'].dtype == np.int32
)PY"));
}

TEST_F(NpzTest, WriteErrors) {
  std::string error;
  auto expectWriteError = [&](const Npz &z, const char *message) {
    EXPECT_FALSE(kiln::io::writeNpz(path("bad.npz"), z, error)) << message;
    EXPECT_NE(error.find(message), std::string::npos) << "expected '" << message << "' in: " << error;
  };
  Npz z;
  z.arrays.emplace_back("x", makeArray<float>("<f4", {3}, {1, 2}));
  expectWriteError(z, "data has 8 bytes, shape (3,) needs 12");
  z.arrays[0].second = makeArray<float>(">f4", {2}, {1, 2});
  expectWriteError(z, "big-endian");
  z.arrays[0].second = makeArray<float>("<f4", {2}, {1, 2});
  z.arrays.push_back(z.arrays[0]);
  expectWriteError(z, "duplicate array name 'x'");
  z.arrays[1].first = "";
  expectWriteError(z, "empty");
  EXPECT_TRUE(fs::is_empty(dir_));
  z.arrays.pop_back();
  EXPECT_FALSE(kiln::io::writeNpz(path("no/such/dir/x.npz"), z, error));
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(NpzTest, OpenErrors) {
  Npz z;
  std::string error;
  EXPECT_FALSE(kiln::io::readNpz(path("missing.npz"), z, error));
  EXPECT_NE(error.find(path("missing.npz")), std::string::npos) << error;
  EXPECT_NE(error.find("no such file"), std::string::npos) << error;
  EXPECT_FALSE(kiln::io::readNpz(dir_.string(), z, error));
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
  writeBytes(path("empty.npz"), {});
  EXPECT_FALSE(kiln::io::readNpz(path("empty.npz"), z, error));
  std::string text = "this is a text file, not an archive, but longer than twenty-two bytes\n";
  writeBytes(path("text.npz"), std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_FALSE(kiln::io::readNpz(path("text.npz"), z, error));
  EXPECT_NE(error.find("end of central directory not found"), std::string::npos) << error;
}

// --- npz: hostile input -------------------------------------------------------------------------

TEST_F(NpzTest, EveryTruncationFails) {
  Npz z;
  z.arrays.emplace_back("x", makeArray<float>("<f4", {2}, {1, 2}));
  z.arrays.emplace_back("y", makeArray<int64_t>("<i8", {}, {5}));
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("t.npz"), z, error)) << error;
  std::vector<uint8_t> bytes = readBytes(path("t.npz"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    writeBytes(path("cut.npz"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
    Npz back;
    EXPECT_FALSE(kiln::io::readNpz(path("cut.npz"), back, error)) << n;
    EXPECT_FALSE(error.empty());
    EXPECT_TRUE(back.arrays.empty());
  }
}

TEST_F(NpzTest, EveryByteFlipFailsOrReadsTheSameArrays) {
  Npz z, original;
  z.arrays.emplace_back("x", makeArray<float>("<f4", {2}, {1, 2}));
  z.arrays.emplace_back("y", makeArray<uint8_t>("|b1", {3}, {1, 0, 1}));
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("f.npz"), z, error)) << error;
  ASSERT_TRUE(kiln::io::readNpz(path("f.npz"), original, error)) << error;
  std::vector<uint8_t> bytes = readBytes(path("f.npz"));
  int failures = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {0x01, 0xFF}) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= mask;
      writeBytes(path("bad.npz"), bad);
      Npz back;
      if (kiln::io::readNpz(path("bad.npz"), back, error)) {
        SCOPED_TRACE("flip at " + std::to_string(i));
        expectSame(original, back);  // only fields the reader ignores (times, attributes)
      } else {
        ++failures;
        EXPECT_FALSE(error.empty());
      }
    }
  }
  EXPECT_GT(failures, int(bytes.size()));  // most bytes matter
}

TEST_F(NpzTest, CrcMismatch) {
  Npz z;
  z.arrays.emplace_back("x", makeArray<float>("<f4", {4}, {1, 2, 3, 4}));
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("c.npz"), z, error)) << error;
  std::vector<uint8_t> bytes = readBytes(path("c.npz"));
  size_t dataStart = 30 + std::strlen("x.npy") + 128;  // local header, name, npy header
  ASSERT_EQ(std::memcmp(&bytes[dataStart], z.arrays[0].second.data.data(), 16), 0);
  bytes[dataStart + 3] ^= 0x40;
  writeBytes(path("c.npz"), bytes);
  Npz back;
  EXPECT_FALSE(kiln::io::readNpz(path("c.npz"), back, error));
  EXPECT_NE(error.find("entry 'x.npy': CRC-32 mismatch"), std::string::npos) << error;
}

TEST_F(NpzTest, PatchedDirectoryFields) {
  Npz z;
  z.arrays.emplace_back("x", makeArray<float>("<f4", {2}, {1, 2}));
  z.arrays.emplace_back("y", makeArray<float>("<f4", {2}, {3, 4}));
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("p.npz"), z, error)) << error;
  const std::vector<uint8_t> good = readBytes(path("p.npz"));
  const size_t cd0 = centralEntry(good, 0), cd1 = centralEntry(good, 1), eocd = good.size() - 22;
  auto expectError = [&](const std::function<void(std::vector<uint8_t> &)> &patch, const char *message) {
    std::vector<uint8_t> bytes = good;
    patch(bytes);
    writeBytes(path("bad.npz"), bytes);
    Npz back;
    EXPECT_FALSE(kiln::io::readNpz(path("bad.npz"), back, error)) << message;
    EXPECT_NE(error.find(message), std::string::npos) << "expected '" << message << "' in: " << error;
  };
  expectError(
      [&](auto &b) {
        put32(b, cd0 + 20, 0xFFFFFFF0);
        put32(b, cd0 + 24, 0xFFFFFFF0);
      },
      "entry 'x.npy': data extends past the central directory");
  expectError([&](auto &b) { put32(b, cd0 + 24, 12345); }, "different compressed and uncompressed sizes");
  expectError([&](auto &b) { put16(b, cd1 + 10, 12); }, "entry 'y.npy': unsupported compression method 12");
  expectError([&](auto &b) { put16(b, cd0 + 8, 1); }, "encrypted");
  expectError([&](auto &b) { put32(b, cd1 + 42, 7); }, "entry 'y.npy': local header not found at offset 7");
  expectError([&](auto &b) { put32(b, cd1 + 42, 0); }, "name in local header differs");
  expectError(
      [&](auto &b) {
        put16(b, eocd + 8, 0xFFFE);
        put16(b, eocd + 10, 0xFFFE);
      },
      "central directory too small for 65534 entries");
  expectError([&](auto &b) { put32(b, eocd + 16, 0x7FFFFFFF); }, "central directory lies outside the file");
  expectError([&](auto &b) { put16(b, eocd + 4, 1); }, "multi-disk");
  // Entry x claims y's bytes as well: overlapping entries are how zip bombs multiply output.
  uint32_t both = rd32(good, cd1 + 42) + rd32(good, cd1 + 20) + 30 + 5;
  expectError(
      [&](auto &b) {
        put32(b, cd0 + 20, both - 35);
        put32(b, cd0 + 24, both - 35);
      },
      "entries overlap");
  // Two entries that strip to the same array name.
  expectError(
      [&](auto &b) {
        b[cd1 + 46] = 'x';
        b[rd32(good, cd1 + 42) + 30] = 'x';
      },
      "duplicate array name 'x'");
}

TEST_F(NpzTest, RandomCorruptionNeverCrashes) {
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("r.npz"), sampleNpz(), error)) << error;
  const std::vector<uint8_t> good = readBytes(path("r.npz"));
  std::mt19937 rng(12345);
  for (int round = 0; round < 500; ++round) {
    std::vector<uint8_t> bytes = good;
    for (int k = 1 + rng() % 8; k > 0; --k) bytes[rng() % bytes.size()] = rng() & 0xFF;
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    writeBytes(path("bad.npz"), bytes);
    Npz back;
    if (!kiln::io::readNpz(path("bad.npz"), back, error)) {
      EXPECT_FALSE(error.empty());
    }
  }
}

// --- interchange with numpy ---------------------------------------------------------------------

TEST_F(NpzTest, ReadsNumpyFiles) {
  if (!haveNumpy()) GTEST_SKIP() << kPython << " with numpy is not available";
  ASSERT_TRUE(writeNumpyFiles());
  for (const char *name : {"plain.npz", "compressed.npz", "zip64.npz", "zip64c.npz"}) {
    Npz z;
    std::string error;
    ASSERT_TRUE(kiln::io::readNpz(path(name), z, error)) << error;
    expectNumpySample(z, name);
  }
  for (const char *name : {"single.npy", "v2.npy", "v3.npy"}) {
    Npz z;
    std::string error;
    ASSERT_TRUE(kiln::io::readNpz(path(name), z, error)) << error;
    ASSERT_EQ(z.arrays.size(), 1u);
    EXPECT_EQ(valuesOf<float>(z.arrays[0].second).at(11), 4.5f) << name;
  }
  {
    // A column-major array (np.asfortranarray) comes back in C order.
    Npz z;
    std::string error;
    ASSERT_TRUE(kiln::io::readNpz(path("fortran.npy"), z, error)) << error;
    ASSERT_EQ(z.arrays.size(), 1u);
    EXPECT_EQ(z.arrays[0].second.shape, (std::vector<int64_t>{2, 3, 4}));
    std::vector<int16_t> want(24);
    for (int i = 0; i < 24; ++i) want[i] = int16_t(i);
    EXPECT_EQ(valuesOf<int16_t>(z.arrays[0].second), want);
  }
  const std::pair<const char *, const char *> rejected[] = {{"bigendian.npy", "big-endian dtype '>f4'"},
                                                            {"object.npy", "object dtype"},
                                                            {"complex.npy", "unsupported dtype '<c8'"}};
  for (auto [name, message] : rejected) {
    Npz z;
    std::string error;
    EXPECT_FALSE(kiln::io::readNpz(path(name), z, error)) << name;
    EXPECT_NE(error.find(message), std::string::npos) << "expected '" << message << "' in: " << error;
  }
}

TEST_F(NpzTest, NumpyFilesTruncatedOrCorrupted) {
  if (!haveNumpy()) GTEST_SKIP() << kPython << " with numpy is not available";
  ASSERT_TRUE(writeNumpyFiles());
  for (const char *name : {"small_compressed.npz", "small_zip64.npz"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> good = readBytes(path(name));
    Npz original;
    std::string error;
    ASSERT_TRUE(kiln::io::readNpz(path(name), original, error)) << error;
    for (size_t n = 0; n < good.size(); ++n) {
      writeBytes(path("bad.npz"), std::vector<uint8_t>(good.begin(), good.begin() + n));
      Npz back;
      EXPECT_FALSE(kiln::io::readNpz(path("bad.npz"), back, error)) << n;
    }
    for (size_t i = 0; i < good.size(); ++i) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= 0x5A;
      writeBytes(path("bad.npz"), bad);
      Npz back;
      if (kiln::io::readNpz(path("bad.npz"), back, error)) {
        SCOPED_TRACE("flip at " + std::to_string(i));
        expectSame(original, back);
      }
    }
  }
}

TEST_F(NpzTest, DeflateSizeLies) {
  if (!haveNumpy()) GTEST_SKIP() << kPython << " with numpy is not available";
  ASSERT_TRUE(python(R"PY(
import os, sys
import numpy as np
np.savez_compressed(os.path.join(sys.argv[1], 'z.npz'), x=np.zeros(100000, np.float32))
)PY"));
  const std::vector<uint8_t> good = readBytes(path("z.npz"));
  const size_t cd = centralEntry(good, 0);
  const uint32_t size = rd32(good, cd + 24);
  std::string error;
  for (uint32_t lie : {0x7FFFFFFFu, size + 1, size - 1, 0u}) {
    std::vector<uint8_t> bytes = good;
    put32(bytes, cd + 24, lie);  // the reader must neither trust nor allocate this
    writeBytes(path("bad.npz"), bytes);
    Npz back;
    EXPECT_FALSE(kiln::io::readNpz(path("bad.npz"), back, error)) << lie;
    EXPECT_NE(error.find("entry 'x.npy': inflates to"), std::string::npos) << error;
  }
  std::vector<uint8_t> bytes = good;
  put32(bytes, cd + 16, rd32(good, cd + 16) ^ 1);
  writeBytes(path("bad.npz"), bytes);
  Npz back;
  EXPECT_FALSE(kiln::io::readNpz(path("bad.npz"), back, error));
  EXPECT_NE(error.find("CRC-32 mismatch"), std::string::npos) << error;
}

// Array names become zip entry names: one that is a path ("../../x") or holds control characters
// would be written outside an unzipper's folder or into a terminal. Such bytes are written as
// %XX (and '%' itself), and read back as they were.
TEST_F(NpzTest, EntryNamesAreEscaped) {
  Npz z;
  const std::vector<std::string> names = {"../../../tmp/x",  "/abs", "a\\b", "50%", "esc\x1b[2J",
                                          "dense/BiasAdd:0", "plain"};
  for (const std::string &n : names) z.arrays.emplace_back(n, makeArray<float>("<f4", {1}, {1.0f}));
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("names.npz"), z, error)) << error;
  std::vector<uint8_t> bytes = readBytes(path("names.npz"));
  for (size_t i = 0; i < names.size(); ++i) {
    size_t cd = centralEntry(bytes, i);
    std::string entry(bytes.begin() + long(cd + 46), bytes.begin() + long(cd + 46 + rd16(bytes, cd + 28)));
    for (char c : entry) EXPECT_TRUE(c != '/' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) << entry;
  }
  size_t first = centralEntry(bytes, 0);
  EXPECT_EQ(std::string(bytes.begin() + long(first + 46), bytes.begin() + long(first + 46 + rd16(bytes, first + 28))),
            "..%2F..%2F..%2Ftmp%2Fx.npy");
  Npz back;
  ASSERT_TRUE(kiln::io::readNpz(path("names.npz"), back, error)) << error;
  ASSERT_EQ(back.arrays.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(back.arrays[i].first, names[i]);
}

// A zip whose one entry is `payload` deflated data declaring `size` uncompressed bytes.
std::vector<uint8_t> deflatedZip(const std::vector<std::pair<std::string, uint32_t>> &entries,
                                 const std::vector<uint8_t> &payload) {
  std::vector<uint8_t> body, central;
  auto put = [](std::vector<uint8_t> &b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
  };
  for (const auto &[name, size] : entries) {
    uint32_t off = uint32_t(body.size());
    put(body, 0x04034B50, 4), put(body, 20, 2), put(body, 0, 2), put(body, 8, 2), put(body, 0, 4), put(body, 0, 4);
    put(body, payload.size(), 4), put(body, size, 4), put(body, name.size(), 2), put(body, 0, 2);
    body.insert(body.end(), name.begin(), name.end());
    body.insert(body.end(), payload.begin(), payload.end());
    put(central, 0x02014B50, 4), put(central, 20, 2), put(central, 20, 2), put(central, 0, 2), put(central, 8, 2);
    put(central, 0, 4), put(central, 0, 4), put(central, payload.size(), 4), put(central, size, 4);
    put(central, name.size(), 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 2);
    put(central, 0, 4), put(central, off, 4);
    central.insert(central.end(), name.begin(), name.end());
  }
  std::vector<uint8_t> out = body;
  out.insert(out.end(), central.begin(), central.end());
  put(out, 0x06054B50, 4), put(out, 0, 4), put(out, entries.size(), 2), put(out, entries.size(), 2);
  put(out, central.size(), 4), put(out, body.size(), 4), put(out, 0, 2);
  return out;
}

// Compressed entries' declared sizes are checked before anything is inflated: one entry above
// its cap, a size deflate cannot reach from the bytes there are, entries whose sum is above the
// total cap. (Nothing is allocated for them: the checks come before any entry is read.)
TEST_F(NpzTest, CompressedSizesAreCappedBeforeInflating) {
  std::string error;
  Npz z;
  writeBytes(path("big.npz"), deflatedZip({{"x.npy", 3u << 30}}, std::vector<uint8_t>(4 << 20, 0x55)));
  EXPECT_FALSE(kiln::io::readNpz(path("big.npz"), z, error));
  EXPECT_NE(error.find("entry 'x.npy': inflates to 3221225472 bytes, more than the limit of 1073741824"),
            std::string::npos)
      << error;
  writeBytes(path("ratio.npz"), deflatedZip({{"x.npy", 1u << 29}}, std::vector<uint8_t>(100, 0x55)));
  EXPECT_FALSE(kiln::io::readNpz(path("ratio.npz"), z, error));
  EXPECT_NE(error.find("more than deflate can encode"), std::string::npos) << error;
  writeBytes(path("sum.npz"), deflatedZip({{"a.npy", 900u << 20},
                                           {"b.npy", 900u << 20},
                                           {"c.npy", 900u << 20},
                                           {"d.npy", 900u << 20},
                                           {"e.npy", 900u << 20}},
                                          std::vector<uint8_t>(1 << 20, 0x55)));
  EXPECT_FALSE(kiln::io::readNpz(path("sum.npz"), z, error));
  EXPECT_NE(error.find("compressed entries inflate to more than the limit of 4294967296 bytes in all"),
            std::string::npos)
      << error;
}

TEST_F(NpzTest, NumpyReadsOurFiles) {
  if (!haveNumpy()) GTEST_SKIP() << kPython << " with numpy is not available";
  std::string error;
  ASSERT_TRUE(kiln::io::writeNpz(path("ours.npz"), sampleNpz(), error)) << error;
  writeBytes(path("ours.npy"), kiln::io::writeNpy(makeArray<float>("<f4", {2, 2}, {1, 2, 3, 4})));
  EXPECT_TRUE(python(R"PY(
import os, sys, zipfile
import numpy as np
d = sys.argv[1]
p = os.path.join(d, 'ours.npz')
assert zipfile.ZipFile(p).testzip() is None  # CRCs
z = np.load(p)
assert z.files == ['f32', 'scalar_i64', 'empty', 'empty3d', 'flags', 'half', 'u8', 'i8', 'u16', 'f64', 'größe'], z.files
def check(name, dtype, shape, values):
    a = z[name]
    assert a.dtype == np.dtype(dtype), (name, a.dtype)
    assert a.shape == shape, (name, a.shape)
    assert a.tolist() == values, (name, a.tolist())
check('f32', np.float32, (2, 3), [[0, 0.5, 1], [1.5, 2, -2.5]])
check('scalar_i64', np.int64, (), -(1 << 40))
check('empty', np.float32, (0,), [])
check('empty3d', np.int32, (2, 0, 3), [[], []])
check('flags', np.bool_, (4,), [True, False, False, True])
check('half', np.float16, (2,), [1.0, -2.0])
check('u8', np.uint8, (1, 3), [[0, 128, 255]])
check('i8', np.int8, (2,), [-128, 127])
check('u16', np.uint16, (2,), [0, 65535])
check('f64', np.float64, (1,), [3.25])
check('größe', np.int16, (1,), [-7])
a = np.load(os.path.join(d, 'ours.npy'))
assert a.dtype == np.float32 and a.tolist() == [[1, 2], [3, 4]]
)PY"));
}

}  // namespace
