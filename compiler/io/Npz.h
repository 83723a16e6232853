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
// `error` (bad magic, unsupported version, unsupported dtype, fortran_order, malformed header, data
// size mismatch). `out.descr` is canonicalized ("<u1" -> "|u1").
bool parseNpy(const uint8_t *data, size_t size, NpyArray &out, std::string &error);
// Serializes as numpy does (version 1.0, or 2.0 for headers over 64 KiB; data 64-byte aligned).
// Returns an empty vector if `a` is invalid (unsupported descr, or data size not matching shape).
std::vector<uint8_t> writeNpy(const NpyArray &a);

// The arrays of a .npz archive in archive order, keyed by entry name without ".npy".
struct Npz {
  std::vector<std::pair<std::string, NpyArray>> arrays;
  const NpyArray *find(const std::string &name) const;  // nullptr if absent
};

// Reads a .npz (stored or deflated entries, ZIP64, CRC-32 verified) or a single .npy file (detected
// by its magic; one array named after the file's stem). Errors name the file and the entry.
bool readNpz(const std::string &path, Npz &out, std::string &error);
// Writes stored (uncompressed) entries NAME.npy, switching to ZIP64 records only where sizes,
// offsets or the entry count need them. Written to PATH.tmp.<pid> and renamed into place, so a
// concurrent reader never sees a partial file.
bool writeNpz(const std::string &path, const Npz &npz, std::string &error);

}  // namespace kiln::io
