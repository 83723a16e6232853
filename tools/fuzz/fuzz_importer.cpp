// libFuzzer target: any bytes, as a binary or text-format ONNX model, must import or fail with a
// message — never crash, hang or trip a sanitizer. The first byte picks the format.
#include "compiler/importer/Importer.h"

#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  bool text = data[0] & 1;
  std::string bytes(reinterpret_cast<const char *>(data + 1), size - 1);
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    kiln::registerKilnDialects(*c);
    return c;
  }();
  kiln::ImportOptions opts;
  opts.foldLimit = 1 << 16;  // keep each input cheap
  kiln::ImportResult r = kiln::importModelBytes(bytes, text, "/nonexistent", *ctx, opts);
  (void)r;
  return 0;
}
