// libFuzzer target: any bytes as an .npz (zip) or .npy file must read or fail with a message —
// never crash, hang, allocate beyond the caps, read out of bounds or trip a sanitizer. The bytes
// go to an in-memory file (memfd), read through the same path as a user's file.
// Seeds (run_fuzz.sh): the .npz files of models/tiny, written by numpy.
#include "compiler/io/Npz.h"

#include <cstdint>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int fd = memfd_create("kiln-fuzz-npz", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) return 0;
  kiln::io::Npz npz;
  std::string error;
  if (kiln::io::readNpz(path, npz, error)) {
    for (const auto &[name, a] : npz.arrays)
      if (a.numElements() < 0 || a.data.size() != uint64_t(a.numElements()) * a.itemSize()) __builtin_trap();
  } else if (error.empty()) {
    __builtin_trap();  // a failure must say why
  }
  kiln::io::NpyArray a;
  kiln::io::parseNpy(data, size, a, error);
  return 0;
}
