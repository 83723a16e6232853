// .npy per numpy's format spec (numpy/lib/format.py) and .npz as the ZIP subset numpy and Python's
// zipfile produce (APPNOTE.TXT 6.3). The central directory is authoritative, as in every unzipper;
// local headers are only used to find where an entry's data starts.
#include "compiler/io/Npz.h"

#include "compiler/support/Files.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <unistd.h>

// Test seams: lower these at compile time to exercise the writer's ZIP64 records without
// writing 4 GiB files. The reader never uses them.
#ifndef KILN_NPZ_ZIP64_LIMIT
#define KILN_NPZ_ZIP64_LIMIT 0xFFFFFFFFull
#endif
#ifndef KILN_NPZ_ZIP64_COUNT_LIMIT
#define KILN_NPZ_ZIP64_COUNT_LIMIT 0xFFFFull
#endif

namespace kiln::io {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

// --- dtypes -------------------------------------------------------------------------------------

// Canonical form of a numpy descr, or "" with `why` set. Single-byte types have no byte order, so
// any order character is accepted for them and normalized to '|', as numpy does.
std::string canonicalDescr(const std::string &d, std::string *why) {
  auto fail = [&](const std::string &msg) {
    if (why) *why = msg;
    return std::string();
  };
  if (d.size() >= 2 && d[1] == 'O') return fail("object dtype '" + d + "' is not supported");
  if (d.size() < 3 || std::string("<>|=").find(d[0]) == std::string::npos) return fail("unsupported dtype '" + d + "'");
  char order = d[0];
  std::string bits = d.substr(2);
  static const char *const kKnown[] = {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"};
  std::string kindBits = d.substr(1);
  if (std::find(std::begin(kKnown), std::end(kKnown), kindBits) == std::end(kKnown))
    return fail("unsupported dtype '" + d + "'");
  if (bits == "1") return std::string("|") + kindBits;
  if (order == '>') return fail("big-endian dtype '" + d + "' is not supported");
  // '|' is meaningless for multi-byte types and '=' means the writer's native order (unknown here).
  if (order != '<') return fail("unsupported dtype '" + d + "'");
  return d;
}

size_t itemSizeOf(const std::string &canonical) {
  return canonical.empty() ? 0 : static_cast<size_t>(canonical[2] - '0');
}

// Bytes of `shape` elements of `itemSize`, or false on a negative dim or uint64 overflow.
bool byteSize(const std::vector<int64_t> &shape, size_t itemSize, uint64_t &bytes) {
  uint64_t n = itemSize;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return false;
    n *= static_cast<uint64_t>(d);
  }
  bytes = n;
  return true;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// --- npy header ---------------------------------------------------------------------------------

// Recursive-descent parser for the one Python literal numpy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const char *p, const char *end) : p_(p), end_(end) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape, std::string &error) {
    skipWs();
    if (!eat('{')) return fail(error, "npy header is not a dict");
    bool haveDescr = false, haveOrder = false, haveShape = false;
    for (;;) {
      skipWs();
      if (eat('}')) break;
      std::string key;
      if (!parseString(key)) return fail(error, "malformed npy header: expected a string key");
      skipWs();
      if (!eat(':')) return fail(error, "malformed npy header: expected ':' after '" + key + "'");
      skipWs();
      if (key == "descr") {
        if (p_ < end_ && *p_ == '[') return fail(error, "structured dtypes are not supported");
        if (!parseString(descr)) return fail(error, "malformed npy header: 'descr' is not a string");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (eatWord("True"))
          fortran = true;
        else if (eatWord("False"))
          fortran = false;
        else
          return fail(error, "malformed npy header: 'fortran_order' is not a bool");
        haveOrder = true;
      } else if (key == "shape") {
        if (!parseShape(shape)) return fail(error, "malformed npy header: 'shape' is not a tuple of ints");
        haveShape = true;
      } else {
        return fail(error, "unexpected key '" + key + "' in npy header");
      }
      skipWs();
      if (eat(',')) continue;
      skipWs();
      if (eat('}')) break;
      return fail(error, "malformed npy header: expected ',' or '}'");
    }
    skipWs();
    if (p_ != end_) return fail(error, "malformed npy header: trailing characters after the dict");
    if (!haveDescr || !haveOrder || !haveShape)
      return fail(error, "npy header lacks 'descr', 'fortran_order' or 'shape'");
    return true;
  }

