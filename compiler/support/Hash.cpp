#include "compiler/support/Hash.h"

#include "llvm/Support/xxhash.h"

#include <cstdio>

namespace kiln::support {

static llvm::ArrayRef<uint8_t> bytes(const void *data, size_t size) {
  return llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(data), size);
}

uint64_t hash64(const void *data, size_t size) { return llvm::xxh3_64bits(bytes(data, size)); }

Hash128 hash128(const void *data, size_t size) {
  llvm::XXH128_hash_t h = llvm::xxh3_128bits(bytes(data, size));
  return {h.low64, h.high64};
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace kiln::support
