// libFuzzer target: any bytes given to kiln_engine_load_from_memory must load or fail with a
// status and a message — never crash, hang, read out of bounds or trip a sanitizer. A loaded
// engine's accessors are exercised too.
//
// The checksum stops almost every mutation at the first check, so when the input is long
// enough the first byte chooses whether to repair the checksum before loading; that lets the
// fuzzer reach the section table, the JSON decoder and the validation behind it.
// Seed: the test engine (kiln-make-test-engine OUT.kiln), prefixed with one byte.
#include "kiln/kiln.h"
#include "runtime/format/EngineFormat.h"

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool reseal = data[0] & 1;
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (reseal && bytes.size() >= kiln::rt::kHeaderSize) {
    uint64_t sum = kiln::rt::fnv1a64(bytes.data() + kiln::rt::kHeaderSize, bytes.size() - kiln::rt::kHeaderSize);
    for (int i = 0; i < 8; ++i) bytes[24 + i] = uint8_t(sum >> (8 * i));
  }
  kiln_engine* engine = nullptr;
  kiln_status s = kiln_engine_load_from_memory(bytes.data(), bytes.size(), &engine);
  if (s != KILN_OK) {
    if (engine || !*kiln_status_message(s)) __builtin_trap();  // a failure must leave NULL and say why
    return 0;
  }
  volatile size_t sink = std::strlen(kiln_engine_target_arch(engine)) + std::strlen(kiln_engine_route(engine));
  for (int32_t i = 0; i < kiln_engine_num_io(engine); ++i) {
    sink = sink + std::strlen(kiln_engine_io_name(engine, i)) + size_t(kiln_engine_io_dtype(engine, i));
    const int64_t* shape = kiln_engine_io_shape(engine, i);
    for (int32_t k = 0; k < kiln_engine_io_rank(engine, i); ++k) sink = sink + size_t(shape[k]);
  }
  (void)sink;
  kiln_engine_destroy(engine);
  return 0;
}
