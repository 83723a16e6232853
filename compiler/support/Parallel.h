// kiln's one parallel loop, on LLVM Support's thread pool: the evaluator's large ops and the
// NVRTC compile pool use it instead of threads of their own.
#pragma once

#include <cstddef>
#include <functional>

namespace kiln::support {

// Runs body(i) for every i in [0, n), each exactly once, on up to `threads` threads (0: one per
// core; the caller waits, and runs everything itself when one thread is enough). Indices are
// handed out one at a time, so uneven items balance. body must be safe to call concurrently.
// Returns the number of threads that ran items.
unsigned parallelFor(size_t n, unsigned threads, const std::function<void(size_t)> &body);

// The machine's cores (at least 1).
unsigned hardwareThreads();

}  // namespace kiln::support