 private:
  static bool fail(std::string &error, const std::string &msg) {
    error = msg;
    return false;
  }
  void skipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool eat(char c) {
    if (p_ < end_ && *p_ == c) return ++p_, true;
    return false;
  }
  bool eatWord(const char *w) {
    size_t n = std::strlen(w);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }
  // Quoted string without escapes: no valid key or dtype needs them.
  bool parseString(std::string &s) {
    if (p_ >= end_ || (*p_ != '\'' && *p_ != '"')) return false;
    char q = *p_++;
    const char *start = p_;
    while (p_ < end_ && *p_ != q) {
      if (*p_ == '\\') return false;
      ++p_;
    }
    if (p_ >= end_) return false;
    s.assign(start, p_++);
    return true;
  }
  bool parseInt(int64_t &v) {
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return false;
    v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      int digit = *p_++ - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;
      v = v * 10 + digit;
    }
    eat('L');  // Python 2 longs
    return true;
  }
  bool parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    if (!eat('(')) return false;
    for (;;) {
      skipWs();
      if (eat(')')) return true;
      int64_t v;
      if (!parseInt(v)) return false;
      shape.push_back(v);
      skipWs();
      if (eat(',')) continue;
      skipWs();
      return eat(')');
    }
  }

  const char *p_;
  const char *end_;
};

struct NpyHeader {
  std::string descr;  // canonical
  std::vector<int64_t> shape;
  bool fortran = false;   // data in column-major order
  size_t dataOffset = 0;  // where the array data starts
};

// Rewrites column-major (Fortran-order) array data in row-major (C) order, in a new buffer.
void fortranToC(std::vector<uint8_t> &data, size_t begin, const std::vector<int64_t> &shape, size_t itemSize) {
  size_t rank = shape.size();
  uint64_t count = (data.size() - begin) / itemSize;
  if (rank < 2 || count < 2) return;  // the same bytes either way
  std::vector<uint8_t> c(count * itemSize);
  // Column-major strides (in elements); walk the C order with an odometer.
  std::vector<uint64_t> stride(rank, 1);
  for (size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * uint64_t(shape[k - 1]);
  std::vector<int64_t> index(rank, 0);
  uint64_t from = 0;
  const uint8_t *src = data.data() + begin;
  for (uint64_t i = 0; i < count; ++i) {
    std::memcpy(c.data() + i * itemSize, src + from * itemSize, itemSize);
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) {
        from += stride[k];
        break;
      }
      from -= stride[k] * uint64_t(shape[k] - 1);
      index[k] = 0;
    }
  }
  data.resize(begin);
  data.insert(data.end(), c.begin(), c.end());
}

// Parses and validates the header; the data must be exactly what the shape needs.
bool parseNpyHeader(const uint8_t *data, size_t size, NpyHeader &h, std::string &error) {
  if (size < kNpyMagicLen || std::memcmp(data, kNpyMagic, kNpyMagicLen) != 0) {
    error = "bad magic (not a .npy file)";
    return false;
  }
  if (size < 10) {
    error = "truncated npy header";
    return false;
  }
  int major = data[6], minor = data[7];
  if (major < 1 || major > 3 || minor != 0) {
    error = "unsupported npy version " + std::to_string(major) + "." + std::to_string(minor);
    return false;
  }
  size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) {
    error = "truncated npy header";
    return false;
  }
  uint64_t headerLen = data[8] | (data[9] << 8);
  if (major >= 2) headerLen |= (uint64_t(data[10]) << 16) | (uint64_t(data[11]) << 24);
  if (headerLen > size - prefix) {
    error = "truncated npy header (declares " + std::to_string(headerLen) + " bytes, " + std::to_string(size - prefix) +
            " present)";
    return false;
  }
  const char *text = reinterpret_cast<const char *>(data + prefix);
  std::string rawDescr;
  if (!HeaderParser(text, text + headerLen).parse(rawDescr, h.fortran, h.shape, error)) return false;
  h.descr = canonicalDescr(rawDescr, &error);
  if (h.descr.empty()) return false;
  h.dataOffset = prefix + headerLen;
  uint64_t need = 0;
  if (!byteSize(h.shape, itemSizeOf(h.descr), need) ||
      need > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    error = "shape " + shapeString(h.shape) + " is too large";
    return false;
  }
  if (need != size - h.dataOffset) {
    error = "data size mismatch: shape " + shapeString(h.shape) + " of " + h.descr + " needs " + std::to_string(need) +
            " bytes, found " + std::to_string(size - h.dataOffset);
    return false;
  }
  return true;
}

