// Pieces of the engine format shared by the writer and the reader: the checksum, element sizes,
// the container layout and the semantic validation of a decoded engine.
#include "runtime/format/EngineFormat.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

namespace kiln::rt {

std::string fnv1a64Hex(const void* data, size_t size) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a64(static_cast<const uint8_t*>(data), size)));
  return hex;
}

uint64_t fnv1a64(const uint8_t* data, size_t size, uint64_t hash) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

size_t dtypeByteSize(int32_t onnxDtype) {
  switch (onnxDtype) {
    case 1: return 4;   // float
    case 2: return 1;   // uint8
    case 3: return 1;   // int8
    case 4: return 2;   // uint16
    case 5: return 2;   // int16
    case 6: return 4;   // int32
    case 7: return 8;   // int64
    case 9: return 1;   // bool
    case 10: return 2;  // float16
    case 11: return 8;  // double
    case 12: return 4;  // uint32
    case 13: return 8;  // uint64
    case 16: return 2;  // bfloat16
    case 17:
    case 18:
    case 19:
    case 20: return 1;  // float8 variants
    default: return 0;  // undefined, string, complex64/128, 4-bit types
  }
}

// Element count times element size, or UINT64_MAX when it overflows (callers compare the
// result against kMaxDeviceBytes, so overflow reads as "too large").
static uint64_t tensorBytesSaturating(const IoTensor& t) {
  uint64_t bytes = dtypeByteSize(t.dtype);
  for (int64_t d : t.shape) {
    if (d < 0) return UINT64_MAX;
    if (d != 0 && bytes > UINT64_MAX / uint64_t(d)) return UINT64_MAX;
    bytes *= uint64_t(d);
  }
  return bytes;
}

uint64_t ioTensorBytes(const IoTensor& t) {
  uint64_t b = tensorBytesSaturating(t);
  return b == UINT64_MAX ? 0 : b;
}

std::vector<int64_t> EngineDesc::valuesOf(size_t i) const {
  if (i) return specialisations[i - 1].values;
  std::vector<int64_t> v;
  for (const ProfileDim& d : dims) {
    int64_t value = 0;  // (read off the first axis that has the value itself)
    for (const DimAxis& a : d.axes)
      if (!a.scaled() && a.io >= 0 && size_t(a.io) < io.size() && a.axis >= 0 &&
          size_t(a.axis) < io[size_t(a.io)].shape.size()) {
        value = io[size_t(a.io)].shape[size_t(a.axis)];
        break;
      }
    v.push_back(value);
  }
  return v;
}

std::vector<int64_t> EngineDesc::shapeWith(size_t ioIndex, const std::vector<int64_t>& values) const {
  std::vector<int64_t> shape = io[ioIndex].shape;
  for (size_t k = 0; k < dims.size() && k < values.size(); ++k)
    for (const DimAxis& a : dims[k].axes)
      if (size_t(a.io) == ioIndex && a.axis >= 0 && size_t(a.axis) < shape.size())
        shape[size_t(a.axis)] = a.at(values[k]);
  return shape;
}

Profile EngineDesc::profileAt(size_t p) const {
  if (!profiles.empty()) return profiles[p];
  Profile one;
  for (const ProfileDim& d : dims) one.min.push_back(d.min), one.opt.push_back(d.opt), one.max.push_back(d.max);
  for (size_t s = 0; s < numSpecialisations(); ++s) one.specialisations.push_back(int32_t(s));
  return one;
}

std::vector<int64_t> EngineDesc::boundValues(Bound b, size_t profile) const {
  Profile p = profileAt(profile);
  return b == Bound::Min ? p.min : b == Bound::Opt ? p.opt : p.max;
}

