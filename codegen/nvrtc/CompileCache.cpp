#include "codegen/nvrtc/CompileCache.h"

#include "compiler/support/Files.h"
#include "compiler/support/Hash.h"

#include "llvm/Support/Endian.h"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <thread>

namespace kiln::codegen {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'N', 'V', 'C', '\x01'};
constexpr uint32_t kHeaderSize = 64;
// Upper bound on one entry's payload; anything larger is treated as corrupt.
constexpr uint64_t kMaxPayload = 1ull << 32;

// Little-endian fields (LLVM Support's endian helpers).
void putU32(std::string &b, uint32_t v) {
  char x[4];
  llvm::support::endian::write32le(x, v);
  b.append(x, 4);
}
void putU64(std::string &b, uint64_t v) {
  char x[8];
  llvm::support::endian::write64le(x, v);
  b.append(x, 8);
}
uint32_t getU32(const unsigned char *p) { return llvm::support::endian::read32le(p); }
uint64_t getU64(const unsigned char *p) { return llvm::support::endian::read64le(p); }
void putField(std::string &b, const std::string &s) {
  putU64(b, s.size());
  b += s;
}

}  // namespace

std::string CompileCache::defaultDirectory() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') return std::string(x) + "/kiln/nvrtc";
  std::string home;
  if (const char *h = std::getenv("HOME"); h && *h) {
    home = h;
  } else if (const passwd *pw = getpwuid(getuid()); pw && pw->pw_dir && *pw->pw_dir) {
    home = pw->pw_dir;
  }
  return home.empty() ? std::string() : home + "/.cache/kiln/nvrtc";
}

CompileCache::CompileCache(CompileCacheOptions options) {
  if (options.disabled) {
    whyDisabled_ = "compile cache disabled (--no-compile-cache)";
    return;
  }
  dir_ = options.dir.empty() ? defaultDirectory() : options.dir;
  if (dir_.empty()) {
    whyDisabled_ = "compile cache disabled: neither XDG_CACHE_HOME nor HOME is set";
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_, ec)) {
    whyDisabled_ = "compile cache disabled: cannot create " + dir_ + (ec ? ": " + ec.message() : std::string());
    return;
  }
  enabled_ = true;
  removeStaleTemporaries();
}

void CompileCache::removeStaleTemporaries() {
  // Temporaries left by a process killed between write and rename: older than a day, so never
  // one that a running compiler is still writing.
  std::error_code ec;
  auto now = std::filesystem::file_time_type::clock::now();
  for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string fname = it->path().filename().string();
    // support::AtomicFile's KEY.kcubin.tmp.PID.N (and the .tmp-* names of older kilns)
    if (fname.compare(0, 5, ".tmp-") != 0 && fname.find(".kcubin.tmp.") == std::string::npos) continue;
    std::error_code e2;
    auto t = std::filesystem::last_write_time(it->path(), e2);
    if (!e2 && now - t > std::chrono::hours(24)) std::filesystem::remove(it->path(), e2);
  }
}

std::string CompileCache::keyMaterial(const std::string &source, const std::string &name, const std::string &arch,
                                      const CompileOptions &options) {
  std::string m = "kiln-nvrtc-cache";
  putU32(m, kCompileCacheFormat);
  putField(m, nvrtcFingerprint());
  putField(m, arch);
  putField(m, name);
  std::vector<std::string> opts = nvrtcOptions(arch, options);
  putU64(m, opts.size());
  for (const std::string &o : opts) putField(m, o);
  // How the PTX was produced and whether the entry was checked also shape what is stored.
  putU32(m, (options.separatePtxCompile ? 1u : 0u) | (options.checkEntry ? 2u : 0u));
  putField(m, source);
  return m;
}

uint64_t CompileCache::key(const std::string &source, const std::string &name, const std::string &arch,
                           const CompileOptions &options) {
  return support::hash128(keyMaterial(source, name, arch, options)).low;
}

std::string CompileCache::entryPath(uint64_t key) const {
  return enabled_ ? dir_ + "/" + support::hex64(key) + ".kcubin" : std::string();
}