// Magic, version, length and padded header text of `a`, as numpy writes them; "" if `a` is invalid.
std::string npyHeaderBytes(const NpyArray &a) {
  std::string descr = canonicalDescr(a.descr, nullptr);
  uint64_t need = 0;
  if (descr.empty() || !byteSize(a.shape, itemSizeOf(descr), need) || need != a.data.size()) return "";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeString(a.shape) + ", }";
  // numpy pads with spaces and a final newline so the data starts 64-byte aligned (for mmap).
  for (size_t prefix : {size_t(10), size_t(12)}) {
    size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
    size_t headerLen = total - prefix;
    if (prefix == 10 && headerLen > 0xFFFF) continue;  // version 1.0 stores a 16-bit length
    std::string out(kNpyMagic, kNpyMagicLen);
    out += static_cast<char>(prefix == 10 ? 1 : 2);
    out += '\0';
    for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((headerLen >> (8 * i)) & 0xFF);
    out += dict;
    out.append(headerLen - dict.size() - 1, ' ');
    out += '\n';
    return out;
  }
  return "";
}

// --- byte helpers -------------------------------------------------------------------------------

uint16_t rd16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t *p) { return rd16(p) | (uint32_t(rd16(p + 2)) << 16); }
uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t(rd32(p + 4)) << 32); }