std::vector<RegionCopy> regionCopies(const std::vector<int64_t>& dstShape, const std::vector<int64_t>& srcShape,
                                     uint64_t elementBytes) {
  // Rows along the innermost axis where the shapes differ (the axes after it are whole), one 2-D
  // copy over the axis before it, one such copy per index of the axes before that.
  const size_t rank = dstShape.size();
  std::vector<int64_t> common(rank);
  uint64_t total = elementBytes;
  for (size_t k = 0; k < rank; ++k) common[k] = std::min(dstShape[k], srcShape[k]), total *= uint64_t(common[k]);
  if (total == 0) return {};
  size_t inner = rank;
  for (size_t k = rank; k-- > 0 && inner == rank;)
    if (dstShape[k] != srcShape[k]) inner = k;
  if (inner == rank) return {{0, 0, total, 1, total, total}};  // (the same shape)
  uint64_t block = elementBytes;
  for (size_t k = inner + 1; k < rank; ++k) block *= uint64_t(common[k]);
  const uint64_t width = block * uint64_t(common[inner]);
  const uint64_t dstPitch = block * uint64_t(dstShape[inner]), srcPitch = block * uint64_t(srcShape[inner]);
  const size_t outer = inner ? inner - 1 : 0;  // axes looped over; axis inner-1 is the copy's rows
  const uint64_t height = inner ? uint64_t(common[inner - 1]) : 1;
  std::vector<uint64_t> dstStride(outer), srcStride(outer);
  uint64_t ds = dstPitch * (inner ? uint64_t(dstShape[inner - 1]) : 1);
  uint64_t ss = srcPitch * (inner ? uint64_t(srcShape[inner - 1]) : 1);
  for (size_t k = outer; k-- > 0;) {
    dstStride[k] = ds, srcStride[k] = ss;
    ds *= uint64_t(dstShape[k]), ss *= uint64_t(srcShape[k]);
  }
  std::vector<RegionCopy> copies;
  std::vector<int64_t> idx(outer, 0);
  for (;;) {
    RegionCopy c{0, 0, width, height, dstPitch, srcPitch};
    for (size_t k = 0; k < outer; ++k)
      c.dstOffset += uint64_t(idx[k]) * dstStride[k], c.srcOffset += uint64_t(idx[k]) * srcStride[k];
    copies.push_back(c);
    size_t k = outer;
    while (k > 0 && ++idx[k - 1] == common[k - 1]) idx[--k] = 0;
    if (k == 0) break;
  }
  return copies;
}

