#include "codegen/nvrtc/CompilePool.h"

#include "compiler/support/Files.h"
#include "compiler/support/Hash.h"
#include "compiler/support/Parallel.h"
#include "compiler/target/GpuTarget.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <unordered_map>

namespace kiln::codegen {
namespace {

// --- worker-process wire format: [u64 length][u64 kernel][u64 seconds (bits)][4 × (u64 n, bytes)]

bool sendAll(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);  // never SIGPIPE when the peer is gone
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool recvAll(int fd, void *data, size_t n) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void putU64(std::string &b, uint64_t v) { b.append(reinterpret_cast<const char *>(&v), 8); }
void putBytes(std::string &b, const char *p, size_t n) {
  putU64(b, n);
  b.append(p, n);
}

std::string encodeResult(uint64_t kernel, const CompileOutput &o) {
  std::string b;
  putU64(b, 0);  // length, patched below
  putU64(b, kernel);
  uint64_t secs;
  std::memcpy(&secs, &o.seconds, 8);
  putU64(b, secs);
  putBytes(b, o.cubin.data(), o.cubin.size());
  putBytes(b, o.ptx.data(), o.ptx.size());
  putBytes(b, o.log.data(), o.log.size());
  putBytes(b, o.error.data(), o.error.size());
  uint64_t len = b.size() - 8;
  std::memcpy(&b[0], &len, 8);
  return b;
}

bool decodeResult(const std::string &b, uint64_t &kernel, CompileOutput &o) {
  size_t pos = 0;
  auto u64 = [&](uint64_t &v) {
    if (b.size() - pos < 8) return false;
    std::memcpy(&v, b.data() + pos, 8);
    pos += 8;
    return true;
  };
  auto bytes = [&](std::string &s) {
    uint64_t n;
    if (!u64(n) || b.size() - pos < n) return false;
    s.assign(b.data() + pos, n);
    pos += n;
    return true;
  };
  uint64_t secs;
  std::string cubin;
  if (!u64(kernel) || !u64(secs) || !bytes(cubin) || !bytes(o.ptx) || !bytes(o.log) || !bytes(o.error)) return false;
  std::memcpy(&o.seconds, &secs, 8);
  o.cubin.assign(cubin.begin(), cubin.end());
  return pos == b.size();
}

void closeAllFdsExcept(int keep) {
  if (keep > 3) close_range(3, static_cast<unsigned>(keep - 1), 0);
  if (close_range(static_cast<unsigned>(keep + 1), ~0u, 0) != 0) {  // kernel without close_range
    long maxFd = sysconf(_SC_OPEN_MAX);
    if (maxFd < 0 || maxFd > 65536) maxFd = 65536;
    for (int fd = 3; fd < maxFd; ++fd)
      if (fd != keep) close(fd);
  }
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  int64_t job = -1;  // kernel index in flight, -1 when idle
};

std::string describeExit(pid_t pid) {
  int status = 0;
  pid_t r;
  do r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r != pid) return "exited";
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "exited";
}

}  // namespace

CompilePool::CompilePool(CompileCache &cache, CompilePoolOptions options)
    : cache_(cache), options_(std::move(options)) {}