void put16(std::string &s, uint64_t v) {
  for (int i = 0; i < 2; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put32(std::string &s, uint64_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// zlib takes 32-bit lengths, so large buffers go in chunks.
constexpr uint64_t kZChunk = 1u << 30;

uint32_t crcUpdate(uint32_t crc, const uint8_t *p, uint64_t n) {
  while (n > 0) {
    uInt c = static_cast<uInt>(std::min(n, kZChunk));
    crc = static_cast<uint32_t>(crc32(crc, p, c));
    p += c;
    n -= c;
  }
  return crc;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// --- entry names ------------------------------------------------------------------------------

// Bytes an array's name may not carry into a zip entry name: path separators (an unzipper would
// write outside its folder: "../../x"), control characters, and '%' itself (the escape).
bool escapedInEntryName(unsigned char c) { return c == '/' || c == '\\' || c == '%' || c < 0x20 || c == 0x7F; }

std::string encodeEntryName(const std::string &name) {
  std::string out;
  char hex[4];
  for (unsigned char c : name) {
    if (!escapedInEntryName(c)) {
      out += char(c);
      continue;
    }
    std::snprintf(hex, sizeof hex, "%%%02X", c);
    out += hex;
  }
  return out;
}

// Undoes encodeEntryName: only %XX of an escaped byte is decoded, so names from other writers
// (numpy keeps a '%' as it is) come back unchanged.
std::string decodeEntryName(const std::string &name) {
  auto hexValue = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size()) {
      int hi = hexValue(name[i + 1]), lo = hexValue(name[i + 2]);
      if (hi >= 0 && lo >= 0 && escapedInEntryName(static_cast<unsigned char>(hi * 16 + lo))) {
        out += char(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += name[i];
  }
  return out;
}

// --- zip reading --------------------------------------------------------------------------------

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalLen = 30, kCentralLen = 46, kEndLen = 22, kZip64EndLen = 56, kZip64LocatorLen = 20;

class InputFile {
 public:
  bool open(const std::string &path, std::string &error) {
    std::error_code ec;
    auto status = std::filesystem::status(path, ec);
    if (status.type() != std::filesystem::file_type::regular) {
      error = status.type() == std::filesystem::file_type::not_found ? "no such file" : "not a regular file";
      return false;
    }
    in_.open(path, std::ios::binary);
    if (!in_) {
      error = std::strerror(errno);
      return false;
    }
    in_.seekg(0, std::ios::end);
    auto end = in_.tellg();
    if (end < 0) {
      error = "cannot determine the file size";
      return false;
    }
    size_ = static_cast<uint64_t>(end);
    return true;
  }
  uint64_t size() const { return size_; }
  // Reads [off, off + n) if it lies inside the file.
  bool read(uint64_t off, void *dst, uint64_t n) {
    if (off > size_ || n > size_ - off) return false;
    if (n == 0) return true;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(off));
    in_.read(static_cast<char *>(dst), static_cast<std::streamsize>(n));
    return static_cast<uint64_t>(in_.gcount()) == n;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct ZipEntry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compSize = 0, size = 0, localOffset = 0;
  uint64_t dataOffset = 0;  // from the local header
};

struct CentralDirectory {
  uint64_t entries = 0, size = 0, offset = 0;
  uint64_t end = 0;  // where the records after the central directory start
};

bool findCentralDirectory(InputFile &f, CentralDirectory &cd, std::string &error) {
  // The end record is the last 22 bytes, unless followed by a comment of up to 64 KiB.
  uint64_t tailLen = std::min<uint64_t>(f.size(), kEndLen + 0xFFFF);
  std::vector<uint8_t> tail(tailLen);
  uint64_t tailStart = f.size() - tailLen;
  if (tailLen < kEndLen || !f.read(tailStart, tail.data(), tailLen)) {
    error = "not a zip archive (too short)";
    return false;
  }
  const uint8_t *eocd = nullptr;
  for (uint64_t i = tailLen - kEndLen + 1; i-- > 0;) {
    if (rd32(&tail[i]) == kEndSig && i + kEndLen + rd16(&tail[i + 20]) <= tailLen) {
      eocd = &tail[i];
      break;
    }
  }
  if (!eocd) {
    error = "end of central directory not found (truncated, or not a zip archive)";
    return false;
  }
  uint64_t eocdOffset = tailStart + (eocd - tail.data());
  uint64_t disk = rd16(eocd + 4), cdDisk = rd16(eocd + 6), diskEntries = rd16(eocd + 8);
  cd.entries = rd16(eocd + 10);
  cd.size = rd32(eocd + 12);
  cd.offset = rd32(eocd + 16);
  cd.end = eocdOffset;

  // A ZIP64 locator right before the end record supersedes its (then saturated) fields.
  uint8_t loc[kZip64LocatorLen];
  if (eocdOffset >= kZip64LocatorLen && f.read(eocdOffset - kZip64LocatorLen, loc, kZip64LocatorLen) &&
      rd32(loc) == kZip64LocatorSig) {
    uint64_t recOffset = rd64(loc + 8);
    uint8_t rec[kZip64EndLen];
    if (recOffset > eocdOffset - kZip64LocatorLen || eocdOffset - kZip64LocatorLen - recOffset < kZip64EndLen ||
        !f.read(recOffset, rec, kZip64EndLen) || rd32(rec) != kZip64EndSig) {
      error = "ZIP64 end of central directory record not found";
      return false;
    }
    disk = rd32(rec + 16);
    cdDisk = rd32(rec + 20);
    diskEntries = rd64(rec + 24);
    cd.entries = rd64(rec + 32);
    cd.size = rd64(rec + 40);
    cd.offset = rd64(rec + 48);
    cd.end = recOffset;
  }
  if (disk != 0 || cdDisk != 0 || diskEntries != cd.entries) {
    error = "multi-disk zip archives are not supported";
    return false;
  }
  if (cd.offset > cd.end || cd.size > cd.end - cd.offset) {
    error = "central directory lies outside the file (truncated or corrupt)";
    return false;
  }
  if (cd.entries > cd.size / kCentralLen) {
    error = "central directory too small for " + std::to_string(cd.entries) + " entries";
    return false;
  }
  return true;
}

// Replaces saturated 32-bit fields with the values of the ZIP64 extra field (id 1), which holds
// exactly the saturated ones, in this order.
bool applyZip64Extra(const uint8_t *extra, size_t len, ZipEntry &e, bool sizeSat, bool compSat, bool offSat,
                     std::string &error) {
  for (size_t pos = 0; pos + 4 <= len;) {
    uint16_t id = rd16(extra + pos), n = rd16(extra + pos + 2);
    if (n > len - pos - 4) {
      error = "malformed extra field";
      return false;
    }
    if (id == 1) {
      const uint8_t *p = extra + pos + 4, *end = p + n;
      std::pair<bool, uint64_t *> fields[] = {{sizeSat, &e.size}, {compSat, &e.compSize}, {offSat, &e.localOffset}};
      for (auto [sat, field] : fields) {
        if (!sat) continue;
        if (end - p < 8) {
          error = "ZIP64 extra field too short";
          return false;
        }
        *field = rd64(p);
        p += 8;
      }
      return true;
    }
    pos += 4 + n;
  }
  return true;  // no ZIP64 field: take the 32-bit values at face value
}

bool readCentralDirectory(InputFile &f, const CentralDirectory &cd, std::vector<ZipEntry> &entries,
                          std::string &error) {
  std::vector<uint8_t> dir(cd.size);
  if (!f.read(cd.offset, dir.data(), cd.size)) {
    error = "cannot read the central directory";
    return false;
  }
  entries.clear();
  entries.reserve(cd.entries);
  size_t pos = 0;
  for (uint64_t i = 0; i < cd.entries; ++i) {
    if (dir.size() - pos < kCentralLen || rd32(&dir[pos]) != kCentralSig) {
      error = "corrupt central directory (entry " + std::to_string(i) + ")";
      return false;
    }
    const uint8_t *h = &dir[pos];
    size_t nameLen = rd16(h + 28), extraLen = rd16(h + 30), commentLen = rd16(h + 32);
    if (dir.size() - pos - kCentralLen < nameLen + extraLen + commentLen) {
      error = "corrupt central directory (entry " + std::to_string(i) + ")";
      return false;
    }
    ZipEntry e;
    e.flags = rd16(h + 8);
    e.method = rd16(h + 10);
    e.crc = rd32(h + 16);
    e.compSize = rd32(h + 20);
    e.size = rd32(h + 24);
    e.localOffset = rd32(h + 42);
    e.name.assign(reinterpret_cast<const char *>(h + kCentralLen), nameLen);
    if (!applyZip64Extra(h + kCentralLen + nameLen, extraLen, e, e.size == 0xFFFFFFFF, e.compSize == 0xFFFFFFFF,
                         e.localOffset == 0xFFFFFFFF, error)) {
      error = "entry '" + e.name + "': " + error;
      return false;
    }
    entries.push_back(std::move(e));
    pos += kCentralLen + nameLen + extraLen + commentLen;
  }
  return true;
}

// Finds each entry's data through its local header and rejects overlapping entries, which only
// zip bombs have (they let one small stretch of deflate data inflate once per entry).
bool locateData(InputFile &f, const CentralDirectory &cd, std::vector<ZipEntry> &entries, std::string &error) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (ZipEntry &e : entries) {
    auto fail = [&](const std::string &msg) {
      error = "entry '" + e.name + "': " + msg;
      return false;
    };
    uint8_t h[kLocalLen];
    if (e.localOffset > cd.offset || cd.offset - e.localOffset < kLocalLen || !f.read(e.localOffset, h, kLocalLen) ||
        rd32(h) != kLocalSig)
      return fail("local header not found at offset " + std::to_string(e.localOffset));
    uint64_t nameLen = rd16(h + 26), extraLen = rd16(h + 28);
    uint64_t start = e.localOffset + kLocalLen + nameLen + extraLen;
    if (start > cd.offset || e.compSize > cd.offset - start)
      return fail("data extends past the central directory (truncated or corrupt)");
    std::string localName(nameLen, '\0');
    if (!f.read(e.localOffset + kLocalLen, localName.data(), nameLen) || localName != e.name)
      return fail("name in local header differs from the central directory");
    e.dataOffset = start;
    ranges.emplace_back(e.localOffset, start + e.compSize);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      error = "entries overlap (corrupt archive or zip bomb)";
      return false;
    }
  }
  return true;
}

// Inflates a raw deflate stream into exactly `expected` bytes. The output grows with what the stream
// actually produces, so a lying size field costs no more memory than the real data.
bool inflateExactly(const uint8_t *in, uint64_t inSize, uint64_t expected, std::vector<uint8_t> &out,
                    std::string &error) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
    error = "zlib initialization failed";
    return false;
  }
  struct End {
    z_stream *zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};
  out.clear();
  out.resize(std::min<uint64_t>(expected, inSize * 4 + 65536));
  uint64_t inPos = 0, produced = 0;
  for (;;) {
    if (zs.avail_in == 0 && inPos < inSize) {
      zs.next_in = const_cast<Bytef *>(in + inPos);
      zs.avail_in = static_cast<uInt>(std::min(inSize - inPos, kZChunk));
      inPos += zs.avail_in;
    }
    if (produced == out.size() && out.size() < expected)
      out.resize(std::min<uint64_t>(expected, std::max<uint64_t>(out.size() * 2, 65536)));
    // Once the declared size is reached, a one-byte scratch buffer lets the stream end
    // (or reveals extra output).
    uint8_t scratch;
    bool full = produced == out.size();
    zs.next_out = full ? &scratch : out.data() + produced;
    zs.avail_out = full ? 1 : static_cast<uInt>(std::min<uint64_t>(out.size() - produced, kZChunk));
    uInt before = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    uint64_t got = before - zs.avail_out;
    if (full && got > 0) {
      error = "inflates to more than the declared " + std::to_string(expected) + " bytes";
      return false;
    }
    produced += got;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      if (inPos < inSize) continue;  // more input to feed
      error = "truncated deflate stream";
      return false;
    }
    if (rc != Z_OK) {
      error = std::string("corrupt deflate stream (") + (zs.msg ? zs.msg : "zlib error") + ")";
      return false;
    }
  }
  if (produced != expected) {
    error = "inflates to " + std::to_string(produced) + " bytes, not the declared " + std::to_string(expected);
    return false;
  }
  return true;
}

