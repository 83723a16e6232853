// The kiln engine file format (version 1), owned by the runtime. docs/engine-format.md describes
// the bytes; this header is the C++ view of it shared by the compiler (writer) and the runtime
// (reader). Nothing here depends on MLIR, protobuf or CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::rt {

constexpr char kEngineMagic[8] = {'K', 'I', 'L', 'N', 'E', 'N', 'G', '\0'};
// Version 2 added library GEMM launches (cuBLASLt), version 3 their pointer-array batches,
// version 4 dynamic shapes (profile dims and specialisations), version 5 output axes that are a
// fixed fraction or multiple of a dim, version 6 several profiles, version 7 tensor-map kernel
// arguments; the reader still accepts the earlier versions' files (a static engine: no dims, one
// specialisation; before version 6 one profile).
constexpr uint32_t kEngineFormatVersion = 7;
constexpr uint32_t kOldestEngineFormatVersion = 1;
constexpr uint32_t kHeaderSize = 64;
constexpr uint32_t kSectionEntrySize = 24;  // u32 kind, u32 reserved, u64 offset, u64 size
constexpr uint64_t kSectionAlignment = 64;

// Limits that keep a hostile file from making the reader allocate or loop unboundedly. They
// are far above anything a real model needs.
constexpr uint32_t kMaxSections = 1u << 16;
constexpr uint64_t kMaxMetadataBytes = 32ull << 20;
constexpr int kMaxMetadataDepth = 16;
constexpr uint64_t kMaxDeviceBytes = 1ull << 44;  // 16 TiB: arena, weights, one tensor
constexpr size_t kMaxRank = 32;
constexpr size_t kMaxLaunchArgs = 1024;
constexpr int64_t kMaxAxisRatio = 1 << 16;  // a profile dim axis's num and den

enum class SectionKind : uint32_t { Metadata = 1, Cubin = 2, Ptx = 3, Weights = 4 };

// 64-bit FNV-1a, the engine checksum (over every byte after the 64-byte header).
uint64_t fnv1a64(const uint8_t* data, size_t size, uint64_t hash = 0xcbf29ce484222325ull);
// Its 16 lower-case hex digits: the content hashes kiln records (model and calibration files in
// engines and calibration tables, the tuner's cache keys).
std::string fnv1a64Hex(const void* data, size_t size);

// Bytes per element of an ONNX TensorProto data type, or 0 for types an engine cannot hold
// (undefined, string, complex, 4-bit types).
size_t dtypeByteSize(int32_t onnxDtype);

struct IoTensor {
  std::string name;
  int32_t dtype = 1;  // ONNX TensorProto.DataType
  std::vector<int64_t> shape;
  bool isInput = true;
};

// One CUDA module: a cubin for exactly the target sm and/or PTX that the driver JIT-compiles on
// the same or a newer GPU. At least one must be non-empty.
struct ModuleDesc {
  std::vector<uint8_t> cubin;
  std::string ptx;  // PTX text, without a trailing NUL
};

struct KernelDesc {
  int32_t module = 0;  // index into EngineDesc::modules
  std::string entry;   // the __global__ function's (mangled) name
  std::string node;    // the graph node(s) it implements, for messages and profiles
};

// A device address: an offset into the arena, the weights or an I/O tensor.
struct BufferRef {
  enum class Space { Arena, Weights, Io };
  Space space = Space::Arena;
  uint64_t offset = 0;
  int32_t io = -1;  // index into EngineDesc::io, for Space::Io
};

// A TMA tensor map over a buffer (version 7): the runtime encodes it (cuTensorMapEncodeTiled)
// when it knows the buffer's address and passes the 128-byte CUtensorMap by value (a
// `const __grid_constant__` kernel parameter). `dims` in elements, innermost first (at most 5);
// `strides` the byte steps of dims 1.. (multiples of 16); `box` the block one copy moves (1..256
// elements a dim, its innermost row a multiple of 16 bytes and at most `swizzle` bytes when
// swizzled); `swizzle` 0, 32, 64 or 128 (bytes). The buffer's address must be 16-byte aligned;
// elements outside `dims` read as zero.
struct TensorMap {
  BufferRef buffer;
  int32_t dtype = 10;  // ONNX TensorProto.DataType: float, float16, bfloat16, (u)int8, int32, float8
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box;
  int32_t swizzle = 128;
};