bool CompileCache::readEntry(uint64_t key, uint64_t check, CompileOutput &out) {
  std::string path = entryPath(key);
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return false;  // plain miss
  std::string data;
  bool readOk = true;
  {
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && static_cast<uint64_t>(st.st_size) < kMaxPayload + kHeaderSize)
      data.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
      data.append(buf, n);
      if (data.size() > kMaxPayload + kHeaderSize) break;
    }
    readOk = !std::ferror(f);
    std::fclose(f);
  }
  auto corrupt = [this] {
    corrupt_.fetch_add(1, std::memory_order_relaxed);
    return false;
  };
  if (!readOk || data.size() < kHeaderSize) return corrupt();
  const unsigned char *p = reinterpret_cast<const unsigned char *>(data.data());
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0 || getU32(p + 8) != kCompileCacheFormat ||
      getU32(p + 12) != kHeaderSize || getU64(p + 16) != key || getU64(p + 24) != check)
    return corrupt();
  uint64_t cubinSize = getU64(p + 32), ptxSize = getU64(p + 40), logSize = getU64(p + 48);
  if (cubinSize > kMaxPayload || ptxSize > kMaxPayload || logSize > kMaxPayload ||
      kHeaderSize + cubinSize + ptxSize + logSize != data.size())
    return corrupt();
  if (support::hash64(data.data() + kHeaderSize, data.size() - kHeaderSize) != getU64(p + 56)) return corrupt();
  if (cubinSize < 4 || std::memcmp(data.data() + kHeaderSize,
                                   "\x7f"
                                   "ELF",
                                   4) != 0)
    return corrupt();
  const char *q = data.data() + kHeaderSize;
  out = CompileOutput();
  out.cubin.assign(q, q + cubinSize);
  out.ptx.assign(q + cubinSize, ptxSize);
  out.log.assign(q + cubinSize + ptxSize, logSize);
  return true;
}

bool CompileCache::lookup(const std::string &source, const std::string &name, const std::string &arch,
                          const CompileOptions &options, CompileOutput &out) {
  if (!enabled_) return false;
  support::Hash128 h = support::hash128(keyMaterial(source, name, arch, options));
  if (readEntry(h.low, h.high, out)) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool CompileCache::store(const std::string &source, const std::string &name, const std::string &arch,
                         const CompileOptions &options, const CompileOutput &out, std::string *error) {
  auto fail = [&](const std::string &why) {
    storeErrors_.fetch_add(1, std::memory_order_relaxed);
    if (error) *error = why;
    return false;
  };
  if (!enabled_) return fail(whyDisabled_);
  if (!out.ok() || out.cubin.empty()) return fail("only successful compiles are cached");
  support::Hash128 h = support::hash128(keyMaterial(source, name, arch, options));

  std::string payload;
  payload.reserve(out.cubin.size() + out.ptx.size() + out.log.size());
  payload.append(out.cubin.data(), out.cubin.size());
  payload += out.ptx;
  payload += out.log;
  std::string entry(kMagic, sizeof kMagic);
  putU32(entry, kCompileCacheFormat);
  putU32(entry, kHeaderSize);
  putU64(entry, h.low);
  putU64(entry, h.high);
  putU64(entry, out.cubin.size());
  putU64(entry, out.ptx.size());
  putU64(entry, out.log.size());
  putU64(entry, support::hash64(payload));
  entry += payload;

  // Written beside the entry and renamed over it, so concurrent readers never see a partial one.
  std::string why;
  if (!support::writeFileAtomically(entryPath(h.low), entry, why)) return fail(why);
  stores_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

CompileOutput CompileCache::getOrCompile(const std::string &source, const std::string &name, const std::string &arch,
                                         const CompileOptions &options, bool *hit, const Compiler &compiler) {
  if (hit) *hit = false;
  CompileOutput out;
  if (enabled_) {
    try {
      if (lookup(source, name, arch, options, out)) {
        if (hit) *hit = true;
        return out;
      }
    } catch (const std::exception &) {
      // e.g. bad_alloc on a huge entry: fall through to compiling
    }
  } else {
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  out = compiler ? compiler(source, name, arch, options) : compileKernel(source, name, arch, options);
  if (enabled_ && out.ok()) {
    try {
      store(source, name, arch, options, out);
    } catch (const std::exception &) {
      storeErrors_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return out;
}

CompileCache::Stats CompileCache::stats() const {
  Stats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.corrupt = corrupt_.load();
  s.stores = stores_.load();
  s.storeErrors = storeErrors_.load();
  return s;
}

}  // namespace kiln::codegen
