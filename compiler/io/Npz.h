// NumPy .npy / .npz files: the CLI's format for input and reference tensors (`kiln run --inputs`,
// `kiln check --reference`), so users can produce them with np.savez and read ours with np.load.
// Self-contained (zlib only, no numpy); the readers are bounds-checked because the files come from
// users. Nothing here throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::io {

// One array. Supported element types are numpy's bool, int8–64, uint8–64, float16/32/64, stored
// little-endian; `descr` is numpy's dtype string in canonical form ("<f4", "|u1", "|b1", ...).
struct NpyArray {
  std::string descr;           // e.g. "<f4"
  std::vector<int64_t> shape;  // C order; empty = scalar (one element)
  std::vector<uint8_t> data;   // numElements() * itemSize() bytes, row-major

  // Product of the dims; -1 if a dim is negative or the product overflows int64.
  int64_t numElements() const;
  // Bytes per element from `descr`; 0 if `descr` is not a supported dtype.
  size_t itemSize() const;
};

// ONNX TensorProto element type <-> canonical numpy descr; "" / 0 when there is no counterpart
// (bfloat16 and the float8 types have no numpy dtype).
std::string descrForOnnxDtype(int32_t dtype);
int32_t onnxDtypeForDescr(const std::string &descr);

// Parses the bytes of one .npy file (format versions 1.0–3.0). On failure returns false and sets
// `error` (bad magic, unsupported version, unsupported dtype, malformed header, data size
// mismatch). `out.descr` is canonicalized ("<u1" -> "|u1"); a fortran_order array is returned in
// C order.
bool parseNpy(const uint8_t *data, size_t size, NpyArray &out, std::string &error);
// Serializes as numpy does (version 1.0, or 2.0 for headers over 64 KiB; data 64-byte aligned).
// Returns an empty vector if `a` is invalid (unsupported descr, or data size not matching shape).
std::vector<uint8_t> writeNpy(const NpyArray &a);

// The arrays of a .npz archive in archive order, keyed by entry name without ".npy".
struct Npz {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  const NpyArray *find(const std::string &name) const;  // nullptr if absent
};

// Deflated (np.savez_compressed) entries may inflate to at most this many bytes each and in all
// (their declared sizes are checked before anything is inflated); stored entries (np.savez) cost
// what the file holds.
constexpr uint64_t kMaxInflatedEntryBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxInflatedTotalBytes = uint64_t(4) << 30;

// Reads a .npz (stored or deflated entries, ZIP64, CRC-32 verified) or a single .npy file (detected
// by its magic; one array named after the file's stem). Errors name the file and the entry.
// Entry names are array names with ".npy"; the %XX escapes of writeNpz are decoded.
bool readNpz(const std::string &path, Npz &out, std::string &error);
// Writes stored (uncompressed) entries NAME.npy, NAME with '/', '\\', '%' and control characters
// written as %XX (an unzipper cannot be led outside its folder; np.load shows the escaped
// keys, readNpz the names), switching to ZIP64 records only where sizes,
// offsets or the entry count need them. Written through support::AtomicFile (a temporary renamed
// into place, so a concurrent reader never sees a partial file); `path` must not be one of the
// command's `inputs` nor anything but a regular file.
bool writeNpz(const std::string &path, const Npz &npz, std::string &error, const std::vector<std::string> &inputs = {});

}  // namespace kiln::io