static void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
static void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
static uint64_t alignUp(uint64_t v) { return (v + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment; }

std::vector<uint8_t> packSections(const std::vector<SectionData>& sections, uint32_t formatVersion) {
  const uint64_t tableEnd = kHeaderSize + uint64_t(sections.size()) * kSectionEntrySize;
  std::vector<uint64_t> offsets;
  uint64_t cursor = alignUp(tableEnd);
  for (const SectionData& s : sections) {
    offsets.push_back(cursor);
    cursor = alignUp(cursor + s.size);
  }
  const uint64_t fileSize = cursor;

  std::vector<uint8_t> file(fileSize, 0);  // zero fill = deterministic padding
  uint8_t* h = file.data();
  std::memcpy(h, kEngineMagic, 8);
  putU32(h + 8, formatVersion);
  putU32(h + 12, kHeaderSize);
  putU64(h + 16, fileSize);
  putU32(h + 32, uint32_t(sections.size()));
  putU64(h + 40, kHeaderSize);  // the section table follows the header
  for (size_t i = 0; i < sections.size(); ++i) {
    uint8_t* e = h + kHeaderSize + i * kSectionEntrySize;
    putU32(e, sections[i].kind);
    putU64(e + 8, offsets[i]);
    putU64(e + 16, sections[i].size);
    if (sections[i].size) std::memcpy(h + offsets[i], sections[i].data, sections[i].size);
  }
  putU64(h + 24, fnv1a64(h + kHeaderSize, fileSize - kHeaderSize));
  return file;
}

bool tensorMapBytes(const TensorMap& m, uint64_t& bytes, std::string& why) {
  const size_t rank = m.dims.size(), elem = dtypeByteSize(m.dtype);
  if (rank < 1 || rank > 5) return why = "rank " + std::to_string(rank) + " (TMA takes 1 to 5)", false;
  if (m.strides.size() != rank - 1 || m.box.size() != rank)
    return why = "strides or box do not match the rank " + std::to_string(rank), false;
  if (elem == 0 || elem == 8 || m.dtype == 9 || m.dtype == 4 || m.dtype == 5)
    return why = "element type " + std::to_string(m.dtype) + " has no TMA form", false;
  if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
    return why = "swizzle " + std::to_string(m.swizzle) + " (0, 32, 64 or 128 bytes)", false;
  if (m.box[0] * elem % 16 || (m.swizzle && m.box[0] * elem > uint64_t(m.swizzle)))
    return why = "a box row of " + std::to_string(m.box[0] * elem) + " bytes (a multiple of 16, within the swizzle)",
           false;
  if (m.dims[0] * elem % 16 && rank > 1) return why = "rows of a size other than a multiple of 16 bytes", false;
  uint64_t end = 0;
  if (__builtin_mul_overflow(m.dims[0], uint64_t(elem), &end)) return why = "an extent beyond 64 bits", false;
  for (size_t d = 0; d < rank; ++d) {
    if (m.dims[d] < 1 || m.dims[d] > (1ull << 32)) return why = "dim " + std::to_string(d) + " outside 1..2^32", false;
    if (m.box[d] < 1 || m.box[d] > 256) return why = "box dim " + std::to_string(d) + " outside 1..256", false;
    if (d == 0) continue;
    uint64_t stride = m.strides[d - 1], term;
    if (stride % 16 || stride >= (1ull << 40)) return why = "a stride that is no multiple of 16 below 2^40", false;
    if (__builtin_mul_overflow(m.dims[d] - 1, stride, &term) || __builtin_add_overflow(end, term, &end))
      return why = "an extent beyond 64 bits", false;
  }
  bytes = end;
  return true;
}

bool gemmOperandBytes(const GemmCall& g, GemmOperand which, uint64_t& bytes) {
  int64_t rows, cols, ld, stride;
  const std::vector<int64_t>* steps;
  int32_t dtype;
  switch (which) {
    case GemmOperand::A:
      rows = g.transA ? g.k : g.m, cols = g.transA ? g.m : g.k, ld = g.lda, stride = g.strideA;
      steps = &g.batchStepsA, dtype = g.abType;
      break;
    case GemmOperand::B:
      rows = g.transB ? g.n : g.k, cols = g.transB ? g.k : g.n, ld = g.ldb, stride = g.strideB;
      steps = &g.batchStepsB, dtype = g.abType;
      break;
    default:  // C and D share shape, leading dim and batch steps
      rows = g.m, cols = g.n, ld = g.ldc, stride = g.strideC, steps = &g.batchStepsC, dtype = g.cdType;
      break;
  }
  if (rows < 1 || cols < 1 || ld < 1 || g.batch < 1 || stride < 0) return false;
  // Elements from the first product's start to the last's (steps are >= 0, so the last product
  // lies farthest).
  uint64_t last = 0;
  if (g.pointerBatch()) {
    if (steps->size() != g.batchDims.size()) return false;
    int64_t i = g.batch - 1;
    for (size_t d = g.batchDims.size(); d-- > 0;) {
      if (g.batchDims[d] < 1 || (*steps)[d] < 0) return false;
      uint64_t term;
      if (__builtin_mul_overflow(uint64_t(i % g.batchDims[d]), uint64_t((*steps)[d]), &term) ||
          __builtin_add_overflow(last, term, &last))
        return false;
      i /= g.batchDims[d];
    }
  } else if (__builtin_mul_overflow(uint64_t(g.batch - 1), uint64_t(stride), &last)) {
    return false;
  }
  uint64_t span, elems;
  return !__builtin_mul_overflow(uint64_t(cols - 1), uint64_t(ld), &span) &&
         !__builtin_add_overflow(last, span, &elems) && !__builtin_add_overflow(elems, uint64_t(rows), &elems) &&
         !__builtin_mul_overflow(elems, uint64_t(dtypeByteSize(dtype)), &bytes);
}

// ---- Semantic validation -------------------------------------------------------------------

namespace {

const char* spaceName(BufferRef::Space s) {
  switch (s) {
    case BufferRef::Space::Arena: return "arena";
    case BufferRef::Space::Weights: return "weights";
    case BufferRef::Space::Io: return "io";
  }
  return "?";
}

// A name from the metadata as messages quote it: at most 80 bytes. Messages are built for every
// launch and argument checked, so quoting a name whole made a file with one 16 MB node name and
// a thousand arguments copy gigabytes (kiln_engine_load seemed to hang).
std::string clip(const std::string& name) { return name.size() <= 80 ? name : name.substr(0, 77) + "..."; }

class Checker {
 public:
  Checker(const EngineDesc& d, uint64_t weightsBytes) : d_(d), weightsBytes_(weightsBytes), io_(d.io) {}

  std::string run() {
    checkTarget();
    checkIo();
    checkModulesAndKernels();
    if (weightsBytes_ > kMaxDeviceBytes)
      fail("weights of " + std::to_string(weightsBytes_) + " bytes are larger than the limit");
    checkDims();
    // Each specialisation's launches against its own I/O shapes and arena.
    for (size_t s = 0; s < d_.numSpecialisations() && error_.empty(); ++s) {
      spec_ = s;
      arena_ = d_.arenaOf(s);
      for (size_t i = 0; i < io_.size(); ++i) io_[i].shape = d_.shapeOf(s, i);
      std::string where = s ? "specialisation " + std::to_string(s) + ": " : "";
      if (arena_ > kMaxDeviceBytes)
        fail(where + "arena of " + std::to_string(arena_) + " bytes is larger than the limit");
      for (size_t i = 0; i < io_.size() && error_.empty(); ++i)
        if (tensorBytesSaturating(io_[i]) > kMaxDeviceBytes)
          fail(where + "io[" + std::to_string(i) + "]: tensor size is absurd");
      const std::vector<Launch>& launches = d_.launchesOf(s);
      for (size_t i = 0; i < launches.size() && error_.empty(); ++i) checkLaunch(launches[i], i);
    }
    return error_;
  }

 private:
  void fail(const std::string& msg) {
    if (error_.empty()) error_ = msg;
  }

  void checkTarget() {
    // "sm_<sm>" with an optional arch-specific suffix ('a': sm_90a, 'f': family).
    const std::string& a = d_.arch;
    std::string digits = a.size() > 3 && a.compare(0, 3, "sm_") == 0 ? a.substr(3) : "";
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();
    bool ok = !digits.empty() && digits.size() <= 4 && digits.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) return fail("target arch '" + a + "' is not of the form sm_<number>");
    if (std::stoi(digits) != d_.sm)
      return fail("target arch '" + a + "' disagrees with target sm " + std::to_string(d_.sm));
    if (d_.sm < 10 || d_.sm > 9999) fail("target sm " + std::to_string(d_.sm) + " is not a compute capability");
  }

  void checkIo() {
    if (d_.io.size() > (1u << 16)) return fail("too many I/O tensors (" + std::to_string(d_.io.size()) + ")");
    std::set<std::string> names;
    for (size_t i = 0; i < d_.io.size() && error_.empty(); ++i) {
      const IoTensor& t = d_.io[i];
      std::string what = "io[" + std::to_string(i) + "] '" + clip(t.name) + "'";
      if (t.name.empty()) return fail("io[" + std::to_string(i) + "] has an empty name");
      if (t.name.find('\0') != std::string::npos) return fail(what + ": name contains a NUL byte");
      if (!names.insert(t.name).second) return fail(what + ": duplicate I/O tensor name");
      if (dtypeByteSize(t.dtype) == 0) return fail(what + ": unsupported dtype " + std::to_string(t.dtype));
      if (t.shape.size() > kMaxRank)
        return fail(what + ": rank " + std::to_string(t.shape.size()) + " exceeds " + std::to_string(kMaxRank));
      for (int64_t dim : t.shape)
        if (dim < 0) return fail(what + ": negative dimension " + std::to_string(dim));
      if (tensorBytesSaturating(t) > kMaxDeviceBytes) return fail(what + ": tensor size is absurd");
    }
  }

  // The profile: dims with sane ranges and axes, every input axis of a dim agreeing with it in
  // the I/O table, each specialisation a distinct tuple of values inside the ranges.
  void checkDims() {
    if (d_.dims.size() > kMaxRank) return fail("too many profile dims");
    if (d_.specialisations.size() > (1u << 12)) return fail("too many specialisations");
    if (d_.dims.empty() && !d_.specialisations.empty()) return fail("specialisations without profile dims");
    std::set<std::pair<int32_t, int32_t>> axesSeen;
    for (size_t k = 0; k < d_.dims.size(); ++k) {
      const ProfileDim& p = d_.dims[k];
      std::string what = "profile dim " + std::to_string(k) + " '" + clip(p.name) + "'";
      if (p.min < 1 || p.min > p.opt || p.opt > p.max || p.max > int64_t(kMaxDeviceBytes))
        return fail(what + ": range " + std::to_string(p.min) + ".." + std::to_string(p.max) + " (opt " +
                    std::to_string(p.opt) + ") is not min <= opt <= max with min >= 1");
      if (p.axes.empty() || p.axes.size() > kMaxLaunchArgs) return fail(what + ": no axes or too many");
      bool input = false;
      for (const DimAxis& a : p.axes) {
        std::string at = "(" + std::to_string(a.io) + ", " + std::to_string(a.axis) + ")";
        if (a.io < 0 || size_t(a.io) >= d_.io.size() || a.axis < 0 ||
            size_t(a.axis) >= d_.io[size_t(a.io)].shape.size())
          return fail(what + ": axis " + at + " is not an I/O tensor's");
        if (!axesSeen.insert({a.io, a.axis}).second) return fail(what + ": axis " + at + " belongs to two dims");
        if (a.num < 1 || a.den < 1 || a.num > kMaxAxisRatio || a.den > kMaxAxisRatio)
          return fail(what + ": axis " + at + " has the ratio " + std::to_string(a.num) + "/" + std::to_string(a.den));
        if (a.scaled() && (d_.io[size_t(a.io)].isInput || p.pad))
          return fail(what + ": axis " + at + " is scaled, which only an output of a dim without padding may be");
        input = input || (d_.io[size_t(a.io)].isInput && !a.scaled());
      }
      if (!input) return fail(what + ": no input has it");
    }
    std::set<std::vector<int64_t>> seen;
    for (size_t s = 0; s < d_.numSpecialisations(); ++s) {
      std::vector<int64_t> v = d_.valuesOf(s);
      std::string what = "specialisation " + std::to_string(s);
      if (v.size() != d_.dims.size())
        return fail(what + ": " + std::to_string(v.size()) + " values for " + std::to_string(d_.dims.size()) +
                    " profile dims");
      for (size_t k = 0; k < v.size(); ++k) {
        if (v[k] < d_.dims[k].min || v[k] > d_.dims[k].max)
          return fail(what + ": dim '" + clip(d_.dims[k].name) + "' = " + std::to_string(v[k]) +
                      " is outside its range");
        for (const DimAxis& a : d_.dims[k].axes) {
          if (!a.whole(v[k]))
            return fail(what + ": dim '" + clip(d_.dims[k].name) + "' = " + std::to_string(v[k]) + " makes io[" +
                        std::to_string(a.io) + "] axis " + std::to_string(a.axis) + " no whole number");
          if (s == 0 && d_.io[size_t(a.io)].shape[size_t(a.axis)] != a.at(v[k]))
            return fail("io[" + std::to_string(a.io) + "] axis " + std::to_string(a.axis) + " disagrees with dim '" +
                        clip(d_.dims[k].name) + "'");
        }
      }
      if (!seen.insert(v).second) return fail(what + " repeats an earlier one's values");
    }
    checkProfiles();
  }

  // Several profiles: each a range inside the dims' with its opt among its specialisations; the
  // first one's opt is the top level's; every specialisation belongs to one.
  void checkProfiles() {
    if (d_.profiles.empty()) return;
    if (d_.dims.empty()) return fail("profiles without profile dims");
    if (d_.profiles.size() > (1u << 8)) return fail("too many profiles");
    std::vector<bool> used(d_.numSpecialisations(), false);
    for (size_t p = 0; p < d_.profiles.size(); ++p) {
      const Profile& pr = d_.profiles[p];
      std::string what = "profile " + std::to_string(p);
      if (pr.min.size() != d_.dims.size() || pr.opt.size() != d_.dims.size() || pr.max.size() != d_.dims.size())
        return fail(what + ": not one min, opt and max per profile dim");
      for (size_t k = 0; k < d_.dims.size(); ++k)
        if (pr.min[k] < d_.dims[k].min || pr.min[k] > pr.opt[k] || pr.opt[k] > pr.max[k] || pr.max[k] > d_.dims[k].max)
          return fail(what + ": dim '" + clip(d_.dims[k].name) + "' range " + std::to_string(pr.min[k]) + ".." +
                      std::to_string(pr.max[k]) + " (opt " + std::to_string(pr.opt[k]) +
                      ") is not min <= opt <= max inside the dim's");
      if (pr.specialisations.empty() || pr.specialisations.size() > d_.numSpecialisations())
        return fail(what + ": no specialisations or too many");
      bool hasOpt = false;
      std::set<int32_t> seen;
      for (int32_t s : pr.specialisations) {
        if (s < 0 || size_t(s) >= d_.numSpecialisations() || !seen.insert(s).second)
          return fail(what + ": specialisation " + std::to_string(s) + " is not one, or repeats");
        std::vector<int64_t> v = d_.valuesOf(size_t(s));
        for (size_t k = 0; k < v.size(); ++k)
          if (v[k] < pr.min[k] || v[k] > pr.max[k])
            return fail(what + ": specialisation " + std::to_string(s) + " is outside its range");
        hasOpt = hasOpt || v == pr.opt;
        used[size_t(s)] = true;
      }
      if (!hasOpt) return fail(what + ": no specialisation has its opt values");
    }
    if (d_.profiles[0].opt != d_.valuesOf(0)) return fail("profile 0's opt values are not the first specialisation's");
    for (size_t s = 0; s < used.size(); ++s)
      if (!used[s]) return fail("specialisation " + std::to_string(s) + " belongs to no profile");
  }

  void checkModulesAndKernels() {
    if (d_.modules.size() > kMaxSections) return fail("too many modules");
    for (size_t i = 0; i < d_.modules.size(); ++i) {
      const ModuleDesc& m = d_.modules[i];
      if (m.cubin.empty() && m.ptx.empty()) return fail("module " + std::to_string(i) + " has neither cubin nor PTX");
      if (m.ptx.find('\0') != std::string::npos)
        return fail("module " + std::to_string(i) + ": PTX text contains a NUL byte");
    }
    for (size_t i = 0; i < d_.kernels.size(); ++i) {
      const KernelDesc& k = d_.kernels[i];
      std::string what = "kernel " + std::to_string(i);
      if (k.module < 0 || size_t(k.module) >= d_.modules.size())
        return fail(what + " ('" + clip(k.entry) + "'): module index " + std::to_string(k.module) + " out of range (" +
                    std::to_string(d_.modules.size()) + " modules)");
      if (k.entry.empty() || k.entry.find('\0') != std::string::npos) return fail(what + ": bad entry name");
    }
  }

  uint64_t spaceBytes(const BufferRef& b) const {
    switch (b.space) {
      case BufferRef::Space::Arena: return arena_;
      case BufferRef::Space::Weights: return weightsBytes_;
      case BufferRef::Space::Io: return ioTensorBytes(io_[size_t(b.io)]);
    }
    return 0;
  }

  std::string spaceText(const BufferRef& b) const {
    if (b.space != BufferRef::Space::Io) return std::string("the ") + spaceName(b.space);
    return "I/O tensor " + std::to_string(b.io) + " '" + clip(d_.io[size_t(b.io)].name) + "'";
  }

  // A buffer must name an existing space and [offset, offset + extent) must lie inside it. For a
  // kernel argument the extent is unknown (0): the offset must then point into the space (or be
  // 0 for an empty one).
  bool checkBuffer(const BufferRef& b, uint64_t extent, const std::string& what) {
    if (b.space == BufferRef::Space::Io && (b.io < 0 || size_t(b.io) >= d_.io.size())) {
      fail(what + ": io index " + std::to_string(b.io) + " out of range (" + std::to_string(d_.io.size()) +
           " I/O tensors)");
      return false;
    }
    uint64_t size = spaceBytes(b);
    bool inside = extent == 0 ? (b.offset < size || (b.offset == 0 && size == 0))
                              : (b.offset <= size && extent <= size - b.offset);
    if (!inside) {
      fail(what + ": " + spaceName(b.space) + " range [" + std::to_string(b.offset) + ", +" + std::to_string(extent) +
           ") is outside " + spaceText(b) + " (" + std::to_string(size) + " bytes)");
      return false;
    }
    return true;
  }

  void checkLaunch(const Launch& l, size_t i) {
    std::string what =
        (spec_ ? "specialisation " + std::to_string(spec_) + " " : std::string()) + "launch " + std::to_string(i);
    if (!l.node.empty()) what += " (node '" + clip(l.node) + "')";
    if (l.kind == Launch::Kind::Copy) {
      if (l.bytes == 0) return fail(what + ": copy of 0 bytes");
      if (!checkBuffer(l.src, l.bytes, what + ": copy source") ||
          !checkBuffer(l.dst, l.bytes, what + ": copy destination"))
        return;
      if (l.dst.space == BufferRef::Space::Weights) return fail(what + ": copy into the weights, which are read-only");
      if (l.dst.space == BufferRef::Space::Io && d_.io[size_t(l.dst.io)].isInput)
        return fail(what + ": copy into input '" + clip(d_.io[size_t(l.dst.io)].name) + "', which is read-only");
      bool sameSpace = l.src.space == l.dst.space && (l.src.space != BufferRef::Space::Io || l.src.io == l.dst.io);
      if (sameSpace && l.src.offset < l.dst.offset + l.bytes && l.dst.offset < l.src.offset + l.bytes)
        return fail(what + ": copy source and destination overlap");
      return;
    }
    if (l.kind == Launch::Kind::Gemm) return checkGemm(l.gemm, what + ": gemm");
    if (l.kernel < 0 || size_t(l.kernel) >= d_.kernels.size())
      return fail(what + ": kernel index " + std::to_string(l.kernel) + " out of range (" +
                  std::to_string(d_.kernels.size()) + " kernels)");
    what += " of kernel '" + clip(d_.kernels[size_t(l.kernel)].entry) + "'";
    // CUDA's limits: grid x < 2^31, y and z < 2^16; at most 1024 threads a block.
    if (l.grid[0] == 0 || l.grid[1] == 0 || l.grid[2] == 0 || l.grid[0] > 0x7fffffffu || l.grid[1] > 65535 ||
        l.grid[2] > 65535)
      return fail(what + ": grid " + dims(l.grid) + " is outside CUDA's limits");
    uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
    if (threads == 0 || threads > 1024 || l.block[2] > 64)
      return fail(what + ": block " + dims(l.block) + " is outside CUDA's limits");
    if (l.sharedBytes > (1u << 20))
      return fail(what + ": " + std::to_string(l.sharedBytes) + " bytes of shared memory is absurd");
    if (l.args.size() > kMaxLaunchArgs) return fail(what + ": too many arguments");
    for (size_t a = 0; a < l.args.size(); ++a) {
      const LaunchArg& arg = l.args[a];
      std::string where = what + ": arg " + std::to_string(a);
      if (arg.kind == LaunchArg::Kind::Buffer && !checkBuffer(arg.buffer, 0, where)) return;
      if (arg.kind != LaunchArg::Kind::TensorMap) continue;
      uint64_t bytes = 0;
      std::string why;
      if (!tensorMapBytes(arg.tensorMap, bytes, why)) return fail(where + ": tensor map with " + why);
      if (arg.tensorMap.buffer.offset % 16) return fail(where + ": tensor map at an offset that is no multiple of 16");
      if (!checkBuffer(arg.tensorMap.buffer, bytes, where + ": tensor map")) return;
    }
  }

  // An operand: its leading dim covers its rows, and every product of the batch lies inside
  // its buffer (gemmOperandBytes, in checked 64-bit arithmetic).
  bool checkOperand(const GemmCall& g, GemmOperand which, const BufferRef& b, const std::string& what) {
    int64_t rows = which == GemmOperand::A   ? (g.transA ? g.k : g.m)
                   : which == GemmOperand::B ? (g.transB ? g.n : g.k)
                                             : g.m;
    int64_t ld = which == GemmOperand::A ? g.lda : which == GemmOperand::B ? g.ldb : g.ldc;
    if (ld < rows) {
      fail(what + ": leading dimension " + std::to_string(ld) + " is below its " + std::to_string(rows) + " rows");
      return false;
    }
    uint64_t bytes = 0;
    if (!gemmOperandBytes(g, which, bytes)) {
      fail(what + ": extent of " + std::to_string(g.batch) + " products overflows 64 bits");
      return false;
    }
    return checkBuffer(b, bytes, what);
  }

  // Pointer-array batches: one step per dim and operand, the dims' product the batch; the
  // products' addresses are built when a context is created, so no operand may be an I/O tensor.
  bool checkPointerBatch(const GemmCall& g, const std::string& what) {
    size_t n = g.batchDims.size();
    if (g.batchStepsA.size() != n || g.batchStepsB.size() != n || g.batchStepsC.size() != n)
      return fail(what + ": batch_dims and batch_steps_a/b/c differ in length"), false;
    uint64_t count = 1;
    for (int64_t d : g.batchDims) count = std::min<uint64_t>(count * uint64_t(d), uint64_t(1) << 40);
    if (count != uint64_t(g.batch))
      return fail(what + ": batch_dims make " + std::to_string(count) + " products, batch says " +
                  std::to_string(g.batch)),
             false;
    for (auto [ref, name] :
         {std::pair<const BufferRef*, const char*>{&g.a, "A"}, {&g.b, "B"}, {&g.d, "D"}, {&g.c, "C"}})
      if (ref->space == BufferRef::Space::Io && (ref != &g.c || g.beta != 0.f))
        return fail(what + " " + name + ": an I/O tensor read through pointer-array batches"), false;
    return true;
  }

  void checkGemm(const GemmCall& g, const std::string& what) {
    auto supported = [](int32_t t) { return t == 1 || t == 10 || t == 16; };
    if (!(supported(g.abType) || g.fp8()) || !supported(g.cdType))
      return fail(what + ": element types " + std::to_string(g.abType) + "/" + std::to_string(g.cdType) +
                  " (float, float16 and bfloat16 are supported, and float8e4m3fn A and B)");
    if (g.fp8() && (!g.transA || g.transB || g.batch != 1))
      return fail(what + ": fp8 products take op(A) = Aᵀ, op(B) = B and no batch");
    if (g.tf32 && g.abType != 1) return fail(what + ": tf32 is for float A and B");
    if (g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1) return fail(what + ": empty product");
    if (g.pointerBatch() && !checkPointerBatch(g, what)) return;
    if (!checkOperand(g, GemmOperand::A, g.a, what + " A") || !checkOperand(g, GemmOperand::B, g.b, what + " B") ||
        !checkOperand(g, GemmOperand::D, g.d, what + " D"))
      return;
    if (g.beta != 0.f && !checkOperand(g, GemmOperand::C, g.c, what + " C")) return;
    if ((g.epilogue & GemmCall::Bias) && !checkBuffer(g.bias, uint64_t(g.m) * dtypeByteSize(g.cdType), what + " bias"))
      return;
    if (g.fp8() && (!checkBuffer(g.scaleA, uint64_t(g.m) * 4, what + " scale_a") ||
                    !checkBuffer(g.scaleB, uint64_t(g.n) * 4, what + " scale_b")))
      return;
    if (g.d.space == BufferRef::Space::Weights) return fail(what + ": D in the weights, which are read-only");
    if (g.d.space == BufferRef::Space::Io && d_.io[size_t(g.d.io)].isInput)
      return fail(what + ": D in input '" + clip(d_.io[size_t(g.d.io)].name) + "', which is read-only");
  }

  static std::string dims(const uint32_t v[3]) {
    return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "]";
  }

  const EngineDesc& d_;
  uint64_t weightsBytes_;
  std::vector<IoTensor> io_;  // the I/O table with the shapes of specialisation spec_
  uint64_t arena_ = 0;        // its arena
  size_t spec_ = 0;
  std::string error_;
};

}  // namespace

std::string checkEngineDesc(const EngineDesc& desc, uint64_t weightsBytes) { return Checker(desc, weightsBytes).run(); }

std::string checkEngineDesc(const EngineDesc& desc) { return checkEngineDesc(desc, desc.weights.size()); }

}  // namespace kiln::rt
