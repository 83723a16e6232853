#!/usr/bin/env python3
"""Small models with awkward sizes for the GPU end-to-end checks (tests/gpu, bench/gpu_suite.sh).

    /usr/bin/python3 models/make_gpu_cases.py --out build/models/cases

Each exercises a kernel family through the whole compiler: odd channel counts (3, 12, 24),
strides, groups and depthwise convolutions, pools, residual adds, Linear layers of odd sizes,
and attention: ViT's nn.MultiheadAttention, and BERT's and GPT-2's blocks from make_zoo's
classes at small sizes (heads, masks, softmax, layer norm, both GELU forms). Fixed seeds, random weights, static shapes,
opset 17 (14 for layernorm_opset14, whose LayerNorms TorchScript decomposes). The files are small (< 2 MB) and generated on demand, never committed.
"""

import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_zoo as zoo  # noqa: E402


class ConvNet(nn.Module):
    """ResNet/MobileNet pieces: stem 7x7/2 on 3 channels, BN, max pool, a residual 3x3 pair,
    a depthwise-separable block, a grouped conv, average pool, global pool, linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(24)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.c1 = nn.Conv2d(24, 24, 3, 1, 1)
        self.c2 = nn.Conv2d(24, 24, 3, 1, 1)
        self.dw = nn.Conv2d(24, 24, 3, 2, 1, groups=24)
        self.pw = nn.Conv2d(24, 40, 1)
        self.grouped = nn.Conv2d(40, 40, 3, 1, 1, groups=4)
        self.avg = nn.AvgPool2d(2, 2)
        self.fc = nn.Linear(40, 13)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = torch.relu(x + self.c2(torch.relu(self.c1(x))))
        x = torch.clamp(self.pw(torch.relu(self.dw(x))), 0.0, 6.0)  # ReLU6, as MobileNetV2
        x = self.avg(torch.relu(self.grouped(x)))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class Mlp(nn.Module):
    """Linear layers of odd sizes (Gemm with transB), ReLU, Tanh, a residual."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(37, 129)
        self.b = nn.Linear(129, 65)
        self.c = nn.Linear(65, 37)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return torch.tanh(self.c(torch.relu(self.b(h)))) + x


class BatchedMatMul(nn.Module):
    """Batched products with broadcasting and a transposed operand, scaled, soft-maxed."""

    def forward(self, a, b):
        s = torch.matmul(a, b.transpose(-1, -2)) * 0.125
        return torch.matmul(torch.softmax(s, dim=-1), b)


class MhaBlock(nn.Module):
    """torchvision ViT's attention: nn.MultiheadAttention (one packed QKV projection, heads
    folded into the batch), batch-first, after a LayerNorm, with a residual; 50 tokens."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(96)
        self.attn = nn.MultiheadAttention(96, 3, batch_first=True)

    def forward(self, x):
        h = self.ln(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        return x + a


class Conv1dNet(nn.Module):
    """An audio front end (oww/silero-like): 1-D convolutions with strides, padding, dilation, a
    depthwise and a grouped one, BatchNorm, ReLU, a residual, 1-D max/average pools, a global
    average pool and a linear head. kiln runs them as 2-D convolutions with H = 1 (NCHW or NHWC)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv1d(3, 24, 5, 2, 2, bias=False)
        self.bn = nn.BatchNorm1d(24)
        self.c1 = nn.Conv1d(24, 24, 3, 1, 2, dilation=2)
        self.dw = nn.Conv1d(24, 24, 3, 1, 1, groups=24)
        self.grouped = nn.Conv1d(24, 36, 3, 2, 1, groups=3)
        self.pool = nn.MaxPool1d(3, 2, 1)
        self.avg = nn.AvgPool1d(2, 2)
        self.fc = nn.Linear(36, 11)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = torch.relu(x + self.dw(torch.relu(self.c1(x))))
        x = self.avg(torch.relu(self.grouped(x)))
        return self.fc(x.mean(dim=2))


