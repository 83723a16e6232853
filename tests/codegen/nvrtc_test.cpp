// NVRTC wrapper, on-disk compile cache and parallel compile pool (codegen/nvrtc/). No GPU needed:
// NVRTC compiles for sm_90 on any machine. Tests that need NVRTC skip (with the reason) where it
// cannot be loaded; the cache and pool logic is also tested with an injected fake compiler.
#include "codegen/nvrtc/CompileCache.h"
#include "codegen/nvrtc/CompilePool.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "compiler/support/Hash.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace kiln::codegen;
namespace fs = std::filesystem;

namespace {

#define REQUIRE_NVRTC()                                                                                                \
  do {                                                                                                                 \
    std::string why_;                                                                                                  \
    if (!nvrtcAvailable(&why_)) GTEST_SKIP() << "NVRTC not loadable: " << why_;                                        \
  } while (0)

std::string addKernel(const std::string &name, const std::string &op = "+") {
  return "extern \"C\" __global__ void " + name +
         "(const float* a, const float* b, float* c, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) c[i] = a[i] " +
         op +
         " b[i];\n"
         "}\n";
}

// A fresh directory under $TMPDIR (or /tmp), removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/kiln-nvrtc-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    char *p = mkdtemp(buf.data());
    EXPECT_NE(p, nullptr);
    path = p ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::vector<fs::path> entries(const std::string &dir) {
  std::vector<fs::path> v;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".kcubin") v.push_back(e.path());
  return v;
}

