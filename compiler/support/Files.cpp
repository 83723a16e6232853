#include "compiler/support/Files.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::support {

namespace {

std::string kindOf(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string quoted(const std::string &path) { return "'" + path + "'"; }

// ---- Temporaries removed on a fatal signal ---------------------------------------------------
//
// A fixed table, so the handler touches no allocator: each slot holds a heap record of a
// temporary (published with a compare-exchange, taken with exchange) with the pid that made it:
// a forked child inherits the table and must not remove its parent's files.
struct Temporary {
  pid_t owner;
  char name[1];  // (allocated longer)
};
constexpr int kSlots = 64;
std::atomic<Temporary *> gTemp[kSlots];
const int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void removeTemporaries(int sig) {
  pid_t self = getpid();
  for (int i = 0; i < kSlots; ++i) {
    Temporary *t = gTemp[i].exchange(nullptr);
    if (t && t->owner == self) unlink(t->name);  // (the record leaks: the process is ending)
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// Installs the handler for each signal still at its default disposition.
void installHandler() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = removeTemporaries;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

int registerTemporary(const std::string &name) {
  installHandler();
  auto *t = static_cast<Temporary *>(std::malloc(sizeof(Temporary) + name.size()));
  if (!t) return -1;
  t->owner = getpid();
  std::memcpy(t->name, name.c_str(), name.size() + 1);
  for (int i = 0; i < kSlots; ++i) {
    Temporary *expected = nullptr;
    if (gTemp[i].compare_exchange_strong(expected, t)) return i;
  }
  std::free(t);  // more than kSlots temporaries at once: this one is only removed by its owner
  return -1;
}

void unregisterTemporary(int slot) {
  if (slot < 0) return;
  std::free(gTemp[slot].exchange(nullptr));
}

bool writeAll(int fd, const char *p, size_t n, int &err) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

template <typename Bytes>
bool readInto(const std::string &path, Bytes &out, std::string &error, const std::string &what, uint64_t maxBytes) {
  auto fail = [&](const std::string &why) {
    error = "cannot read " + (what.empty() ? "" : what + " ") + quoted(path) + ": " + why;
    return false;
  };
  // Non-blocking, so that a FIFO with no writer does not hang the open; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return fail(std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("it is " + kindOf(st.st_mode) + ", not a regular file");
  uint64_t size = uint64_t(st.st_size);
  if (size > maxBytes)
    return fail("it has " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(maxBytes));
  try {
    out.resize(size_t(size));
  } catch (const std::exception &) {
    return fail("out of memory for " + std::to_string(size) + " bytes");
  }
  size_t got = 0;
  while (got < size) {
    ssize_t r = ::read(fd, reinterpret_cast<char *>(out.data()) + got, size_t(size) - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno));
    }
    if (r == 0) return fail("the file shrank while it was read");
    got += size_t(r);
  }
  return true;
}

}  // namespace

std::string fileKind(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return kindOf(st.st_mode);
}

std::string checkOutputPath(const std::string &path, const std::vector<std::string> &inputs) {
  if (path.empty()) return "the output path is empty";
  struct stat out {};
  if (::stat(path.c_str(), &out) != 0) return "";  // does not exist (or a dangling link): created anew
  if (!S_ISREG(out.st_mode))
    return "will not write " + quoted(path) + ": it is " + kindOf(out.st_mode) + " (kiln replaces regular files only)";
  for (const std::string &in : inputs) {
    struct stat st {};
    if (in.empty() || ::stat(in.c_str(), &st) != 0) continue;
    if (st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      return "will not write " + quoted(path) + ": it is the input " + quoted(in) +
             (in == path ? "" : " (the same file)") + " of this command";
  }
  return "";
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  unregisterTemporary(slot_);
  slot_ = -1;
  tmp_.clear();
}

bool AtomicFile::open(const std::string &path, std::string &error, const std::vector<std::string> &inputs) {
  discard();
  path_ = path;
  offset_ = 0;
  writeErrno_ = 0;
  if (std::string why = checkOutputPath(path, inputs); !why.empty()) {
    error = why;
    return false;
  }
  // The replaced file's permission bits, else the usual default (less the umask).
  struct stat old {};
  bool replacing = ::stat(path.c_str(), &old) == 0;
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
    // Registered before it exists, so a signal arriving in between still removes it.
    slot_ = registerTemporary(tmp);
    tmp_ = tmp;
    fd_ = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd_ >= 0) break;
    int e = errno;
    unregisterTemporary(slot_);
    slot_ = -1;
    tmp_.clear();
    if (e != EEXIST) {
      error = "cannot create " + quoted(tmp) + " (to write " + quoted(path) + "): " + std::strerror(e);
      return false;
    }
  }
  if (fd_ < 0) {
    error = "cannot create a temporary file beside " + quoted(path);
    return false;
  }
  if (replacing) fchmod(fd_, old.st_mode & 07777);
  return true;
}

bool AtomicFile::write(const void *data, size_t size) {
  if (fd_ < 0 || writeErrno_) return false;
  if (!writeAll(fd_, static_cast<const char *>(data), size, writeErrno_)) return false;
  offset_ += size;
  return true;
}

bool AtomicFile::commit(std::string &error) {
  if (fd_ < 0) {
    error = "cannot write " + quoted(path_) + ": the file was not opened";
    return false;
  }
  auto fail = [&](int e) {
    error = "cannot write " + quoted(path_) + ": " + std::strerror(e);
    discard();
    return false;
  };
  if (writeErrno_) return fail(writeErrno_);
  if (::fsync(fd_) != 0) return fail(errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return fail(errno);
  // The destination may have become something else since open(): check again just before.
  if (std::string why = checkOutputPath(path_); !why.empty()) {
    error = why;
    discard();
    return false;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return fail(errno);
  unregisterTemporary(slot_);
  slot_ = -1;
  tmp_.clear();
  // Make the rename itself durable (best effort: some file systems refuse fsync on folders).
  int dir = ::open(dirOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

bool writeFileAtomically(const std::string &path, const void *data, size_t size, std::string &error,
                         const std::vector<std::string> &inputs) {
  AtomicFile f;
  return f.open(path, error, inputs) && (f.write(data, size), true) && f.commit(error);
}

bool readFile(const std::string &path, std::string &out, std::string &error, const std::string &what,
              uint64_t maxBytes) {
  return readInto(path, out, error, what, maxBytes);
}

bool readFile(const std::string &path, std::vector<uint8_t> &out, std::string &error, const std::string &what,
              uint64_t maxBytes) {
  return readInto(path, out, error, what, maxBytes);
}

bool flushStdout(std::string &error) {
  errno = 0;
  std::cout.flush();
  bool ok = !std::cout.fail();
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) ok = false;
  int e = errno;
  if (ok) return true;
  error = std::string("cannot write to standard output: ") + (e ? std::strerror(e) : "write error");
  return false;
}

}  // namespace kiln::support