bool readEntry(InputFile &f, const ZipEntry &e, NpyArray &out, std::string &error) {
  if (e.flags & 1) {
    error = "encrypted entries are not supported";
    return false;
  }
  std::vector<uint8_t> bytes;
  if (e.method == 0) {
    if (e.compSize != e.size) {
      error = "stored entry has different compressed and uncompressed sizes";
      return false;
    }
    bytes.resize(e.size);  // within the file: checked by locateData
    if (!f.read(e.dataOffset, bytes.data(), e.size)) {
      error = "read failed";
      return false;
    }
  } else if (e.method == 8) {
    std::vector<uint8_t> packed(e.compSize);
    if (!f.read(e.dataOffset, packed.data(), e.compSize)) {
      error = "read failed";
      return false;
    }
    if (!inflateExactly(packed.data(), packed.size(), e.size, bytes, error)) return false;
  } else {
    error = "unsupported compression method " + std::to_string(e.method) + " (only stored and deflate)";
    return false;
  }
  uint32_t crc = crcUpdate(0, bytes.data(), bytes.size());
  if (crc != e.crc) {
    error = "CRC-32 mismatch (archive says " + hex32(e.crc) + ", data has " + hex32(crc) + ")";
    return false;
  }
  NpyHeader h;
  if (!parseNpyHeader(bytes.data(), bytes.size(), h, error)) return false;
  if (h.fortran) fortranToC(bytes, h.dataOffset, h.shape, itemSizeOf(h.descr));
  // Drop the header in place instead of copying the data: arrays can be gigabytes.
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(h.dataOffset));
  out.descr = std::move(h.descr);
  out.shape = std::move(h.shape);
  out.data = std::move(bytes);
  return true;
}

