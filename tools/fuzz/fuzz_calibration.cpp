// libFuzzer target: any bytes as a calibration file (kiln calibrate's JSON) must be accepted with
// valid ranges or refused with a message — never crash or trip a sanitizer.
// Seeds (run_fuzz.sh): a calibration file in the form kiln writes.
#include "compiler/quant/Calibration.h"

#include <cmath>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::quant::CalibrationTable t;
  std::string error;
  if (kiln::quant::fromJson(std::string(reinterpret_cast<const char *>(data), size), t, error)) {
    for (const auto &[key, r] : t.ranges)
      if (!(r.amax >= 0) || !std::isfinite(r.amax) || !(r.min <= r.max)) __builtin_trap();  // validated
    std::string again = kiln::quant::toJson(t);
    kiln::quant::CalibrationTable back;
    if (!kiln::quant::fromJson(again, back, error)) __builtin_trap();  // what kiln writes it reads
  } else if (error.empty()) {
    __builtin_trap();
  }
  return 0;
}
