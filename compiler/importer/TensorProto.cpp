#include "compiler/importer/TensorProto.h"

#include "onnx/onnx-ml.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace kiln {

static bool readFile(const std::string &path, std::string &data) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  data = ss.str();
  return static_cast<bool>(f) || f.eof();
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static bool supportedDType(int t) {
  switch (static_cast<ops::DType>(t)) {
    case ops::DType::F32: case ops::DType::F64: case ops::DType::F16: case ops::DType::BF16:
    case ops::DType::I8: case ops::DType::I16: case ops::DType::I32: case ops::DType::I64:
    case ops::DType::U8: case ops::DType::U16: case ops::DType::U32: case ops::DType::U64:
    case ops::DType::Bool: case ops::DType::F8E4M3:
      return true;
    default:
      return false;
  }
}

template <typename Src, typename Dst>
static void packAs(const Src &values, std::vector<char> &bytes) {
  bytes.resize(values.size() * sizeof(Dst));
  for (int k = 0; k < values.size(); ++k) {
    Dst v = static_cast<Dst>(values.Get(k));
    std::memcpy(bytes.data() + k * sizeof(Dst), &v, sizeof(Dst));
  }
}

static std::string readExternal(const onnx::TensorProto &p, const std::string &baseDir,
                                std::vector<char> &bytes, int64_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception &) {
      return "external data field '" + kv.key() + "' is not a number: '" + kv.value() + "'";
    }
  }
  if (location.empty()) return "external data has no location";
  if (location[0] == '/' || location.find("..") != std::string::npos)
    return "external data location '" + location + "' must be a path inside the model's folder";
  if (offset < 0) return "external data offset is negative";
  std::string path = baseDir.empty() ? location : baseDir + "/" + location;
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open external data file '" + path + "'";
  f.seekg(0, std::ios::end);
  int64_t fileSize = f.tellg();
  if (length < 0) length = fileSize - offset;
  if (length != expected)
    return "external data length " + std::to_string(length) + " does not match the " +
           std::to_string(expected) + " bytes the tensor's type needs";
  if (offset + length > fileSize)
    return "external data file '" + path + "' has " + std::to_string(fileSize) +
           " bytes, the tensor needs bytes " + std::to_string(offset) + ".." +
           std::to_string(offset + length);
  bytes.resize(length);
  f.seekg(offset);
  f.read(bytes.data(), length);
  if (!f) return "cannot read external data file '" + path + "'";
  return "";
}

std::string readTensorProto(const onnx::TensorProto &p, const std::string &baseDir, RawTensor &out) {
  if (!supportedDType(p.data_type()))
    return "unsupported tensor data type " +
           (onnx::TensorProto_DataType_IsValid(p.data_type())
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
    if (auto err = readExternal(p, baseDir, out.bytes, expected); !err.empty()) return err;
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
      case DT::U16: case DT::F16: case DT::BF16:
        packAs<decltype(p.int32_data()), uint16_t>(p.int32_data(), out.bytes); break;
      case DT::I8: packAs<decltype(p.int32_data()), int8_t>(p.int32_data(), out.bytes); break;
      case DT::U8: case DT::Bool: case DT::F8E4M3:  // (float8: bit patterns)
        packAs<decltype(p.int32_data()), uint8_t>(p.int32_data(), out.bytes); break;
      default: return "unsupported tensor data type";
    }
  }
  if (static_cast<int64_t>(out.bytes.size()) != expected)
    return "tensor data has " + std::to_string(out.bytes.size()) + " bytes, its type " +
           ops::dtypeName(out.dtype) + " " + ops::shapeString(out.shape) + " needs " +
           std::to_string(expected);
  return "";
}

std::string parseModel(const std::string &data, bool text, const std::string &name, onnx::ModelProto &model) {
  if (data.empty()) return "model file '" + name + "' is empty";
  if (text) {
    google::protobuf::TextFormat::Parser parser;
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
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return "model file '" + name + "' is not a valid ONNX protobuf (truncated or corrupt)";
  return "";
}

std::string loadModelFile(const std::string &path, onnx::ModelProto &model) {
  std::string data;
  if (!readFile(path, data)) return "cannot read model file '" + path + "'";
  bool text = endsWith(path, ".onnxtxt") || endsWith(path, ".pbtxt") || endsWith(path, ".txt");
  return parseModel(data, text, path, model);
}

std::string loadTensorFile(const std::string &path, ops::Tensor &out, std::string *name) {
  std::string data;
  if (!readFile(path, data)) return "cannot read tensor file '" + path + "'";
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
