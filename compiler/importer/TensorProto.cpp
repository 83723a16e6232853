#include "compiler/importer/TensorProto.h"

#include "compiler/support/Files.h"
#include "onnx/onnx-ml.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kiln {

// Protobuf cannot parse messages of 2 GiB or more (larger weights go in external data).
constexpr uint64_t kMaxModelBytes = (uint64_t(1) << 31) - 1;
// Deepest message nesting a model may have (subgraphs of subgraphs...), text or binary.
constexpr int kMaxMessageDepth = 100;

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static bool supportedDType(int t) {
  switch (static_cast<ops::DType>(t)) {
    case ops::DType::F32:
    case ops::DType::F64:
    case ops::DType::F16:
    case ops::DType::BF16:
    case ops::DType::I8:
    case ops::DType::I16:
    case ops::DType::I32:
    case ops::DType::I64:
    case ops::DType::U8:
    case ops::DType::U16:
    case ops::DType::U32:
    case ops::DType::U64:
    case ops::DType::Bool:
    case ops::DType::F8E4M3: return true;
    default: return false;
  }
}

template <typename Src, typename Dst> static void packAs(const Src &values, std::vector<char> &bytes) {
  bytes.resize(values.size() * sizeof(Dst));
  for (int k = 0; k < values.size(); ++k) {
    Dst v = static_cast<Dst>(values.Get(k));
    std::memcpy(bytes.data() + k * sizeof(Dst), &v, sizeof(Dst));
  }
}

namespace {

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd &) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A decimal int64 field of external_data, or false.
bool parseInt64(const std::string &text, int64_t &out) {
  if (text.empty() || text.size() > 19) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || v > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// Opens `location` beneath the folder `dirFd`: symbolic links are followed only while they stay
// beneath it (openat2 RESOLVE_BENEATH; on kernels without openat2, no symbolic link at all).
// Non-blocking, so a FIFO cannot hang the importer. -1 with errno.
int openBeneath(int dirFd, const std::string &location) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dirFd, location.c_str(), &how, sizeof how);
  if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return int(fd);  // (EPERM: a seccomp filter)
#endif
  // One component at a time, none of them a symbolic link.
  int cur = dirFd;
  Fd owned;
  size_t pos = 0;
  for (;;) {
    size_t slash = location.find('/', pos);
    std::string part = location.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (slash == std::string::npos)
      return ::openat(cur, part.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    int next = ::openat(cur, part.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW);
    if (next < 0) return -1;
    if (owned.fd >= 0) ::close(owned.fd);
    owned.fd = cur = next;
  }
}

std::string fileKindOf(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
                       : "not a regular file";
}

std::string readExternal(const onnx::TensorProto &p, const std::string &baseDir, bool allowOutside,
                         std::vector<char> &bytes, int64_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if ((kv.key() == "offset" || kv.key() == "length") &&
               !parseInt64(kv.value(), kv.key() == "offset" ? offset : length)) {
      return "external data field '" + kv.key() + "' is not a non-negative integer: '" + kv.value() + "'";
    }
  }
  if (location.empty()) return "external data has no location";
  if (location.find('\0') != std::string::npos) return "external data location contains a NUL byte";
  const std::string where = "external data '" + location + "'";
  int fd;
  if (allowOutside) {
    std::string path = location[0] == '/' || baseDir.empty() ? location : baseDir + "/" + location;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } else {
    // Relative, without '..', and (below) resolved beneath the model's folder.
    bool dotdot = false;
    for (size_t pos = 0; pos <= location.size();) {
      size_t slash = location.find('/', pos);
      if (slash == std::string::npos) slash = location.size();
      dotdot |= location.compare(pos, slash - pos, "..") == 0 && slash - pos == 2;
      pos = slash + 1;
    }
    if (location[0] == '/' || dotdot)
      return where + ": the location must be a relative path inside the model's folder, without '..' "
                     "(--allow-external-outside reads it anyway)";
    Fd dir(::open(baseDir.empty() ? "." : baseDir.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY));
    if (dir.fd < 0) return "cannot open the model's folder '" + baseDir + "': " + std::strerror(errno);
    fd = openBeneath(dir.fd, location);
    if (fd < 0 && (errno == EXDEV || errno == ELOOP))
      return where + ": a symbolic link on the way leads out of the model's folder "
                     "(--allow-external-outside follows it)";
  }
  if (fd < 0)
    return "cannot open external data file '" + location + "' (in '" + baseDir + "'): " + std::strerror(errno);
  Fd file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "cannot read " + where + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return where + " is " + fileKindOf(st.st_mode) + ", not a regular file";
  const int64_t fileSize = st.st_size;
  if (offset > fileSize)
    return where + " has " + std::to_string(fileSize) + " bytes, less than the offset " + std::to_string(offset);
  if (length < 0) length = fileSize - offset;
  if (length != expected)
    return where + ": length " + std::to_string(length) + " does not match the " + std::to_string(expected) +
           " bytes the tensor's type needs";
  if (length > fileSize - offset)  // (offset <= fileSize: no overflow)
    return where + " has " + std::to_string(fileSize) + " bytes, the tensor needs bytes " + std::to_string(offset) +
           ".." + std::to_string(offset) + "+" + std::to_string(length);
  bytes.resize(size_t(length));
  for (int64_t done = 0; done < length;) {
    ssize_t r = ::pread(fd, bytes.data() + done, size_t(length - done), off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return "cannot read " + where + ": " + (r < 0 ? std::strerror(errno) : "the file shrank");
    done += r;
  }
  return "";
}

}  // namespace