// Compressed entries are the only ones whose memory is not the file's own size: their declared
// sizes are checked against the caps (and against what deflate can encode at all) before any of
// them is inflated, so a small file cannot make the reader allocate gigabytes.
bool checkInflatedSizes(const std::vector<ZipEntry> &entries, std::string &error) {
  uint64_t total = 0;
  for (const ZipEntry &e : entries) {
    if (e.method == 0) continue;
    auto fail = [&](const std::string &msg) {
      error = "entry '" + e.name + "': " + msg;
      return false;
    };
    if (e.size > kMaxInflatedEntryBytes)
      return fail("inflates to " + std::to_string(e.size) + " bytes, more than the limit of " +
                  std::to_string(kMaxInflatedEntryBytes) + " for a compressed array (zip bomb?)");
    // Deflate cannot expand more than 1032:1; a larger declared size is corrupt or hostile.
    if (e.size / 1032 > e.compSize + 64)
      return fail("declares " + std::to_string(e.size) + " bytes from " + std::to_string(e.compSize) +
                  " compressed, more than deflate can encode (corrupt or hostile archive)");
    total += e.size;
    if (total > kMaxInflatedTotalBytes) {
      error = "compressed entries inflate to more than the limit of " + std::to_string(kMaxInflatedTotalBytes) +
              " bytes in all (zip bomb?)";
      return false;
    }
  }
  return true;
}