// A compiler that needs no NVRTC: "cubin" = ELF magic + source, PTX names the entry.
struct FakeCompiler {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  CompileCache::Compiler fn() const {
    auto c = calls;
    return [c](const std::string &source, const std::string &name, const std::string &arch, const CompileOptions &) {
      c->fetch_add(1);
      CompileOutput o;
      if (source.find("BROKEN") != std::string::npos) {
        o.error = "NVRTC failed to compile kernel '" + name + "' for " + arch + " (fake)";
        return o;
      }
      std::string bin = "\x7f"
                        "ELF" +
                        arch + ":" + source;
      o.cubin.assign(bin.begin(), bin.end());
      o.ptx = ".visible .entry " + name + "(\n)";
      o.log = "fake log for " + name;
      return o;
    };
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Nvrtc

TEST(Nvrtc, LoadsAndReportsVersion) {
  REQUIRE_NVRTC();
  EXPECT_EQ(nvrtcLoadError(), "");
  std::string v = nvrtcVersionString();
  EXPECT_NE(v.find('.'), std::string::npos) << v;
  EXPECT_GE(std::atoi(v.c_str()), 12);
  EXPECT_FALSE(nvrtcLibraryPath().empty());
  std::vector<int> archs = nvrtcSupportedArchs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

TEST(Nvrtc, ProbeOfMissingLibraryIsAClearError) {
  std::string e = probeNvrtcLibrary("/nonexistent/dir/libnvrtc.so.13");
  EXPECT_NE(e.find("/nonexistent/dir/libnvrtc.so.13"), std::string::npos) << e;
  std::string notNvrtc = probeNvrtcLibrary("libc.so.6");
  EXPECT_NE(notNvrtc.find("lacks NVRTC symbols"), std::string::npos) << notNvrtc;
}

TEST(Nvrtc, CompilesCubinAndPtxForSm90) {
  REQUIRE_NVRTC();
  CompileOutput o = compileKernel(addKernel("add_f32"), "add_f32", "sm_90");
  ASSERT_TRUE(o.ok()) << o.error;
  ASSERT_GE(o.cubin.size(), 4u);
  EXPECT_EQ(std::string(o.cubin.data(), 4), std::string("\x7f"
                                                        "ELF"));
  EXPECT_NE(o.ptx.find(".entry add_f32"), std::string::npos) << o.ptx;
  EXPECT_NE(o.ptx.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(o.ptx.find('\0'), std::string::npos) << "trailing NUL must be stripped";
  EXPECT_GT(o.seconds, 0.0);
}

TEST(Nvrtc, PtxEqualsSeparateVirtualArchCompile) {
  REQUIRE_NVRTC();
  CompileOptions sep;
  sep.separatePtxCompile = true;
  uint64_t before = nvrtcCompileCount();
  CompileOutput a = compileKernel(addKernel("k_sep"), "k_sep", "sm_90");
  CompileOutput b = compileKernel(addKernel("k_sep"), "k_sep", "sm_90", sep);
  ASSERT_TRUE(a.ok()) << a.error;
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_EQ(nvrtcCompileCount() - before, 3u);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.cubin, b.cubin);
}

TEST(Nvrtc, OutputIsDeterministic) {
  REQUIRE_NVRTC();
  CompileOptions li;
  li.lineInfo = true;
  CompileOutput a = compileKernel(addKernel("k_det"), "k_det", "sm_90", li);
  CompileOutput b = compileKernel(addKernel("k_det"), "k_det", "sm_90", li);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptx, b.ptx);
}

TEST(Nvrtc, HalfHeadersResolve) {
  REQUIRE_NVRTC();
  if (cudaIncludeDir().empty()) GTEST_SKIP() << "no CUDA include directory with cuda_fp16.h";
  std::string src = "#include <cuda_fp16.h>\n"
                    "extern \"C\" __global__ void h_add(const __half* a, __half* b) {\n"
                    "  b[threadIdx.x] = __hadd(a[threadIdx.x], a[threadIdx.x]);\n"
                    "}\n";
  CompileOutput o = compileKernel(src, "h_add", "sm_90");
  EXPECT_TRUE(o.ok()) << o.error;
}

TEST(Nvrtc, SyntaxErrorNamesKernelAndCarriesNvrtcLog) {
  REQUIRE_NVRTC();
  CompileOutput o = compileKernel("extern \"C\" __global__ void broken_k() { int x = ; }\n", "broken_k", "sm_90");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error.find("'broken_k'"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("sm_90"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("expected an expression"), std::string::npos) << o.error;  // NVRTC's own text
  EXPECT_TRUE(o.cubin.empty());
  EXPECT_TRUE(o.ptx.empty());
}

TEST(Nvrtc, MissingExternCIsReported) {
  REQUIRE_NVRTC();
  CompileOutput o = compileKernel("__global__ void mangled(float* p) { p[0] = 1.f; }\n", "mangled", "sm_90");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error.find("no entry named 'mangled'"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("extern \"C\""), std::string::npos) << o.error;
}

TEST(Nvrtc, ArchValidation) {
  EXPECT_EQ(archNumber("sm_90"), 90);
  EXPECT_EQ(archNumber("sm_100a"), 100);
  EXPECT_EQ(archNumber("sm90"), -1);
  EXPECT_EQ(virtualArchFor("sm_90"), "compute_90");
  EXPECT_EQ(virtualArchFor("sm_90a"), "compute_90a");
  for (const char *bad : {"", "sm90", "sm_", "sm_9", "sm_9000", "compute_90", "SM_90", "sm_90x", "sm_90 "}) {
    std::string e = validateArch(bad);
    EXPECT_NE(e.find("invalid GPU architecture"), std::string::npos) << "'" << bad << "': " << e;
    EXPECT_NE(e.find("sm_90"), std::string::npos) << e;  // says what a valid one looks like
  }
  EXPECT_NE(validateArch("sm_70").find("sm_75...sm_121"), std::string::npos);
  EXPECT_NE(validateArch("sm_122").find("sm_75...sm_121"), std::string::npos);
  for (const char *good : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120", "sm_121"})
    EXPECT_EQ(validateArch(good), "") << good;
}

TEST(Nvrtc, InvalidArchIsAClearCompileError) {
  CompileOutput o = compileKernel(addKernel("k_arch"), "k_arch", "sm90");
  ASSERT_FALSE(o.ok());
  if (nvrtcAvailable()) {
    EXPECT_NE(o.error.find("'k_arch'"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("invalid GPU architecture 'sm90'"), std::string::npos) << o.error;
    // A well-formed number NVRTC does not know.
    CompileOutput u = compileKernel(addKernel("k_arch"), "k_arch", "sm_91");
    ASSERT_FALSE(u.ok());
    EXPECT_NE(u.error.find("not supported by NVRTC"), std::string::npos) << u.error;
  } else {
    EXPECT_NE(o.error.find("cannot load NVRTC"), std::string::npos) << o.error;
  }
}

TEST(Nvrtc, OptionsNeverContainO3) {
  CompileOptions o;
  o.lineInfo = o.fastMath = o.ptxasVerbose = true;
  std::vector<std::string> v = nvrtcOptions("sm_90", o);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], "--gpu-architecture=sm_90");
  for (const char *want : {"--std=c++17", "-default-device", "--dopt=on", "-lineinfo", "-use_fast_math"})
    EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << want;
  EXPECT_EQ(std::find(v.begin(), v.end(), "-O3"), v.end());
  CompileOptions noInc;
  noInc.includeDir = "-";
  for (const std::string &s : nvrtcOptions("sm_90", noInc)) EXPECT_NE(s.rfind("-I", 0), 0u) << s;
}

// ---------------------------------------------------------------------------------------------
// support::hash64 / hash128 (XXH3)

TEST(Hash, StableValues) {
  // Pinned to XXH3's published values: they name kernels in engines and cache files on disk, so
  // they must never change silently.
  using kiln::support::hash128, kiln::support::hash64, kiln::support::hex64;
  EXPECT_EQ(hex64(hash64("")), "2d06800538d394c2");
  EXPECT_EQ(hex64(hash64("a")), "e6c632b61e964e1f");
  EXPECT_EQ(hex64(hash128("").high) + hex64(hash128("").low), "99aa06d3014798d86001c324468d497f");
  EXPECT_NE(hash128("kiln").low, hash128("kiln").high);
  EXPECT_EQ(hex64(0x1234).size(), 16u);
}

// ---------------------------------------------------------------------------------------------
// CompileCache

TEST(CompileCache, DefaultDirectoryFollowsXdg) {
  const char *oldXdg = std::getenv("XDG_CACHE_HOME");
  std::string saved = oldXdg ? oldXdg : "";
  setenv("XDG_CACHE_HOME", "/some/where", 1);
  EXPECT_EQ(CompileCache::defaultDirectory(), "/some/where/kiln/nvrtc");
  setenv("XDG_CACHE_HOME", "relative/ignored", 1);  // XDG: relative paths are invalid
  const char *home = std::getenv("HOME");
  if (home && *home) {
    EXPECT_EQ(CompileCache::defaultDirectory(), std::string(home) + "/.cache/kiln/nvrtc");
  }
  if (oldXdg)
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
}

TEST(CompileCache, KeyDependsOnEverythingThatShapesTheOutput) {
  CompileOptions base;
  uint64_t k = CompileCache::key("src", "k", "sm_90", base);
  EXPECT_EQ(k, CompileCache::key("src", "k", "sm_90", base));
  EXPECT_NE(k, CompileCache::key("src2", "k", "sm_90", base));
  EXPECT_NE(k, CompileCache::key("src", "k2", "sm_90", base));
  EXPECT_NE(k, CompileCache::key("src", "k", "sm_80", base));
  CompileOptions li = base;
  li.lineInfo = true;
  EXPECT_NE(k, CompileCache::key("src", "k", "sm_90", li));
  CompileOptions ex = base;
  ex.extraOptions = {"-DFOO"};
  EXPECT_NE(k, CompileCache::key("src", "k", "sm_90", ex));
  // Length-prefixed fields: moving bytes between fields changes the key.
  EXPECT_NE(CompileCache::key("ab", "c", "sm_90", base), CompileCache::key("b", "ac", "sm_90", base));
  EXPECT_NE(CompileCache::keyMaterial("s", "k", "sm_90", base).find(nvrtcVersionString()), std::string::npos);
}

TEST(CompileCache, SecondCompileIsAHitWithoutNvrtc) {
  REQUIRE_NVRTC();
  TempDir tmp;
  CompileCache cache({tmp.path});
  ASSERT_TRUE(cache.enabled()) << cache.whyDisabled();
  std::string src = addKernel("cached_add");
  bool hit = true;
  uint64_t c0 = nvrtcCompileCount();
  CompileOutput a = cache.getOrCompile(src, "cached_add", "sm_90", {}, &hit);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_FALSE(hit);
  EXPECT_EQ(nvrtcCompileCount() - c0, 1u);
  EXPECT_EQ(entries(tmp.path).size(), 1u);

  CompileOutput b = cache.getOrCompile(src, "cached_add", "sm_90", {}, &hit);
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_TRUE(hit);
  EXPECT_EQ(nvrtcCompileCount() - c0, 1u) << "a hit must not invoke NVRTC";
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.log, b.log);

  // A second cache object on the same directory (another kiln process) hits too.
  CompileCache other({tmp.path});
  CompileOutput c = other.getOrCompile(src, "cached_add", "sm_90", {}, &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(c.cubin, a.cubin);
  EXPECT_EQ(nvrtcCompileCount() - c0, 1u);

  // Another arch is another entry.
  CompileOutput d = cache.getOrCompile(src, "cached_add", "sm_80", {}, &hit);
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_FALSE(hit);
  EXPECT_EQ(entries(tmp.path).size(), 2u);
}

TEST(CompileCache, CorruptEntriesAreMissesAndGetReplaced) {
  TempDir tmp;
  CompileCache cache({tmp.path});
  FakeCompiler fake;
  const std::string src = "kernel source";
  bool hit = false;
  CompileOutput ref = cache.getOrCompile(src, "k", "sm_90", {}, &hit, fake.fn());
  ASSERT_TRUE(ref.ok());
  ASSERT_EQ(fake.calls->load(), 1);
  std::string path = cache.entryPath(CompileCache::key(src, "k", "sm_90", {}));
  ASSERT_TRUE(fs::exists(path));
  const auto goodSize = fs::file_size(path);

  auto corruptions = std::vector<std::function<void()>>{
      [&] { fs::resize_file(path, goodSize - 3); },  // truncated
      [&] { fs::resize_file(path, 10); },            // header cut
      [&] { fs::resize_file(path, 0); },             // empty
      [&] {                                          // payload byte flipped
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(goodSize - 1));
        f.put('#');
      },
      [&] {  // bad magic
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(0);
        f.put('X');
      },
      [&] {  // appended garbage
        std::ofstream f(path, std::ios::app | std::ios::binary);
        f << "junk";
      },
  };
  int expectedCalls = 1;
  for (size_t i = 0; i < corruptions.size(); ++i) {
    corruptions[i]();
    CompileOutput o = cache.getOrCompile(src, "k", "sm_90", {}, &hit, fake.fn());
    EXPECT_FALSE(hit) << "corruption " << i;
    EXPECT_EQ(fake.calls->load(), ++expectedCalls) << "corruption " << i << " must recompile";
    EXPECT_EQ(o.cubin, ref.cubin);
    EXPECT_EQ(fs::file_size(path), goodSize) << "entry replaced after corruption " << i;
    CompileOutput again = cache.getOrCompile(src, "k", "sm_90", {}, &hit, fake.fn());
    EXPECT_TRUE(hit) << "replaced entry hits, corruption " << i;
    EXPECT_EQ(again.cubin, ref.cubin);
  }
  EXPECT_EQ(cache.stats().corrupt, corruptions.size());

  // An entry copied under another key's name (wrong key inside) is not a hit either.
  CompileOutput other = cache.getOrCompile("other source", "k", "sm_90", {}, &hit, fake.fn());
  ASSERT_TRUE(other.ok());
  std::string otherPath = cache.entryPath(CompileCache::key("other source", "k", "sm_90", {}));
  fs::copy_file(otherPath, path, fs::copy_options::overwrite_existing);
  CompileOutput o = cache.getOrCompile(src, "k", "sm_90", {}, &hit, fake.fn());
  EXPECT_FALSE(hit);
  EXPECT_EQ(o.cubin, ref.cubin);
}

TEST(CompileCache, CorruptEntryRecompilesWithNvrtc) {
  REQUIRE_NVRTC();
  TempDir tmp;
  CompileCache cache({tmp.path});
  std::string src = addKernel("corrupt_add");
  CompileOutput a = cache.getOrCompile(src, "corrupt_add", "sm_90", {});
  ASSERT_TRUE(a.ok()) << a.error;
  std::vector<fs::path> e = entries(tmp.path);
  ASSERT_EQ(e.size(), 1u);
  fs::resize_file(e[0], fs::file_size(e[0]) / 2);
  uint64_t c0 = nvrtcCompileCount();
  bool hit = true;
  CompileOutput b = cache.getOrCompile(src, "corrupt_add", "sm_90", {}, &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(nvrtcCompileCount() - c0, 1u);
  EXPECT_EQ(a.cubin, b.cubin);
  cache.getOrCompile(src, "corrupt_add", "sm_90", {}, &hit);
  EXPECT_TRUE(hit);
}

TEST(CompileCache, DisabledAlwaysCompilesAndWritesNothing) {
  TempDir tmp;
  CompileCacheOptions opts;
  opts.dir = tmp.path;
  opts.disabled = true;
  CompileCache cache(opts);
  EXPECT_FALSE(cache.enabled());
  EXPECT_NE(cache.whyDisabled().find("disabled"), std::string::npos);
  FakeCompiler fake;
  bool hit = true;
  for (int i = 0; i < 3; ++i) {
    CompileOutput o = cache.getOrCompile("src", "k", "sm_90", {}, &hit, fake.fn());
    EXPECT_TRUE(o.ok());
    EXPECT_FALSE(hit);
  }
  EXPECT_EQ(fake.calls->load(), 3);
  EXPECT_TRUE(fs::is_empty(tmp.path));
  CompileOutput dummy;
  EXPECT_FALSE(cache.lookup("src", "k", "sm_90", {}, dummy));
}

TEST(CompileCache, DisabledAlwaysCompilesWithNvrtc) {
  REQUIRE_NVRTC();
  CompileCacheOptions opts;
  opts.disabled = true;
  CompileCache cache(opts);
  uint64_t c0 = nvrtcCompileCount();
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cache.getOrCompile(addKernel("nocache"), "nocache", "sm_90", {}).ok());
  EXPECT_EQ(nvrtcCompileCount() - c0, 2u);
}

TEST(CompileCache, FailedCompilesAreNotCached) {
  TempDir tmp;
  CompileCache cache({tmp.path});
  FakeCompiler fake;
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(cache.getOrCompile("BROKEN", "k", "sm_90", {}, nullptr, fake.fn()).ok());
  EXPECT_EQ(fake.calls->load(), 2);
  EXPECT_TRUE(entries(tmp.path).empty());
}

TEST(CompileCache, UncreatableDirectoryDegradesToNoCache) {
  CompileCache cache({"/proc/kiln-cannot-create-this"});
  EXPECT_FALSE(cache.enabled());
  EXPECT_NE(cache.whyDisabled().find("/proc/kiln-cannot-create-this"), std::string::npos);
  FakeCompiler fake;
  EXPECT_TRUE(cache.getOrCompile("src", "k", "sm_90", {}, nullptr, fake.fn()).ok());
}

TEST(CompileCache, ConcurrentWritersAndReadersNeverSeePartialEntries) {
  TempDir tmp;
  FakeCompiler fake;
  // Big payloads make a torn read likely if writes were not atomic.
  std::vector<std::string> sources;
  for (int i = 0; i < 4; ++i) sources.push_back(std::string(200000 + i, static_cast<char>('a' + i)));
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      CompileCache cache({tmp.path});  // one object per thread, like separate processes
      for (int round = 0; round < 25; ++round) {
        const std::string &s = sources[(t + round) % sources.size()];
        CompileOutput o;
        if (cache.lookup(s, "k", "sm_90", {}, o)) {
          std::string want = std::string("\x7f"
                                         "ELF") +
                             "sm_90:" + s;
          if (std::string(o.cubin.begin(), o.cubin.end()) != want) bad.fetch_add(1);
        }
        CompileOutput fresh = fake.fn()(s, "k", "sm_90", {});
        cache.store(s, "k", "sm_90", {}, fresh);  // rewrite the same key again and again
      }
      if (cache.stats().corrupt) bad.fetch_add(1);
    });
  }
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(entries(tmp.path).size(), sources.size());
  for (const auto &e : fs::directory_iterator(tmp.path))
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << "temporary left behind: " << e.path();
}

