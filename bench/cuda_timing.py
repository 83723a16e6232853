"""CUDA-event timing shared by the bench scripts that time PyTorch: `warmup` untimed calls, then
`iterations` calls each between two events; returns (median, min, p90) in milliseconds."""
import statistics

import torch


def time_cuda(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), min(times), sorted(times)[int(0.9 * (len(times) - 1))]