struct LaunchArg {
  enum class Kind { Buffer, I32, I64, F32, TensorMap };
  Kind kind = Kind::Buffer;
  BufferRef buffer;
  TensorMap tensorMap;  // Kind::TensorMap
  int32_t i32 = 0;
  int64_t i64 = 0;
  float f32 = 0;

  static LaunchArg buf(BufferRef b) {
    LaunchArg a;
    a.kind = Kind::Buffer;
    a.buffer = b;
    return a;
  }
  static LaunchArg ofI32(int32_t v) {
    LaunchArg a;
    a.kind = Kind::I32;
    a.i32 = v;
    return a;
  }
  static LaunchArg ofI64(int64_t v) {
    LaunchArg a;
    a.kind = Kind::I64;
    a.i64 = v;
    return a;
  }
  static LaunchArg ofF32(float v) {
    LaunchArg a;
    a.kind = Kind::F32;
    a.f32 = v;
    return a;
  }
  // The buffer a Buffer or TensorMap argument points into; null for scalars.
  const BufferRef* bufferRef() const {
    return kind == Kind::Buffer ? &buffer : kind == Kind::TensorMap ? &tensorMap.buffer : nullptr;
  }
  BufferRef* bufferRef() { return const_cast<BufferRef*>(static_cast<const LaunchArg*>(this)->bufferRef()); }
  static LaunchArg ofTensorMap(TensorMap m) {
    LaunchArg a;
    a.kind = Kind::TensorMap;
    a.tensorMap = std::move(m);
    return a;
  }
};

// The bytes tensor map `m` spans from its buffer offset (its last element's end), or false for a
// rank, dtype or extent the format refuses (`why` says which).
bool tensorMapBytes(const TensorMap& m, uint64_t& bytes, std::string& why);

// A matrix product run by cuBLASLt (the gemm.tactic=cublaslt knob), in its column-major terms:
// D = act(alpha · op(A) · op(B) + beta · C + bias), D and C m x n with leading dim ldc, op(A)
// m x k, op(B) k x n; `batch` products `stride*` elements apart. Types are ONNX dtype codes
// (1 float, 10 float16, 16 bfloat16; A and B may be 17, float8e4m3fn, with op(A) = Aᵀ, op(B) = B
// and no batch); arithmetic is fp32. `bias` (m values of D's type) and C are used only when the
// epilogue / beta ask for them. fp8 products scale each D[i][j] by scaleA[i] · scaleB[j] (fp32
// vectors of m and n values: cuBLASLt's outer-vector scaling).
//
// Pointer-array batches (version 3), where no single stride walks an operand's products (BERT's
// batch-first heads [B, S, H, D]: B and H steps S·H·D and D): `batchDims` (row-major, their
// product is `batch`) with each operand's element step per dim, 0 to broadcast; C and D share
// theirs. The runtime hands cuBLASLt arrays of the products' addresses, built once per context,
// so A, B, C and D must then lie in the arena or the weights (`stride*` are unused).
struct GemmCall {
  enum Epilogue : int32_t { None = 0, Relu = 1, Bias = 2, ReluBias = 3 };
  int32_t abType = 10, cdType = 10;
  bool transA = false, transB = false;
  int64_t m = 1, n = 1, k = 1, lda = 1, ldb = 1, ldc = 1;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  float alpha = 1.f, beta = 0.f;
  int32_t epilogue = None;
  bool tf32 = false;  // fp32 A and B rounded to TF32 on tensor cores (fp32 accumulation)
  BufferRef a, b, c, d, bias;
  BufferRef scaleA, scaleB;                                               // fp8 only
  std::vector<int64_t> batchDims, batchStepsA, batchStepsB, batchStepsC;  // pointer-array batches
  bool fp8() const { return abType == 17; }
  bool pointerBatch() const { return !batchDims.empty(); }
  // Element offset of product i (0 <= i < batch) along `steps` (one of batchSteps*).
  int64_t batchOffset(const std::vector<int64_t>& steps, int64_t i) const {
    int64_t offset = 0;
    for (size_t d = batchDims.size(); d-- > 0; i /= batchDims[d]) offset += (i % batchDims[d]) * steps[d];
    return offset;
  }
};

