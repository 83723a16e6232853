#include "compiler/support/Parallel.h"

#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <atomic>

namespace kiln::support {

unsigned hardwareThreads() { return std::max(1u, llvm::hardware_concurrency().compute_thread_count()); }

unsigned parallelFor(size_t n, unsigned threads, const std::function<void(size_t)> &body) {
  unsigned want = unsigned(std::min<size_t>(threads ? threads : hardwareThreads(), n));
  if (want <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return n ? 1 : 0;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) body(i);
  };
  llvm::StdThreadPool pool(llvm::hardware_concurrency(want - 1));
  for (unsigned t = 0; t + 1 < want; ++t) pool.async(worker);
  worker();  // (the caller is one of the threads)
  pool.wait();
  return want;
}

}  // namespace kiln::support
