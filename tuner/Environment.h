// The environment fingerprint a measurement is keyed by: GPU name, compute capability, SM count,
// memory clock, driver version, NVRTC and cuBLASLt versions, kiln version. Any change is a cache
// miss.
#pragma once

#include <string>

namespace kiln::tuner {

// "gpu=NVIDIA H200;sm=90;sms=132;memclk_khz=3201000;driver=13000;nvrtc=13.0;cublaslt=130100;kiln=0.1.0;"
// for CUDA device `device` (queried in this process: the tuner asks a child, `kiln device`).
bool environmentFingerprint(int device, const std::string &kilnVersion, std::string &out, std::string &error);

}  // namespace kiln::tuner
