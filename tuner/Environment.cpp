#include "tuner/Environment.h"

#include "codegen/nvrtc/Nvrtc.h"
#include "runtime/driver/CublasLt.h"
#include "runtime/driver/CudaDriver.h"

namespace kiln::tuner {

bool environmentFingerprint(int device, const std::string &kilnVersion, std::string &out, std::string &error) {
  using namespace kiln::rt;
  const CudaDriver *cu = cudaDriver(error);
  if (!cu) return false;
  CUdevice dev;
  CUresult r = cu->cuDeviceGet(&dev, device);
  if (r != CUDA_SUCCESS) {
    error = "CUDA device " + std::to_string(device) + ": " + cu->describe(r);
    return false;
  }
  char name[256] = {0};
  cu->cuDeviceGetName(name, sizeof name - 1, dev);
  int major = 0, minor = 0, sms = 0, memclk = 0, driver = 0;
  cu->cuDeviceGetAttribute(&major, 75, dev);   // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  cu->cuDeviceGetAttribute(&minor, 76, dev);   // ..._MINOR
  cu->cuDeviceGetAttribute(&sms, 16, dev);     // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  cu->cuDeviceGetAttribute(&memclk, 36, dev);  // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz)
  cu->cuDriverGetVersion(&driver);
  std::string why;
  const CublasLt *lt = cublasLt(why);
  out = "gpu=" + std::string(name) + ";sm=" + std::to_string(major * 10 + minor) + ";sms=" + std::to_string(sms) +
        ";memclk_khz=" + std::to_string(memclk) + ";driver=" + std::to_string(driver) +
        ";nvrtc=" + codegen::nvrtcVersionString() +
        ";cublaslt=" + (lt ? std::to_string(lt->cublasLtGetVersion()) : std::string("none")) + ";kiln=" + kilnVersion +
        ";";
  return true;
}

}  // namespace kiln::tuner