// The bytes a product's operand spans, from its first element to one past its last: a
// column-major rows x cols matrix (leading dim ld) per product, the last product of the batch
// `stride` elements (or, for pointer-array batches, its batch steps) after the first. False when
// that does not fit in 64 bits — only a hostile engine gets there. The one computation of operand
// extents: the engine checker holds every operand inside its space by it, and code that needs
// an operand's size (scratch operands for algorithm timing) can take it from here.
enum class GemmOperand { A, B, C, D };
bool gemmOperandBytes(const GemmCall& g, GemmOperand which, uint64_t& bytes);

// One step of the launch plan: a kernel launch, a device-to-device copy, or a library GEMM.
struct Launch {
  enum class Kind { Kernel, Copy, Gemm };
  Kind kind = Kind::Kernel;
  // Kind::Kernel
  int32_t kernel = 0;  // index into EngineDesc::kernels
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;  // dynamic shared memory
  std::string node;
  std::vector<LaunchArg> args;
  // Kind::Copy
  BufferRef src, dst;
  uint64_t bytes = 0;
  // Kind::Gemm
  GemmCall gemm;
  // For profiles and reports (not needed to run): the FLOPs of the nodes the launch implements
  // (0 when it computes none, or its op's FLOPs went to the op's first launch) and the bytes of
  // the distinct tensors it reads and writes, each counted whole (an estimate of its memory
  // traffic: more than a Gather or Slice reads, less than a kernel that rereads).
  uint64_t flops = 0, trafficBytes = 0;
};

// Dynamic shapes (version 4). A dimension of the engine's profile: one value that a set of I/O
// axes share (an ONNX dim_param such as "batch", or one input's axis), inside [min, max], the
// engine tuned for `opt`. Every input axis in `axes` must be given the same value; output axes
// in `axes` take it, or (version 5) a fixed fraction or multiple of it.

// I/O tensor `io`'s axis `axis`, whose length is the dim's value · num / den: 1/1 for inputs; an
// output may differ (a recognizer's sequence of width / 8). A value that makes it no whole
// number is outside what the engine runs.
struct DimAxis {
  int32_t io = 0, axis = 0;
  int64_t num = 1, den = 1;
  bool scaled() const { return num != 1 || den != 1; }
  bool whole(int64_t value) const { return value * num % den == 0; }
  int64_t at(int64_t value) const { return value * num / den; }
};

struct ProfileDim {
  std::string name;
  // The range over all profiles (each profile's own is in EngineDesc::profiles) and the first
  // profile's opt.
  int64_t min = 1, opt = 1, max = 1;
  // A value between two specialisations' runs on the next larger one: the runtime zero-pads the
  // inputs to it and cuts the outputs back (the compiler checked on the CPU evaluator that the
  // outputs' real part does not depend on the padding). Without it only the specialisations'
  // own values are accepted (so always for a dim with a scaled axis).
  bool pad = false;
  std::vector<DimAxis> axes;
};

// The engine built for one value of every profile dim: its launches, arena and (implied) I/O
// shapes, which are the I/O table's with the dims' axes set to `values` (one per dim, in order).
// The I/O table, arenaBytes and launches of EngineDesc are the first specialisation's (the opt
// shape); `specialisations` holds the others. Kernels, modules and weights are shared.
struct Specialisation {
  std::vector<int64_t> values;
  uint64_t arenaBytes = 0;
  std::vector<Launch> launches;
};

// An optimization profile (version 6; trtexec's): a range per profile dim, values the context
// that selects it may set (min/opt/max: one per dim, in order), and the specialisations it runs
// them on (indices as EngineDesc::launchesOf takes them; one has the opt values). An engine
// without `profiles` has one: every dim's min/opt/max and every specialisation.
struct Profile {
  std::vector<int64_t> min, opt, max;
  std::vector<int32_t> specialisations;
};

// Everything an engine file holds. The compiler fills one and calls writeEngine; parseEngine
// fills one from file bytes.
struct EngineDesc {
  std::string kilnVersion;
  std::string arch = "sm_90";                      // "sm_<sm>", optionally with an arch-specific suffix ("sm_90a")
  int32_t sm = 90;                                 // major * 10 + minor
  std::string route;                               // canonical route text, "" for the default route
  std::map<std::string, std::string> environment;  // free-form build fingerprint
  std::vector<IoTensor> io;
  std::vector<ModuleDesc> modules;
  std::vector<KernelDesc> kernels;
  uint64_t arenaBytes = 0;
  std::vector<uint8_t> weights;
  std::vector<Launch> launches;
  // The runtime.cuda_graph knob: replay the launch list as a CUDA graph (captured on the first
  // enqueue and again whenever the bound addresses change) instead of launching one by one.
  bool cudaGraph = false;
  // The runtime.gemm_search knob: time cuBLASLt's best-ranked algorithms for each distinct gemm
  // launch when a context is created and keep the fastest, instead of the heuristic's first.
  bool gemmSearch = false;
  // Dynamic shapes: the profile's dims (none for a static engine) and the specialisations after
  // the first.
  std::vector<ProfileDim> dims;
  std::vector<Specialisation> specialisations;
  // Several profiles (version 6); empty: one, made by profileAt.
  std::vector<Profile> profiles;