// ---------------------------------------------------------------------------------------------
// CompilePool

namespace {
KernelLaunch launch(const std::string &entry, const std::string &source) {
  KernelLaunch l;
  l.entry = entry;
  l.source = source;
  l.numParams = 3;
  return l;
}
}  // namespace

TEST(CompilePool, DeduplicatesAndKeepsFirstAppearanceOrder) {
  TempDir tmp;
  CompileCache cache({tmp.path});
  FakeCompiler fake;
  CompilePoolOptions po;
  po.jobs = 4;
  po.compiler = fake.fn();
  std::vector<size_t> progress;
  po.progress = [&](size_t done, size_t total) {
    EXPECT_EQ(total, 3u);
    progress.push_back(done);
  };
  // C, A, B, A, C, B, A -> kernels C, A, B
  std::vector<KernelLaunch> ls = {launch("c", "src c"), launch("a", "src a"), launch("b", "src b"),
                                  launch("a", "src a"), launch("c", "src c"), launch("b", "src b"),
                                  launch("a", "src a")};
  CompilePoolResult r = CompilePool(cache, po).compile(ls);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(fake.calls->load(), 3) << "identical sources compile once";
  EXPECT_EQ(r.kernels[0].entry, "c");
  EXPECT_EQ(r.kernels[1].entry, "a");
  EXPECT_EQ(r.kernels[2].entry, "b");
  EXPECT_EQ(r.kernels[1].launches, (std::vector<size_t>{1, 3, 6}));
  EXPECT_EQ(r.kernelOfLaunch, (std::vector<size_t>{0, 1, 2, 1, 0, 2, 1}));
  for (size_t i = 0; i < ls.size(); ++i) {
    const CompiledKernel &k = r.kernels[r.kernelOfLaunch[i]];
    EXPECT_EQ(k.entry, ls[i].entry);
    EXPECT_EQ(k.sourceHash, kiln::support::hash64(ls[i].source));
    EXPECT_EQ(std::string(k.output.cubin.begin() + 4, k.output.cubin.end()), "sm_90:" + ls[i].source);
  }
  EXPECT_EQ(progress, (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(r.compiled, 3u);
  EXPECT_EQ(r.cacheHits, 0u);

  // Again: all from the cache, same order and content.
  CompilePoolResult again = CompilePool(cache, po).compile(ls);
  EXPECT_EQ(fake.calls->load(), 3);
  EXPECT_EQ(again.cacheHits, 3u);
  ASSERT_EQ(again.kernels.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(again.kernels[k].entry, r.kernels[k].entry);
    EXPECT_EQ(again.kernels[k].output.cubin, r.kernels[k].output.cubin);
    EXPECT_TRUE(again.kernels[k].cacheHit);
  }
}

TEST(CompilePool, SameSourceDifferentEntryAreDistinct) {
  CompileCacheOptions off;
  off.disabled = true;
  CompileCache cache(off);
  FakeCompiler fake;
  CompilePoolOptions po;
  po.compiler = fake.fn();
  CompilePoolResult r = CompilePool(cache, po).compile({launch("x", "same"), launch("y", "same"), launch("x", "same")});
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernelOfLaunch, (std::vector<size_t>{0, 1, 0}));
  EXPECT_EQ(fake.calls->load(), 2);
}

TEST(CompilePool, ErrorsNameTheKernelAndTheOthersStillCompile) {
  CompileCacheOptions off;
  off.disabled = true;
  CompileCache cache(off);
  FakeCompiler fake;
  CompilePoolOptions po;
  po.jobs = 3;
  po.compiler = fake.fn();
  CompilePoolResult r =
      CompilePool(cache, po).compile({launch("ok1", "fine 1"), launch("bad", "BROKEN"), launch("ok2", "fine 2"),
                                      launch("", "no name"), launch("empty", ""), launch("bad", "BROKEN")});
  ASSERT_EQ(r.kernels.size(), 5u);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_NE(r.errors[0].find("'bad'"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[0].find("launches 1 and 1 more"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[1].find("launch 3 has no kernel entry name"), std::string::npos) << r.errors[1];
  EXPECT_NE(r.errors[2].find("'empty' has an empty source"), std::string::npos) << r.errors[2];
  EXPECT_TRUE(r.kernels[0].output.ok());
  EXPECT_TRUE(r.kernels[2].output.ok());
  EXPECT_FALSE(r.ok());
}

TEST(CompilePool, CancelStopsNewCompiles) {
  CompileCacheOptions off;
  off.disabled = true;
  CompileCache cache(off);
  FakeCompiler fake;
  std::atomic<bool> cancel{true};
  CompilePoolOptions po;
  po.compiler = fake.fn();
  po.cancel = &cancel;
  CompilePoolResult r = CompilePool(cache, po).compile({launch("a", "1"), launch("b", "2")});
  EXPECT_EQ(fake.calls->load(), 0);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].find("cancelled"), std::string::npos);
}

TEST(CompilePool, EmptyInput) {
  CompileCache cache({"", true});
  CompilePoolResult r = CompilePool(cache).compile({});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.kernels.empty());
}

