// On-disk cache of NVRTC outputs (cubin + PTX + log), so rebuilding an engine, or tuning many
// routes that share kernels, compiles each distinct kernel once per machine.
//
// Key: the low 64 bits of support::hash128 (XXH3-128, compiler/support/Hash.h) over length-prefixed fields
//   cache format version, NVRTC version and library fingerprint (nvrtcFingerprint), arch, kernel
//   name, the exact NVRTC option list, how PTX was produced, source.
// A different NVRTC, option or kiln cache format therefore means a miss, never a wrong hit.
//
// Location: `dir` when given (tests, `--compile-cache-dir`), else $XDG_CACHE_HOME/kiln/nvrtc
// (XDG_CACHE_HOME must be absolute), else $HOME/.cache/kiln/nvrtc. One file per entry,
// `<16 hex digits of the key>.kcubin`.
//
// Entry layout (little-endian, all integers fixed width):
//   [0,8)   magic "KILNNVC\x01"
//   [8,12)  u32 format version (kCompileCacheFormat)
//   [12,16) u32 header size (64)
//   [16,24) u64 key hash (must equal the file name's key)
//   [24,32) u64 the high 64 bits of that hash (an independent check: guards against collisions)
//   [32,40) u64 cubin size   [40,48) u64 PTX size   [48,56) u64 log size
//   [56,64) u64 support::hash64 of the payload
//   payload: cubin bytes, PTX text, log text; the file size must equal 64 + the three sizes.
// Anything that does not match (truncated file, bad magic/version/size/checksum, other key) is a
// corrupt entry: a miss, and the next store replaces it.
//
// Writes are atomic: the entry is written to a unique temporary file in the same directory and
// renamed over the final name, so concurrent kiln processes (or threads) sharing the directory
// never read a partial entry; when two write the same key, the last rename wins with identical
// content. Only successful compiles are stored. I/O failures never fail a compile: the cache
// just degrades to a miss (and counts it in Stats::storeErrors).
//
// Thread-safe: one CompileCache may be used by many threads at once.
#pragma once

#include "codegen/nvrtc/Nvrtc.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen {

// Bump when the entry layout or the key material changes.
constexpr uint32_t kCompileCacheFormat = 2;  // 2: XXH3 keys and checksums (1: FNV-1a)

struct CompileCacheOptions {
  std::string dir;        // empty: the default location (see above)
  bool disabled = false;  // --no-compile-cache: every lookup misses, nothing is written
};

class CompileCache {
 public:
  // Compiles one kernel; the default is compileKernel. Tests inject counting/failing compilers.
  using Compiler = std::function<CompileOutput(const std::string &source, const std::string &name,
                                               const std::string &arch, const CompileOptions &)>;

  explicit CompileCache(CompileCacheOptions options = {});

  // $XDG_CACHE_HOME/kiln/nvrtc or $HOME/.cache/kiln/nvrtc; "" when neither can be determined.
  static std::string defaultDirectory();

  const std::string &directory() const { return dir_; }
  // False when disabled, or when no directory could be determined or created (see whyDisabled).
  bool enabled() const { return enabled_; }
  const std::string &whyDisabled() const { return whyDisabled_; }

  // The key material and its hash for one compile. Needs NVRTC's fingerprint: when NVRTC cannot
  // be loaded that part is empty (and compiling fails anyway).
  static std::string keyMaterial(const std::string &source, const std::string &name, const std::string &arch,
                                 const CompileOptions &options);
  static uint64_t key(const std::string &source, const std::string &name, const std::string &arch,
                      const CompileOptions &options);
  std::string entryPath(uint64_t key) const;  // "" when disabled

  // A valid entry for this compile, or false (miss, corrupt, disabled).
  bool lookup(const std::string &source, const std::string &name, const std::string &arch,
              const CompileOptions &options, CompileOutput &out);
  // Stores a successful output; returns false (and sets *error) when it could not be written.
  bool store(const std::string &source, const std::string &name, const std::string &arch, const CompileOptions &options,
             const CompileOutput &out, std::string *error = nullptr);

  // lookup, else compile and store. *hit tells which happened.
  CompileOutput getOrCompile(const std::string &source, const std::string &name, const std::string &arch,
                             const CompileOptions &options, bool *hit = nullptr, const Compiler &compiler = nullptr);

  struct Stats {
    uint64_t hits = 0, misses = 0, corrupt = 0, stores = 0, storeErrors = 0;
  };
  Stats stats() const;

 private:
  bool readEntry(uint64_t key, uint64_t check, CompileOutput &out);
  void removeStaleTemporaries();

  std::string dir_;
  bool enabled_ = false;
  std::string whyDisabled_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, corrupt_{0}, stores_{0}, storeErrors_{0};
};

}  // namespace kiln::codegen