bool readZip(InputFile &f, Npz &out, std::string &error) {
  CentralDirectory cd;
  std::vector<ZipEntry> entries;
  if (!findCentralDirectory(f, cd, error) || !readCentralDirectory(f, cd, entries, error) ||
      !locateData(f, cd, entries, error) || !checkInflatedSizes(entries, error))
    return false;
  std::set<std::string> seen;
  for (const ZipEntry &e : entries) {
    if (!e.name.empty() && e.name.back() == '/') continue;  // directory entries carry no data
    // Like np.load, key by the name without ".npy" (and what writeNpz escaped, unescaped).
    std::string key = e.name;
    if (key.size() >= 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    key = decodeEntryName(key);
    if (!seen.insert(key).second) {
      error = "entry '" + e.name + "': duplicate array name '" + key + "'";
      return false;
    }
    NpyArray a;
    if (!readEntry(f, e, a, error)) {
      error = "entry '" + e.name + "': " + error;
      return false;
    }
    out.arrays.emplace_back(std::move(key), std::move(a));
  }
  return true;
}

// --- zip writing --------------------------------------------------------------------------------

struct WrittenEntry {
  std::string name;
  uint32_t crc;
  uint64_t size, offset;
};

// Fixed 1980-01-01 00:00 timestamps make the output reproducible.
constexpr uint16_t kDosTime = 0, kDosDate = (1 << 5) | 1;

bool isZip64(uint64_t v) { return v >= KILN_NPZ_ZIP64_LIMIT; }
uint32_t sat32(uint64_t v) { return isZip64(v) ? 0xFFFFFFFFu : static_cast<uint32_t>(v); }

uint16_t nameFlags(const std::string &name) {
  // Bit 11: the name is UTF-8 (otherwise readers assume CP437).
  for (unsigned char c : name)
    if (c >= 0x80) return 1 << 11;
  return 0;
}

std::string localHeader(const WrittenEntry &e) {
  bool z64 = isZip64(e.size);
  std::string h;
  put32(h, kLocalSig);
  put16(h, z64 ? 45 : 20);  // version needed: 4.5 for ZIP64
  put16(h, nameFlags(e.name));
  put16(h, 0);  // stored
  put16(h, kDosTime);
  put16(h, kDosDate);
  put32(h, e.crc);
  put32(h, sat32(e.size));
  put32(h, sat32(e.size));
  put16(h, e.name.size());
  put16(h, z64 ? 20 : 0);
  h += e.name;
  if (z64) {  // a local ZIP64 field always holds both sizes
    put16(h, 1);
    put16(h, 16);
    put64(h, e.size);
    put64(h, e.size);
  }
  return h;
}

std::string centralHeader(const WrittenEntry &e) {
  std::string extra;
  if (isZip64(e.size)) {
    put64(extra, e.size);
    put64(extra, e.size);
  }
  if (isZip64(e.offset)) put64(extra, e.offset);
  if (!extra.empty()) {
    std::string field;
    put16(field, 1);
    put16(field, extra.size());
    extra = field + extra;
  }
  std::string h;
  put32(h, kCentralSig);
  put16(h, (3 << 8) | 45);  // made by: Unix, 4.5
  put16(h, extra.empty() ? 20 : 45);
  put16(h, nameFlags(e.name));
  put16(h, 0);
  put16(h, kDosTime);
  put16(h, kDosDate);
  put32(h, e.crc);
  put32(h, sat32(e.size));
  put32(h, sat32(e.size));
  put16(h, e.name.size());
  put16(h, extra.size());
  put16(h, 0);               // comment
  put16(h, 0);               // disk
  put16(h, 0);               // internal attributes
  put32(h, 0100644u << 16);  // external: regular file, rw-r--r--
  put32(h, sat32(e.offset));
  return h + e.name + extra;
}

std::string endRecords(uint64_t count, uint64_t cdOffset, uint64_t cdSize) {
  bool z64 = count >= KILN_NPZ_ZIP64_COUNT_LIMIT || isZip64(cdOffset) || isZip64(cdSize);
  std::string r;
  if (z64) {
    uint64_t recOffset = cdOffset + cdSize;
    put32(r, kZip64EndSig);
    put64(r, kZip64EndLen - 12);  // size of the rest of the record
    put16(r, (3 << 8) | 45);
    put16(r, 45);
    put32(r, 0);
    put32(r, 0);
    put64(r, count);
    put64(r, count);
    put64(r, cdSize);
    put64(r, cdOffset);
    put32(r, kZip64LocatorSig);
    put32(r, 0);
    put64(r, recOffset);
    put32(r, 1);  // total disks
  }
  uint16_t count16 = count >= KILN_NPZ_ZIP64_COUNT_LIMIT ? 0xFFFF : static_cast<uint16_t>(count);
  put32(r, kEndSig);
  put16(r, 0);
  put16(r, 0);
  put16(r, count16);
  put16(r, count16);
  put32(r, sat32(cdSize));
  put32(r, sat32(cdOffset));
  put16(r, 0);  // comment
  return r;
}

}  // namespace

// --- public API ---------------------------------------------------------------------------------