TEST(CompilePool, ProcessWorkersCarryResultsBack) {
  TempDir tmp;
  CompileCache cache({tmp.path});
  FakeCompiler fake;
  CompilePoolOptions po;
  po.jobs = 3;
  po.parallelism = CompileParallelism::Processes;
  po.compiler = fake.fn();  // runs in the worker processes
  size_t lastDone = 0;
  po.progress = [&](size_t done, size_t total) { lastDone = done; };
  std::vector<KernelLaunch> ls;
  for (int i = 0; i < 10; ++i) ls.push_back(launch("k" + std::to_string(i % 7), "src " + std::to_string(i % 7)));
  CompilePoolResult r = CompilePool(cache, po).compile(ls);
  ASSERT_TRUE(r.ok()) << r.errors[0];
  EXPECT_TRUE(r.processes);
  EXPECT_EQ(r.jobs, 3u);
  EXPECT_EQ(fake.calls->load(), 0) << "the compiler ran in the workers, not here";
  EXPECT_EQ(r.compiled, 7u);
  EXPECT_EQ(lastDone, 7u);
  ASSERT_EQ(r.kernels.size(), 7u);
  for (size_t k = 0; k < 7; ++k) {
    EXPECT_EQ(r.kernels[k].entry, "k" + std::to_string(k));
    EXPECT_EQ(std::string(r.kernels[k].output.cubin.begin(), r.kernels[k].output.cubin.end()), std::string("\x7f"
                                                                                                           "ELF") +
                                                                                                   "sm_90:src " +
                                                                                                   std::to_string(k));
    EXPECT_EQ(r.kernels[k].output.log, "fake log for k" + std::to_string(k));
  }
  // The parent stored what the workers compiled.
  EXPECT_EQ(entries(tmp.path).size(), 7u);
  CompilePoolResult again = CompilePool(cache, po).compile(ls);
  EXPECT_EQ(again.cacheHits, 7u);
  EXPECT_EQ(again.compiled, 0u);
}