CompilePoolResult CompilePool::compile(const std::vector<KernelLaunch> &launches) const {
  auto t0 = std::chrono::steady_clock::now();
  CompilePoolResult result;
  result.kernelOfLaunch.resize(launches.size());

  // De-duplicate by (source, entry); the hash only narrows candidates, equality decides.
  std::unordered_map<uint64_t, std::vector<size_t>> byHash;  // dedup hash -> kernel indices
  for (size_t i = 0; i < launches.size(); ++i) {
    const KernelLaunch &l = launches[i];
    uint64_t sh = support::hash64(l.source);
    uint64_t dh = sh ^ (support::hash64(l.entry) * 0x9e3779b97f4a7c15ull);  // (narrows only)
    std::vector<size_t> &candidates = byHash[dh];
    size_t found = SIZE_MAX;
    for (size_t k : candidates) {
      const KernelLaunch &first = launches[result.kernels[k].firstLaunch];
      if (first.source == l.source && first.entry == l.entry) {
        found = k;
        break;
      }
    }
    if (found == SIZE_MAX) {
      found = result.kernels.size();
      candidates.push_back(found);
      // KILN_DUMP_KERNELS=DIR writes every distinct kernel source there (debugging, reading SASS).
      if (const char *dump = std::getenv("KILN_DUMP_KERNELS"); dump && *dump) {
        std::string ignored;  // (best effort)
        support::writeFileAtomically(std::string(dump) + "/" + l.entry + ".cu", l.source, ignored);
      }
      CompiledKernel k;
      k.entry = l.entry;
      k.sourceHash = sh;
      k.firstLaunch = i;
      result.kernels.push_back(std::move(k));
    }
    result.kernels[found].launches.push_back(i);
    result.kernelOfLaunch[i] = found;
  }

  const size_t total = result.kernels.size();
  std::mutex progressMutex;
  size_t done = 0;
  auto finished = [&] {
    if (!options_.progress) return;
    std::lock_guard<std::mutex> lock(progressMutex);
    ++done;
    try {
      options_.progress(done, total);
    } catch (...) {
      // a failing progress display must not take the build down
    }
  };
  auto cancelled = [&] { return options_.cancel && options_.cancel->load(); };
  auto sourceOf = [&](size_t k) -> const KernelLaunch & { return launches[result.kernels[k].firstLaunch]; };
  auto archOf = [&](const KernelLaunch &l) {
    return l.archSpecific ? target::archSpecificName(options_.arch) : options_.arch;
  };
  auto store = [&](size_t k) {
    const CompileOutput &o = result.kernels[k].output;
    if (o.ok() && cache_.enabled()) {
      try {
        cache_.store(sourceOf(k).source, sourceOf(k).entry, archOf(sourceOf(k)), options_.compile, o);
      } catch (const std::exception &) {
        // the cache only degrades
      }
    }
  };

  // 1. Invalid launches and cache hits, in this thread; the rest is pending.
  std::vector<size_t> pending;
  for (size_t k = 0; k < total; ++k) {
    CompiledKernel &ck = result.kernels[k];
    const KernelLaunch &l = sourceOf(k);
    if (l.entry.empty()) {
      ck.output.error = "launch " + std::to_string(ck.firstLaunch) + " has no kernel entry name";
    } else if (l.source.empty()) {
      ck.output.error = "kernel '" + l.entry + "' has an empty source";
    } else {
      bool hit = false;
      try {
        hit = cache_.lookup(l.source, l.entry, archOf(l), options_.compile, ck.output);
      } catch (const std::exception &) {
        hit = false;
      }
      if (!hit) {
        ck.output = CompileOutput();
        pending.push_back(k);
        continue;
      }
      ck.cacheHit = true;
      ++result.cacheHits;
    }
    finished();
  }

  std::atomic<size_t> compiled{0};
  auto compileHere = [&](size_t k) {
    CompiledKernel &ck = result.kernels[k];
    const KernelLaunch &l = sourceOf(k);
    if (cancelled()) {
      ck.output.error = "kernel '" + l.entry + "' not compiled: cancelled";
    } else {
      try {
        compiled.fetch_add(1);
        ck.output = options_.compiler ? options_.compiler(l.source, l.entry, archOf(l), options_.compile)
                                      : compileKernel(l.source, l.entry, archOf(l), options_.compile);
        store(k);
      } catch (const std::exception &e) {
        ck.output = CompileOutput();
        ck.output.error = "kernel '" + l.entry + "': " + e.what();
      }
    }
    finished();
  };

  unsigned jobs = options_.jobs ? options_.jobs : support::hardwareThreads();
  jobs = static_cast<unsigned>(std::min<size_t>(jobs, pending.size()));
  bool useProcesses =
      options_.parallelism == CompileParallelism::Processes ||
      (options_.parallelism == CompileParallelism::Auto && !options_.compiler && jobs > 1 && pending.size() >= 2);
  size_t nextPending = 0;

  // 2a. Forked worker processes (see CompilePool.h for why).
  if (useProcesses && jobs > 0 && !cancelled()) {
    std::vector<Worker> workers;
    {
      std::unique_lock<std::shared_mutex> noNvrtcInFlight(nvrtcForkMutex());
      for (unsigned w = 0; w < jobs; ++w) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) break;
        pid_t pid = fork();
        if (pid < 0) {
          close(sv[0]);
          close(sv[1]);
          break;
        }
        if (pid == 0) {  // worker: compile what the parent sends until it closes the socket
          nvrtcEnterForkedChild();
          // Keep only stdio and our socket: inherited descriptors of other workers (this pool's or
          // concurrent pools') would keep their sockets open and their workers from seeing EOF.
          closeAllFdsExcept(sv[1]);
          for (;;) {
            uint64_t k;
            if (!recvAll(sv[1], &k, 8) || k >= total) _exit(0);
            const KernelLaunch &l = sourceOf(k);
            CompileOutput o;
            try {
              o = options_.compiler ? options_.compiler(l.source, l.entry, archOf(l), options_.compile)
                                    : compileKernel(l.source, l.entry, archOf(l), options_.compile);
            } catch (const std::exception &e) {
              o = CompileOutput();
              o.error = "kernel '" + l.entry + "': " + e.what();
            }
            std::string msg = encodeResult(k, o);
            if (!sendAll(sv[1], msg.data(), msg.size())) _exit(1);
          }
        }
        close(sv[1]);
        Worker wk;
        wk.pid = pid;
        wk.fd = sv[0];
        workers.push_back(wk);
      }
    }
    result.processes = !workers.empty();
    result.jobs = static_cast<unsigned>(workers.size());

    auto retire = [](Worker &w) {
      if (w.fd >= 0) close(w.fd);
      w.fd = -1;
    };
    auto assign = [&](Worker &w) {
      while (w.fd >= 0 && nextPending < pending.size() && !cancelled()) {
        uint64_t k = pending[nextPending];
        if (sendAll(w.fd, &k, 8)) {
          ++nextPending;
          w.job = static_cast<int64_t>(k);
          compiled.fetch_add(1);
          return;
        }
        retire(w);  // dead worker: the job stays pending for another one
      }
      retire(w);  // nothing left for it
    };
    for (Worker &w : workers) assign(w);
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<Worker *> busy;
      for (Worker &w : workers)
        if (w.fd >= 0 && w.job >= 0) {
          fds.push_back({w.fd, POLLIN, 0});
          busy.push_back(&w);
        }
      if (fds.empty()) break;
      int n = poll(fds.data(), fds.size(), -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        break;  // leave the rest to the in-process fallback below
      }
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        Worker &w = *busy[i];
        size_t k = static_cast<size_t>(w.job);
        uint64_t len = 0, got = SIZE_MAX;
        std::string msg;
        CompileOutput o;
        bool okMsg = recvAll(w.fd, &len, 8) && len < (1ull << 34);
        if (okMsg) {
          msg.resize(len);
          okMsg = recvAll(w.fd, &msg[0], len) && decodeResult(msg, got, o) && got == k;
        }
        w.job = -1;
        if (okMsg) {
          result.kernels[k].output = std::move(o);
          store(k);
          finished();
          assign(w);
        } else {
          retire(w);
          result.kernels[k].output = CompileOutput();
          result.kernels[k].output.error = "NVRTC worker process " + std::to_string(w.pid) + " " + describeExit(w.pid) +
                                           " while compiling kernel '" + sourceOf(k).entry + "'";
          w.pid = -1;
          finished();
        }
      }
    }
    for (Worker &w : workers) {
      retire(w);
      if (w.pid > 0) describeExit(w.pid);  // reap
    }
  }

  // 2b. Threads in this process: the whole list, or what the workers did not get to.
  std::vector<size_t> rest(pending.begin() + static_cast<std::ptrdiff_t>(nextPending), pending.end());
  if (!rest.empty()) {
    unsigned used = support::parallelFor(rest.size(), std::max(jobs, 1u), [&](size_t i) { compileHere(rest[i]); });
    if (!result.processes) result.jobs = used;
  }

  for (const CompiledKernel &k : result.kernels) {
    if (k.output.ok()) continue;
    std::string where = k.launches.size() == 1 ? " [launch " + std::to_string(k.firstLaunch) + "]"
                                               : " [launches " + std::to_string(k.firstLaunch) + " and " +
                                                     std::to_string(k.launches.size() - 1) + " more]";
    result.errors.push_back(k.output.error + where);
  }
  result.compiled = compiled.load();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::function<void(size_t, size_t)> terminalProgress(FILE *out, std::string label) {
  if (!out || !isatty(fileno(out))) return [](size_t, size_t) {};
  auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [out, label = std::move(label), start](size_t done, size_t total) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    char eta[32] = "";
    if (done > 0 && done < total) {
      double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
      std::snprintf(eta, sizeof eta, ", ETA %.0fs", left + 0.5);
    } else if (done == total) {
      std::snprintf(eta, sizeof eta, " in %.1fs", elapsed);
    }
    std::fprintf(out, "\r\033[K%s %zu/%zu%s%s", label.c_str(), done, total, eta, done == total ? "\n" : "");
    std::fflush(out);
  };
}

std::function<void(const std::string &)> terminalStatus(FILE *out) {
  if (!out || !isatty(fileno(out))) return [](const std::string &) {};
  return [out](const std::string &text) {
    std::fprintf(out, "\r\033[K%s", text.empty() ? "" : (text + " ...").c_str());
    std::fflush(out);
  };
}

}  // namespace kiln::codegen
