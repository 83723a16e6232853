// The files kiln reads and writes on a user's behalf. Plain C++ and POSIX (no MLIR, no
// protobuf), so the compiler, the tools, the tuner and codegen's compile cache share it.
//
// Output files (engines, .npz, calibration files, cache exports, the tuner's outputs, compile
// cache entries) go through one writer, AtomicFile: the bytes are written to a temporary file
// in the destination's folder, every write is checked, the file is fsync'd and closed (checked),
// then renamed over the destination. A failed, interrupted (SIGINT, SIGTERM, SIGHUP) or
// abandoned write leaves the destination as it was and no temporary behind. Before anything is
// written the destination is checked (checkOutputPath): kiln replaces regular files only (never
// a device, FIFO, socket or directory) and never a file that is also an input of the command.
//
// Input files are read by readFile: regular files only (a directory, device or FIFO is refused
// without blocking), at most a given number of bytes, every read checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::support {

// "" when `path` may be written by an AtomicFile, else why not, naming the path: it exists and
// is not a regular file (after following symlinks), or it is the same file (device and inode:
// hard links and symlinks count) as one of `inputs` (paths that do not exist, and "", are
// skipped).
std::string checkOutputPath(const std::string &path, const std::vector<std::string> &inputs = {});

// An output file replaced atomically (see above). Not copyable; one writer per object.
//
//   support::AtomicFile f;
//   if (!f.open(path, error, {model}) || !f.write(bytes.data(), bytes.size()) || !f.commit(error)) ...
//
// The temporary is PATH.tmp.<pid>.<n>; it gets the permission bits of the file it replaces (else
// 0666 less the umask). While it exists, a handler for SIGINT, SIGTERM and SIGHUP removes it and
// re-raises the signal — installed only where the signal's disposition is the default, so a
// program's own handler (`kiln tune`'s Ctrl-C) keeps working and the destructor cleans up.
class AtomicFile {
 public:
  AtomicFile() = default;
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;
  ~AtomicFile();  // an uncommitted temporary is removed

  // Checks `path` (checkOutputPath against `inputs`) and creates the temporary. False with
  // `error` (naming the path) when either fails.
  bool open(const std::string &path, std::string &error, const std::vector<std::string> &inputs = {});
  // Appends; false once any write has failed (the reason is reported by commit).
  bool write(const void *data, size_t size);
  bool write(const std::string &s) { return write(s.data(), s.size()); }
  // Bytes written so far.
  uint64_t offset() const { return offset_; }
  // fsync, close, rename over the destination, fsync its folder. False with `error` on any
  // failure, including an earlier write's (e.g. "No space left on device"); the temporary is
  // then removed and the destination is unchanged.
  bool commit(std::string &error);
  // Removes the temporary without touching the destination.
  void discard();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  int slot_ = -1;  // in the signal handler's list of temporaries
  int writeErrno_ = 0;
  uint64_t offset_ = 0;
};

// `size` bytes to `path` through an AtomicFile.
bool writeFileAtomically(const std::string &path, const void *data, size_t size, std::string &error,
                         const std::vector<std::string> &inputs = {});
inline bool writeFileAtomically(const std::string &path, const std::string &text, std::string &error,
                                const std::vector<std::string> &inputs = {}) {
  return writeFileAtomically(path, text.data(), text.size(), error, inputs);
}

// What a path is, for messages: "a directory", "a character device", "a FIFO", "a socket",
// "a block device", "a regular file" (after following symlinks); "" when it does not exist.
std::string fileKind(const std::string &path);

// Reads all of the regular file `path` into `out`. False with `error` ("cannot read engine file
// 'P': it is a directory, not a regular file", "... it has N bytes, more than the limit of M",
// or the system's reason; `what` names the kind of file) otherwise. A FIFO or device is refused
// without blocking (the file is opened non-blocking, then fstat'd).
constexpr uint64_t kDefaultReadLimit = uint64_t(1) << 40;
bool readFile(const std::string &path, std::string &out, std::string &error, const std::string &what = "",
              uint64_t maxBytes = kDefaultReadLimit);
bool readFile(const std::string &path, std::vector<uint8_t> &out, std::string &error, const std::string &what = "",
              uint64_t maxBytes = kDefaultReadLimit);

// Flushes stdout (C stdio and std::cout) and reports whether everything written to it arrived:
// false with `error` ("cannot write to standard output: No space left on device") when a write
// or the flush failed. Commands call it before exiting 0.
bool flushStdout(std::string &error);

}  // namespace kiln::support