TEST(CompilePool, CrashingWorkerFailsOnlyItsKernel) {
  CompileCacheOptions off;
  off.disabled = true;
  CompileCache cache(off);
  CompilePoolOptions po;
  po.jobs = 2;
  po.parallelism = CompileParallelism::Processes;
  FakeCompiler fake;
  auto inner = fake.fn();
  po.compiler = [inner](const std::string &source, const std::string &name, const std::string &arch,
                        const CompileOptions &o) {
    if (source == "CRASH") raise(SIGKILL);  // as if NVRTC crashed (only ever in a worker)
    return inner(source, name, arch, o);
  };
  std::vector<KernelLaunch> ls = {launch("a", "1"), launch("boom", "CRASH"), launch("b", "2"),
                                  launch("c", "3"), launch("d", "4"),        launch("e", "5")};
  CompilePoolResult r = CompilePool(cache, po).compile(ls);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("'boom'"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[0].find("signal 9"), std::string::npos) << r.errors[0];
  for (size_t k : {0, 2, 3, 4, 5}) EXPECT_TRUE(r.kernels[k].output.ok()) << k << ": " << r.kernels[k].output.error;
}

TEST(CompilePool, RealKernelsInParallel) {
  REQUIRE_NVRTC();
  for (CompileParallelism mode : {CompileParallelism::Threads, CompileParallelism::Processes}) {
    TempDir tmp;
    CompileCache cache({tmp.path});
    std::vector<KernelLaunch> ls;
    const char *ops[] = {"+", "-", "*", "/"};
    for (int rep = 0; rep < 3; ++rep)
      for (int i = 0; i < 4; ++i)
        ls.push_back(launch("ew_" + std::to_string(i), addKernel("ew_" + std::to_string(i), ops[i])));
    CompilePoolOptions po;
    po.jobs = 4;
    po.parallelism = mode;
    uint64_t c0 = nvrtcCompileCount();
    CompilePoolResult r = CompilePool(cache, po).compile(ls);
    ASSERT_TRUE(r.ok()) << r.errors[0];
    EXPECT_EQ(r.processes, mode == CompileParallelism::Processes);
    ASSERT_EQ(r.kernels.size(), 4u);
    EXPECT_EQ(r.compiled, 4u);
    // NVRTC runs here with threads, in the workers with processes.
    EXPECT_EQ(nvrtcCompileCount() - c0, mode == CompileParallelism::Threads ? 4u : 0u);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(r.kernels[k].entry, "ew_" + std::to_string(k));
      EXPECT_NE(r.kernels[k].output.ptx.find(".entry ew_" + std::to_string(k)), std::string::npos);
      EXPECT_EQ(std::string(r.kernels[k].output.cubin.data(), 4), std::string("\x7f"
                                                                              "ELF"));
      EXPECT_EQ(r.kernels[k].launches, (std::vector<size_t>{k, k + 4, k + 8}));
    }
    CompilePoolResult again = CompilePool(cache, po).compile(ls);
    EXPECT_EQ(nvrtcCompileCount() - c0, mode == CompileParallelism::Threads ? 4u : 0u);
    EXPECT_EQ(again.cacheHits, 4u);
    EXPECT_EQ(again.compiled, 0u);
  }
}

