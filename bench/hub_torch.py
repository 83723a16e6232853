#!/usr/bin/env python3
"""PyTorch's side for models/export_hub.py's models, on the GPU: HF transformers BERT-base at
32x128 and GPT-2 small at 1x512, torchvision's EfficientNet-B0 at batch 8, in fp16, eager and
replayed from a CUDA graph (the best path without compilation), and cuBLAS (torch.matmul, fp16)
at the product sizes kiln-wgmma-check times. CUDA events after warm-up, median of --iterations
runs; one line per measurement.

    python3 bench/hub_torch.py [--iterations 200] [--only bert,gpt2,efficientnet,gemm]
"""
import argparse

import torch

from cuda_timing import time_cuda


def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def model_lines(name, model, batch, seq, iterations, image=False):
    model = model.eval().half().cuda()
    ids = torch.randint(0, 1000, (batch, seq), device="cuda")
    mask = torch.ones(batch, seq, dtype=torch.int64, device="cuda")
    pixels = torch.rand(batch, 3, seq, seq, device="cuda", dtype=torch.half)
    with torch.no_grad():
        run = (lambda: model(pixels)) if image else (lambda: model(input_ids=ids, attention_mask=mask))
        for mode in ("eager", "cuda_graph"):
            try:
                fn = run if mode == "eager" else graphed(run)
                med, lo, p90 = time_cuda(fn, 20, iterations)
            except Exception as e:  # (capture fails where the model syncs with the host)
                print("torch %s %s failed: %s" % (name, mode, str(e).splitlines()[0][:300]), flush=True)
                continue
            print("torch %s %dx%d fp16 %s: median %.3f ms, min %.3f, p90 %.3f" % (name, batch, seq, mode, med, lo, p90),
                  flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--only", default="bert,gpt2,gemm")
    a = p.parse_args()
    only = set(a.only.split(","))
    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    if "bert" in only:
        from transformers import BertConfig, BertModel
        model_lines("hf_bert_base", BertModel(BertConfig()), 32, 128, a.iterations)
    if "gpt2" in only:
        from transformers import GPT2Config, GPT2Model
        model_lines("hf_gpt2_small", GPT2Model(GPT2Config()), 1, 512, a.iterations)
    if "efficientnet" in only:
        import torchvision
        model_lines("efficientnet_b0", torchvision.models.efficientnet_b0(), 8, 224, a.iterations, image=True)
    if "gemm" in only:
        # (timed call by call, so the host's launch gap before each call is in the time: 1.1-1.7x
        # cuBLASLt's kernel time at BERT's sizes on an H100. kiln-wgmma-check times cuBLASLt
        # through the runtime in the same harness as kiln's kernels: compare with that.)
        for m, n, k in ((4096, 2304, 768), (4096, 768, 768), (4096, 3072, 768), (4096, 768, 3072), (6304, 2304, 768),
                        (8192, 8192, 8192)):
            x = torch.rand(m, k, device="cuda", dtype=torch.half) - 0.5
            w = torch.rand(n, k, device="cuda", dtype=torch.half) - 0.5
            med, lo, p90 = time_cuda(lambda: torch.matmul(x, w.t()), 20, a.iterations)
            print("cublas fp16 %dx%dx%d: median %.4f ms, min %.4f, p90 %.4f, %.0f TFLOP/s"
                  % (m, n, k, med, lo, p90, 2.0 * m * n * k / (med * 1e-3) / 1e12), flush=True)


if __name__ == "__main__":
    main()