std::string readTensorProto(const onnx::TensorProto &p, const std::string &baseDir, RawTensor &out,
                            bool allowExternalOutside) {
  if (!supportedDType(p.data_type()))
    return "unsupported tensor data type " + (onnx::TensorProto_DataType_IsValid(p.data_type())
                                                  ? onnx::TensorProto_DataType_Name(p.data_type())
                                                  : std::to_string(p.data_type()));
  out.dtype = static_cast<ops::DType>(p.data_type());
  out.shape.assign(p.dims().begin(), p.dims().end());
  int64_t n = 1;
  for (int64_t d : out.shape) {
    if (d < 0) return "tensor has a negative dimension";
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 16 / d) return "tensor is too large";
    n *= d;
  }
  int64_t expected = n * ops::byteSize(out.dtype);
  out.bytes.clear();
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    if (auto err = readExternal(p, baseDir, allowExternalOutside, out.bytes, expected); !err.empty()) return err;
  } else if (p.has_raw_data()) {
    out.bytes.assign(p.raw_data().begin(), p.raw_data().end());
  } else {
    using DT = ops::DType;
    switch (out.dtype) {
      case DT::F32: packAs<decltype(p.float_data()), float>(p.float_data(), out.bytes); break;
      case DT::F64: packAs<decltype(p.double_data()), double>(p.double_data(), out.bytes); break;
      case DT::I64: packAs<decltype(p.int64_data()), int64_t>(p.int64_data(), out.bytes); break;
      case DT::U32: packAs<decltype(p.uint64_data()), uint32_t>(p.uint64_data(), out.bytes); break;
      case DT::U64: packAs<decltype(p.uint64_data()), uint64_t>(p.uint64_data(), out.bytes); break;
      case DT::I32: packAs<decltype(p.int32_data()), int32_t>(p.int32_data(), out.bytes); break;
      case DT::I16: packAs<decltype(p.int32_data()), int16_t>(p.int32_data(), out.bytes); break;
      // float16/bfloat16 elements are their bit patterns in int32_data.
      case DT::U16:
      case DT::F16:
      case DT::BF16: packAs<decltype(p.int32_data()), uint16_t>(p.int32_data(), out.bytes); break;
      case DT::I8: packAs<decltype(p.int32_data()), int8_t>(p.int32_data(), out.bytes); break;
      case DT::U8:
      case DT::Bool:
      case DT::F8E4M3:  // (float8: bit patterns)
        packAs<decltype(p.int32_data()), uint8_t>(p.int32_data(), out.bytes);
        break;
      default: return "unsupported tensor data type";
    }
  }
  if (static_cast<int64_t>(out.bytes.size()) != expected)
    return "tensor data has " + std::to_string(out.bytes.size()) + " bytes, its type " + ops::dtypeName(out.dtype) +
           " " + ops::shapeString(out.shape) + " needs " + std::to_string(expected);
  return "";
}

std::string parseModel(const std::string &data, bool text, const std::string &name, onnx::ModelProto &model) {
  if (data.empty()) return "model file '" + name + "' is empty";
  if (text) {
    google::protobuf::TextFormat::Parser parser;
    // ONNX nests a message in a graph in a node in an attribute...: a hostile file nested
    // thousands deep would overflow the stack of the parser (and of the destructor).
    parser.SetRecursionLimit(kMaxMessageDepth);
    struct Collector : google::protobuf::io::ErrorCollector {
      std::string first;
      void AddError(int line, int col, const std::string &msg) override {
        if (first.empty()) first = "line " + std::to_string(line + 1) + ": " + msg;
      }
    } errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(data, &model))
      return "model file '" + name + "' is not a valid text-format ONNX model (" + errors.first + ")";
    return "";
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(data.data()),
                                            static_cast<int>(data.size()));
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  in.SetRecursionLimit(kMaxMessageDepth);
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return "model file '" + name + "' is not a valid ONNX protobuf (truncated or corrupt)";
  return "";
}

std::string loadModelFile(const std::string &path, onnx::ModelProto &model) {
  std::string data, error;
  if (!support::readFile(path, data, error, "model file", kMaxModelBytes)) return error;
  bool text = endsWith(path, ".onnxtxt") || endsWith(path, ".pbtxt") || endsWith(path, ".txt");
  return parseModel(data, text, path, model);
}

std::string loadTensorFile(const std::string &path, ops::Tensor &out, std::string *name) {
  std::string data, error;
  if (!support::readFile(path, data, error, "tensor file", kMaxModelBytes)) return error;
  onnx::TensorProto p;
  if (!p.ParseFromString(data)) return "tensor file '" + path + "' is not a valid TensorProto";
  RawTensor raw;
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  if (auto err = readTensorProto(p, dir, raw); !err.empty()) return path + ": " + err;
  try {
    out = ops::tensorFromBytes(raw.dtype, raw.shape, raw.bytes.data(), raw.bytes.size());
  } catch (const std::exception &e) {
    return path + ": " + e.what();
  }
  if (name) *name = p.name();
  return "";
}

}  // namespace kiln