TEST(CompilePool, ProcessAndThreadResultsAreIdentical) {
  REQUIRE_NVRTC();
  CompileCacheOptions off;
  off.disabled = true;
  CompileCache cache(off);
  std::vector<KernelLaunch> ls = {launch("pt_0", addKernel("pt_0")), launch("pt_1", addKernel("pt_1", "*")),
                                  launch("bad_pt", "extern \"C\" __global__ void bad_pt() { nope; }")};
  CompilePoolOptions a, b;
  a.jobs = b.jobs = 2;
  a.parallelism = CompileParallelism::Threads;
  b.parallelism = CompileParallelism::Processes;
  CompilePoolResult ra = CompilePool(cache, a).compile(ls), rb = CompilePool(cache, b).compile(ls);
  ASSERT_EQ(ra.kernels.size(), rb.kernels.size());
  for (size_t k = 0; k < ra.kernels.size(); ++k) {
    EXPECT_EQ(ra.kernels[k].output.cubin, rb.kernels[k].output.cubin);
    EXPECT_EQ(ra.kernels[k].output.ptx, rb.kernels[k].output.ptx);
    EXPECT_EQ(ra.kernels[k].output.error, rb.kernels[k].output.error);
  }
  ASSERT_EQ(rb.errors.size(), 1u);
  EXPECT_NE(rb.errors[0].find("'bad_pt'"), std::string::npos);
  EXPECT_NE(rb.errors[0].find("identifier \"nope\" is undefined"), std::string::npos) << rb.errors[0];
}

