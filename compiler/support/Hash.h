// One hash for kiln's own keys: kernel names, the NVRTC compile cache's keys and checksums, the
// compile pool's de-duplication. XXH3 from LLVM Support: fast, well mixed, and stable across
// platforms and releases — its values name kernels inside engines and files on disk.
// (The engine format's checksum and a model file's identity stay the format's FNV-1a 64,
// runtime/format/EngineFormat.h: they sit in files users keep, calibration files and tuning
// caches, and change only with the next format version.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::support {

uint64_t hash64(const void *data, size_t size);
inline uint64_t hash64(std::string_view s) { return hash64(s.data(), s.size()); }

// XXH3's 128-bit variant: two 64-bit halves for a key and an independent check of it.
struct Hash128 {
  uint64_t low = 0, high = 0;
};
Hash128 hash128(const void *data, size_t size);
inline Hash128 hash128(std::string_view s) { return hash128(s.data(), s.size()); }

std::string hex64(uint64_t v);  // 16 lower-case hex digits

}  // namespace kiln::support