  // Specialisation i's launches, arena and dim values (i = 0: the top-level ones; its values are
  // read off the I/O table).
  size_t numSpecialisations() const { return 1 + specialisations.size(); }
  const std::vector<Launch>& launchesOf(size_t i) const { return i ? specialisations[i - 1].launches : launches; }
  uint64_t arenaOf(size_t i) const { return i ? specialisations[i - 1].arenaBytes : arenaBytes; }
  std::vector<int64_t> valuesOf(size_t i) const;
  // I/O tensor `io`'s shape in specialisation i (the I/O table's for i = 0).
  std::vector<int64_t> shapeOf(size_t i, size_t io) const { return shapeWith(io, valuesOf(i)); }
  // Its shape with the profile dims at `values` (one per dim), e.g. every dim's min or max.
  std::vector<int64_t> shapeWith(size_t io, const std::vector<int64_t>& values) const;
  enum class Bound { Min, Opt, Max };
  std::vector<int64_t> boundValues(Bound b, size_t profile = 0) const;
  size_t numProfiles() const { return profiles.empty() ? 1 : profiles.size(); }
  Profile profileAt(size_t p) const;
};

// Dynamic shapes: the copies that move the common part of two row-major tensors of one rank
// (each dim of the result the smaller of the two), e.g. an input into its zero-padded
// specialisation or an output back out of it: one 2-D copy (Height rows of WidthInBytes, each
// Pitch apart) per index of the axes before the row axis. Offsets are in bytes.
struct RegionCopy {
  uint64_t dstOffset, srcOffset, width, height, dstPitch, srcPitch;
};
std::vector<RegionCopy> regionCopies(const std::vector<int64_t>& dstShape, const std::vector<int64_t>& srcShape,
                                     uint64_t elementBytes);

// Byte size of an I/O tensor (elements * element size); 0 for an unsupported dtype.
uint64_t ioTensorBytes(const IoTensor& t);

// The semantic checks the reader applies after decoding the metadata: every index in range,
// every buffer inside its space, sizes below the limits. Returns "" when the desc is valid,
// else the first problem found. The compiler can call it before writeEngine. The second form
// takes the weights' size separately, for a desc whose weights stayed in the file.
std::string checkEngineDesc(const EngineDesc& desc);
std::string checkEngineDesc(const EngineDesc& desc, uint64_t weightsBytes);

// Serializes `desc` into engine bytes. Deterministic: the same desc gives the same bytes. It
// does not validate (call checkEngineDesc); an invalid desc gives a file the reader rejects.
std::vector<uint8_t> writeEngine(const EngineDesc& desc);

// The container layer, shared by the writer and by tests that build unusual files: places the
// sections in order after the header and section table, each at a 64-byte boundary, and fills
// in file size and checksum.
struct SectionData {
  uint32_t kind;
  const uint8_t* data;
  size_t size;
};
std::vector<uint8_t> packSections(const std::vector<SectionData>& sections,
                                  uint32_t formatVersion = kEngineFormatVersion);

// Where a section's bytes lie in the file.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

enum class ParseStatus { Ok, Malformed, UnsupportedVersion };

// Verifies and decodes engine bytes: header, checksum, section table, metadata JSON, then
// checkEngineDesc. Never throws, never reads outside [data, data + size), and allocates at most
// a small multiple of `size`. On failure `error` says what is wrong and `out` is unspecified.
// If `weightsInFile` is non-null the weights are not copied into out.weights; their place in
// `data` is returned instead (an application keeping the file bytes uploads from there).
ParseStatus parseEngine(const uint8_t* data, size_t size, EngineDesc& out, std::string& error,
                        ByteRange* weightsInFile = nullptr);

}  // namespace kiln::rt