TEST(CompilePool, ConcurrentPoolsSharingOneCacheDirectory) {
  REQUIRE_NVRTC();
  TempDir tmp;
  std::vector<KernelLaunch> ls;
  for (int i = 0; i < 6; ++i) {
    std::string name = "shared_" + std::to_string(i);
    ls.push_back(launch(name, addKernel(name, i % 2 ? "-" : "+")));
  }
  // Reference, compiled without any cache.
  std::vector<CompileOutput> ref;
  for (const KernelLaunch &l : ls) ref.push_back(compileKernel(l.source, l.entry, "sm_90"));

  const int pools = 4;
  std::vector<CompilePoolResult> results(pools);
  std::vector<std::thread> threads;
  for (int p = 0; p < pools; ++p) {
    threads.emplace_back([&, p] {
      CompileCache cache({tmp.path});  // separate objects, one directory (as separate processes)
      CompilePoolOptions po;
      po.jobs = 2;
      results[p] = CompilePool(cache, po).compile(ls);
    });
  }
  for (std::thread &t : threads) t.join();
  for (int p = 0; p < pools; ++p) {
    ASSERT_TRUE(results[p].ok()) << results[p].errors[0];
    ASSERT_EQ(results[p].kernels.size(), ls.size());
    for (size_t k = 0; k < ls.size(); ++k) {
      EXPECT_EQ(results[p].kernels[k].entry, ls[k].entry);
      EXPECT_EQ(results[p].kernels[k].output.cubin, ref[k].cubin) << "pool " << p << " kernel " << k;
      EXPECT_EQ(results[p].kernels[k].output.ptx, ref[k].ptx);
    }
  }
  EXPECT_EQ(entries(tmp.path).size(), ls.size());
  // Afterwards everything hits.
  CompileCache cache({tmp.path});
  CompilePoolResult after = CompilePool(cache).compile(ls);
  EXPECT_EQ(after.cacheHits, ls.size());
}
