#!/usr/bin/env python3
"""PyTorch's side of issue 24's dynamic-shape table (bench/gpu_suite.sh dynamic-torch), on the GPU.

Exports HF transformers' BERT-base (random weights from its config, no download) with symbolic
`batch` and `sequence` and torchvision's ResNet-50 with a symbolic `batch`, both with PyTorch's
torch.export-based ONNX exporter (models/export_hub.py), then for every shape asked for:
- writes the inputs (`DIR/NAME_SHAPE.in.npz`, the ONNX input names) and PyTorch's fp32 outputs on
  them (`DIR/NAME_SHAPE.ref.npz`, TF32 off) for kiln's engines to be compared with;
- times PyTorch fp16 eager and replayed from a CUDA graph (CUDA events after warm-up, median of
  --iterations; one line each, as bench/hub_torch.py prints them).

    python3 bench/dynamic_torch.py --out DIR [--bert 1x16,1x128,8x128,32x128,32x512] [--resnet 1,7,32,64]
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_hub  # noqa: E402
from cuda_timing import time_cuda  # noqa: E402
from hub_torch import graphed  # noqa: E402


def resnet50(size):
    import torchvision
    return torchvision.models.resnet50().eval(), "image"


def side(name, models, feeds, out_name, iterations, tag):
    """Saves the inputs and the fp32 model's outputs for `tag`, then prints the fp16 model's eager
    and CUDA-graph latency (`models`: the fp32 and fp16 copies)."""
    np.savez(tag + ".in.npz", **feeds)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    with torch.no_grad():
        np.savez(tag + ".ref.npz", **{out_name: models[0](*cuda.values()).float().cpu().numpy()})
        half = {k: (v.half() if v.is_floating_point() else v) for k, v in cuda.items()}
        run = lambda: models[1](*half.values())  # noqa: E731
        shape = "x".join(str(d) for d in next(iter(feeds.values())).shape[:2 if len(feeds) > 1 else 1])
        for mode in ("eager", "cuda_graph"):
            try:
                med, lo, p90 = time_cuda(run if mode == "eager" else graphed(run), 20, iterations)
            except Exception as e:  # (capture fails where the model syncs with the host)
                print("torch %s %s %s failed: %s" % (name, shape, mode, str(e).splitlines()[0][:300]), flush=True)
                continue
            print("torch %s %s fp16 %s: median %.3f ms, min %.3f, p90 %.3f" % (name, shape, mode, med, lo, p90),
                  flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--bert", default="1x16,1x128,8x128,32x128,32x512")
    p.add_argument("--resnet", default="1,7,32,64")
    p.add_argument("--iterations", type=int, default=200)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    rng = np.random.default_rng(0)
    if a.bert:
        export_hub.export("bert", export_hub.bert, "dynamo", "base", a.out)  # seeds 0, as below
        torch.manual_seed(0)
        bert, _ = export_hub.bert("base")

        class Wrapped(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        model = Wrapped(bert).cuda().eval()
        models = (model, copy.deepcopy(model).half())
        for shape in a.bert.split(","):
            b, s = (int(v) for v in shape.split("x"))
            feeds = {"input_ids": rng.integers(0, 30522, (b, s)).astype(np.int64),
                     "attention_mask": np.ones((b, s), np.int64)}
            side("hf_bert_base", models, feeds, "last_hidden_state", a.iterations,
                 os.path.join(a.out, "bert_%s" % shape))
    if a.resnet:
        export_hub.export("resnet50", resnet50, "dynamo", "base", a.out)
        torch.manual_seed(0)
        model, _ = resnet50("base")
        model = model.cuda().eval()
        models = (model, copy.deepcopy(model).half())
        for b in a.resnet.split(","):
            feeds = {"input": rng.uniform(-1, 1, (int(b), 3, 224, 224)).astype(np.float32)}
            side("resnet50", models, feeds, "logits", a.iterations, os.path.join(a.out, "resnet50_%s" % b))


if __name__ == "__main__":
    main()