int64_t NpyArray::numElements() const {
  uint64_t n = 0;
  if (!byteSize(shape, 1, n) || n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return -1;
  return static_cast<int64_t>(n);
}

size_t NpyArray::itemSize() const { return itemSizeOf(canonicalDescr(descr, nullptr)); }

std::string descrForOnnxDtype(int32_t dtype) {
  switch (dtype) {
    case 1: return "<f4";
    case 2: return "|u1";
    case 3: return "|i1";
    case 4: return "<u2";
    case 5: return "<i2";
    case 6: return "<i4";
    case 7: return "<i8";
    case 9: return "|b1";
    case 10: return "<f2";
    case 11: return "<f8";
    case 12: return "<u4";
    case 13: return "<u8";
    default: return "";
  }
}

int32_t onnxDtypeForDescr(const std::string &descr) {
  std::string canonical = canonicalDescr(descr, nullptr);
  if (canonical.empty()) return 0;
  for (int32_t t = 1; t <= 13; ++t)
    if (descrForOnnxDtype(t) == canonical) return t;
  return 0;
}

bool parseNpy(const uint8_t *data, size_t size, NpyArray &out, std::string &error) {
  NpyHeader h;
  if (!data && size) size = 0;
  if (!parseNpyHeader(data, size, h, error)) return false;
  out.descr = std::move(h.descr);
  out.shape = std::move(h.shape);
  out.data.assign(data + h.dataOffset, data + size);
  if (h.fortran) fortranToC(out.data, 0, out.shape, itemSizeOf(out.descr));
  return true;
}

std::vector<uint8_t> writeNpy(const NpyArray &a) {
  std::string header = npyHeaderBytes(a);
  if (header.empty()) return {};
  std::vector<uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

const NpyArray *Npz::find(const std::string &name) const {
  for (const auto &[n, a] : arrays)
    if (n == name) return &a;
  return nullptr;
}

bool readNpz(const std::string &path, Npz &out, std::string &error) {
  out.arrays.clear();
  try {
    InputFile f;
    if (!f.open(path, error)) {
      error = path + ": " + error;
      return false;
    }
    uint8_t magic[kNpyMagicLen];
    if (f.read(0, magic, kNpyMagicLen) && std::memcmp(magic, kNpyMagic, kNpyMagicLen) == 0) {
      std::vector<uint8_t> bytes(f.size());
      NpyArray a;
      if (!f.read(0, bytes.data(), bytes.size())) {
        error = path + ": read failed";
        return false;
      }
      if (!parseNpy(bytes.data(), bytes.size(), a, error)) {
        error = path + ": " + error;
        return false;
      }
      out.arrays.emplace_back(std::filesystem::path(path).stem().string(), std::move(a));
      return true;
    }
    if (!readZip(f, out, error)) {
      out.arrays.clear();
      error = path + ": " + error;
      return false;
    }
    return true;
  } catch (const std::bad_alloc &) {
    out.arrays.clear();
    error = path + ": out of memory";
    return false;
  } catch (const std::exception &e) {
    out.arrays.clear();
    error = path + ": " + e.what();
    return false;
  }
}

bool writeNpz(const std::string &path, const Npz &npz, std::string &error, const std::vector<std::string> &inputs) {
  try {
    std::vector<std::string> headers;
    std::set<std::string> names;
    for (const auto &[name, a] : npz.arrays) {
      if (name.empty() || encodeEntryName(name).size() + 4 > 0xFFFF) {
        error = path + ": array name '" + name + "' is empty or too long";
        return false;
      }
      if (!names.insert(name).second) {
        error = path + ": duplicate array name '" + name + "'";
        return false;
      }
      headers.push_back(npyHeaderBytes(a));
      if (headers.back().empty()) {
        std::string why;
        uint64_t need = 0;
        if (canonicalDescr(a.descr, &why).empty())
          error = path + ": array '" + name + "': " + why;
        else if (!byteSize(a.shape, a.itemSize(), need))
          error = path + ": array '" + name + "': invalid shape " + shapeString(a.shape);
        else
          error = path + ": array '" + name + "': data has " + std::to_string(a.data.size()) + " bytes, shape " +
                  shapeString(a.shape) + " needs " + std::to_string(need);
        return false;
      }
    }

    support::AtomicFile f;
    if (!f.open(path, error, inputs)) return false;
    std::vector<WrittenEntry> written;
    for (size_t i = 0; i < npz.arrays.size(); ++i) {
      const NpyArray &a = npz.arrays[i].second;
      const std::string &header = headers[i];
      WrittenEntry e{encodeEntryName(npz.arrays[i].first) + ".npy", 0, header.size() + a.data.size(), f.offset()};
      e.crc = crcUpdate(crcUpdate(0, reinterpret_cast<const uint8_t *>(header.data()), header.size()), a.data.data(),
                        a.data.size());
      f.write(localHeader(e));
      f.write(header);
      f.write(a.data.data(), a.data.size());  // straight from the array: no copy of large data
      written.push_back(std::move(e));
    }
    uint64_t cdOffset = f.offset();
    for (const WrittenEntry &e : written) f.write(centralHeader(e));
    f.write(endRecords(written.size(), cdOffset, f.offset() - cdOffset));
    return f.commit(error);
  } catch (const std::exception &e) {
    error = path + ": " + (dynamic_cast<const std::bad_alloc *>(&e) ? "out of memory" : e.what());
    return false;
  }
}

}  // namespace kiln::io