class Conv3dNet(nn.Module):
    """Video/volume pieces: 3-D convolutions (stride, padding, groups, bias), ReLU, a residual,
    3-D max pool and a transposed 3-D convolution (kiln's direct N-D kernels)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(3, 12, 3, (1, 2, 2), 1)
        self.c2 = nn.Conv3d(12, 12, 3, 1, 1, groups=3)
        self.pool = nn.MaxPool3d(2, 2)
        self.up = nn.ConvTranspose3d(12, 5, 2, 2)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(x + self.c2(x))
        return self.up(self.pool(x))


class LayerNormMlp(nn.Module):
    """LayerNorms as TorchScript writes them before opset 17 (ReduceMean, Sub, Pow, ReduceMean,
    Add, Sqrt, Div, Mul, Add: kiln-fuse-layernorm), one over the last two axes without affine
    parameters, and T5's RMSNorm with a residual, between odd-sized Linear layers and a GELU."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(37, 72)
        self.ln1 = nn.LayerNorm(72)
        self.fc2 = nn.Linear(72, 40)
        self.ln2 = nn.LayerNorm([5, 40], elementwise_affine=False)

        self.rms_weight = nn.Parameter(torch.rand(40) + 0.5)

    def forward(self, x):
        h = self.ln1(self.fc1(x))
        h = self.fc2(nn.functional.gelu(h))
        # T5's RMSNorm (T5LayerNorm): x * rsqrt(mean(x^2) + eps) * w, then the residual.
        r = self.rms_weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)) + h
        return self.ln2(r)


def bert_small():
    c = zoo.BertConfig(vocab_size=101, hidden=96, layers=2, heads=3, ffn=200, max_positions=64)
    return zoo.BertModel(c)


def gpt2_small():
    c = zoo.GPT2Config(vocab_size=97, n_embd=96, n_layer=2, n_head=3, n_ctx=64)
    return zoo.GPT2LMHead(c)


def cases():
    ids = lambda b, s, hi: torch.randint(0, hi, (b, s), dtype=torch.long)  # noqa: E731
    mask = torch.ones(3, 37, dtype=torch.long)
    mask[:, 30:] = 0
    return {
        "convnet": (ConvNet, (torch.randn(2, 3, 45, 39),), ["x"], ["y"]),
        "conv1d": (Conv1dNet, (torch.randn(2, 3, 203),), ["x"], ["y"]),
        "conv3d": (Conv3dNet, (torch.randn(2, 3, 6, 13, 11),), ["x"], ["y"]),
        "mlp": (Mlp, (torch.randn(33, 37),), ["x"], ["y"]),
        "layernorm_opset14": (LayerNormMlp, (torch.randn(3, 5, 37) * 4 + 2,), ["x"], ["y"]),
        "batched_matmul": (BatchedMatMul, (torch.randn(2, 3, 17, 40), torch.randn(3, 24, 40)), ["a", "b"], ["y"]),
        "mha": (MhaBlock, (torch.randn(3, 50, 96),), ["x"], ["y"]),
        "bert_small": (bert_small, (ids(3, 37, 101), mask), ["input_ids", "attention_mask"], ["last_hidden_state"]),
        "gpt2_small": (gpt2_small, (ids(1, 29, 97),), ["input_ids"], ["logits"]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="build/models/cases")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, (build, inputs, in_names, out_names) in cases().items():
        if args.only and name not in args.only.split(","):
            continue
        torch.manual_seed(0)
        model = build().eval()
        zoo._randomize_batchnorm(model)
        zoo._break_ties(model)
        path = os.path.join(args.out, name + ".onnx")
        with torch.no_grad():
            opset = 14 if name.endswith("_opset14") else zoo.OPSET  # (LayerNormalization needs 17)
            torch.onnx.export(model, inputs, path, opset_version=opset, do_constant_folding=True,
                              input_names=in_names, output_names=out_names, **zoo._export_kwargs())
        print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
