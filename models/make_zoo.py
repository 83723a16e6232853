#!/usr/bin/env python3
"""Generate kiln's model zoo as ONNX files.

Every model is exported with opset 17, static input shapes, fp32 and random
weights from a fixed seed (no pretrained weights are downloaded), in eval
mode, through the TorchScript-based exporter (``torch.onnx.export`` with
``do_constant_folding=True``; ``dynamo=False`` on torch versions that have
the dynamo exporter).

    python3 models/make_zoo.py                       # all models -> build/models
    python3 models/make_zoo.py --out /tmp/zoo --only resnet18,bert_base_b32_s128
    python3 models/make_zoo.py --only resnet50 --batch 8   # -> resnet50_b8.onnx
    python3 models/make_zoo.py --list

The files are large (the transformer models hold several hundred MB of
weights) and are generated on demand; they are never committed.
"""

import argparse
import collections
import inspect
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17
SEED = 0


# --------------------------------------------------------------------------
# torchvision models
# --------------------------------------------------------------------------

def _torchvision(name):
    import torchvision.models as tvm
    fn = getattr(tvm, name)
    try:
        model = fn(weights=None)          # torchvision >= 0.13
    except TypeError:
        model = fn(pretrained=False)
    _randomize_batchnorm(model)
    _break_ties(model)
    return model


def _break_ties(module, std=0.02):
    """Add noise to parameters initialised to a constant (zero biases, LayerNorm
    ones): the exporter deduplicates identical initializers into Identity nodes,
    which no trained checkpoint would produce."""
    with torch.no_grad():
        for p in module.parameters():
            if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.add_(torch.randn_like(p) * std)


def _randomize_batchnorm(module):
    """Give BatchNorm layers trained-looking statistics.

    Freshly initialised BN is the identity (1, 0, mean 0, var 1); the exporter
    folds BN into the preceding Conv in eval mode, and identical folded biases
    would be deduplicated into Identity nodes no real checkpoint produces.
    """
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.uniform_(0.8, 1.2)
                m.bias.normal_(0.0, 0.05)
                m.running_mean.normal_(0.0, 0.05)
                m.running_var.uniform_(0.8, 1.2)


def build_resnet18():
    return _torchvision("resnet18")


def build_resnet50():
    return _torchvision("resnet50")


def build_mobilenetv2():
    return _torchvision("mobilenet_v2")


def build_vit_b16():
    return _torchvision("vit_b_16")


def _init_like_hf(module, std=0.02):
    """HF-style init: N(0, 0.02) weights and embeddings, LayerNorm around 1/0.

    Keeps the activations in the range real checkpoints have, which matters
    for later fp16/bf16 accuracy tests.  Biases and LayerNorm parameters get a
    little noise instead of exact 0/1, like a trained checkpoint: identical
    initializers would be deduplicated by the exporter into Identity nodes.
    """
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Linear, Conv1D)):
                m.weight.normal_(0.0, std)
                m.bias.normal_(0.0, std)
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, std)
            elif isinstance(m, nn.LayerNorm):
                m.weight.normal_(1.0, std)
                m.bias.normal_(0.0, std)


# --------------------------------------------------------------------------
# BERT-base encoder (plain torch, written the way HF's BertModel is so the
# exported graph has the same Shape/Gather/Concat/Reshape/Transpose patterns)
# --------------------------------------------------------------------------

@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    ffn: int = 3072
    max_positions: int = 512
    type_vocab: int = 2
    eps: float = 1e-12


class BertEmbeddings(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden)
        self.position_embeddings = nn.Embedding(c.max_positions, c.hidden)
        self.token_type_embeddings = nn.Embedding(c.type_vocab, c.hidden)
        self.LayerNorm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.register_buffer("position_ids",
                             torch.arange(c.max_positions).expand((1, -1)))
        self.register_buffer("token_type_ids",
                             torch.zeros((1, c.max_positions), dtype=torch.long))

    def forward(self, input_ids):
        batch, seq_length = input_ids.size()
        position_ids = self.position_ids[:, :seq_length]
        token_type_ids = self.token_type_ids[:, :seq_length].expand(batch, seq_length)
        x = (self.word_embeddings(input_ids)
             + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(position_ids))
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.num_heads = c.heads
        self.head_size = c.hidden // c.heads
        self.all_head_size = self.num_heads * self.head_size
        self.query = nn.Linear(c.hidden, self.all_head_size)
        self.key = nn.Linear(c.hidden, self.all_head_size)
        self.value = nn.Linear(c.hidden, self.all_head_size)

    def transpose_for_scores(self, x):
        new_shape = x.size()[:-1] + (self.num_heads, self.head_size)
        x = x.view(new_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden, mask):
        q = self.transpose_for_scores(self.query(hidden))
        k = self.transpose_for_scores(self.key(hidden))
        v = self.transpose_for_scores(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.head_size)
        scores = scores + mask
        probs = F.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        new_shape = ctx.size()[:-2] + (self.all_head_size,)
        return ctx.view(new_shape)


class BertLayer(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attn_out = nn.Linear(c.hidden, c.hidden)
        self.attn_ln = nn.LayerNorm(c.hidden, eps=c.eps)
        self.intermediate = nn.Linear(c.hidden, c.ffn)
        self.output = nn.Linear(c.ffn, c.hidden)
        self.out_ln = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, x, mask):
        a = self.attention(x, mask)
        x = self.attn_ln(self.attn_out(a) + x)
        h = F.gelu(self.intermediate(x))          # exact (erf) GELU
        return self.out_ln(self.output(h) + x)


class BertModel(nn.Module):
    def __init__(self, c: BertConfig = BertConfig()):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layers = nn.ModuleList([BertLayer(c) for _ in range(c.layers)])
        _init_like_hf(self)

    def forward(self, input_ids, attention_mask):
        # [B, S] -> [B, 1, 1, S], additive: 0 where attended, -10000 where masked.
        ext = attention_mask[:, None, None, :].to(torch.float32)
        ext = (1.0 - ext) * -10000.0
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, ext)
        return x


def build_bert_base():
    return BertModel()


# --------------------------------------------------------------------------
# GPT-2 small decoder, prefill (plain torch, HF GPT2LMHeadModel-shaped)
# --------------------------------------------------------------------------

@dataclass
class GPT2Config:
    vocab_size: int = 50257
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_ctx: int = 1024
    eps: float = 1e-5


class Conv1D(nn.Module):
    """HF GPT-2's Conv1D: a linear layer with weight stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                       * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c: GPT2Config):
        super().__init__()
        self.n_head = c.n_head
        self.head_dim = c.n_embd // c.n_head
        self.split_size = c.n_embd
        self.c_attn = Conv1D(c.n_embd, 3 * c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((c.n_ctx, c.n_ctx), dtype=torch.bool))
            .view(1, 1, c.n_ctx, c.n_ctx))

    def _split_heads(self, x):
        new_shape = x.size()[:-1] + (self.n_head, self.head_dim)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        new_shape = x.size()[:-2] + (self.n_head * self.head_dim,)
        return x.view(new_shape)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.split_size, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        q_len, k_len = q.size(-2), k.size(-2)
        causal = self.bias[:, :, k_len - q_len:k_len, :k_len]
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
        w = torch.where(causal, w, mask_value)
        w = F.softmax(w, dim=-1)
        return self.c_proj(self._merge_heads(torch.matmul(w, v)))


class GPT2MLP(nn.Module):
    def __init__(self, c: GPT2Config):
        super().__init__()
        self.c_fc = Conv1D(c.n_embd, 4 * c.n_embd)
        self.c_proj = Conv1D(4 * c.n_embd, c.n_embd)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c: GPT2Config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, eps=c.eps)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd, eps=c.eps)
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LMHead(nn.Module):
    def __init__(self, c: GPT2Config = GPT2Config()):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_ctx, c.n_embd)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd, eps=c.eps)
        _init_like_hf(self)

    def forward(self, input_ids):
        seq = input_ids.size(-1)
        position_ids = torch.arange(0, seq, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return torch.matmul(x, self.wte.weight.t())    # tied LM head


def build_gpt2_small():
    return GPT2LMHead()


# --------------------------------------------------------------------------
# the zoo
# --------------------------------------------------------------------------

IMAGE = (3, 224, 224)


@dataclass
class Entry:
    name: str                       # table key (= file stem at default batch)
    builder: Callable[[], nn.Module]
    batch: int
    # (input name, shape without batch dim, dtype, integer high bound or None)
    inputs: List[Tuple[str, Tuple[int, ...], torch.dtype, int]]
    outputs: List[str]
    stem: str                       # file stem with {b} = "" or "_b<N>"
    note: str
    # Symbolic axes to trace with (HF-exporter style), pinned to the static
    # sizes afterwards; None = trace fully static.  See export().
    dynamic_axes: dict = None
    # False: keep the symbolic axes in the file (an engine with dynamic shapes is built from it
    # with --min/--opt/--max-shapes).
    pin: bool = True

    def file_stem(self, batch):
        return self.stem.format(b="" if batch == 1 else f"_b{batch}")


ZOO = [
    Entry("resnet18", build_resnet18, 1,
          [("input", IMAGE, torch.float32, None)], ["logits"],
          "resnet18{b}", "torchvision resnet18"),
    Entry("resnet50", build_resnet50, 1,
          [("input", IMAGE, torch.float32, None)], ["logits"],
          "resnet50{b}", "torchvision resnet50"),
    Entry("resnet50_b32", build_resnet50, 32,
          [("input", IMAGE, torch.float32, None)], ["logits"],
          "resnet50{b}", "torchvision resnet50"),
    Entry("mobilenetv2_b32", build_mobilenetv2, 32,
          [("input", IMAGE, torch.float32, None)], ["logits"],
          "mobilenetv2{b}", "torchvision mobilenet_v2"),
    Entry("vit_b16_b32", build_vit_b16, 32,
          [("input", IMAGE, torch.float32, None)], ["logits"],
          "vit_b16{b}", "torchvision vit_b_16",
          {"input": {0: "batch"}, "logits": {0: "batch"}}),
    Entry("bert_base_b32_s128", build_bert_base, 32,
          [("input_ids", (128,), torch.int64, 30522),
           ("attention_mask", (128,), torch.int64, 2)],
          ["last_hidden_state"],
          "bert_base{b}_s128", "BERT-base encoder, plain torch",
          {"input_ids": {0: "batch", 1: "sequence"},
           "attention_mask": {0: "batch", 1: "sequence"},
           "last_hidden_state": {0: "batch", 1: "sequence"}}),
    Entry("gpt2_small_s512", build_gpt2_small, 1,
          [("input_ids", (512,), torch.int64, 50257)], ["logits"],
          "gpt2_small{b}_s512", "GPT-2 small prefill, plain torch",
          {"input_ids": {0: "batch", 1: "sequence"},
           "logits": {0: "batch", 1: "sequence"}}),
]
# The same models with their batch (and sequence) axes left symbolic, for dynamic shapes.
ZOO += [
    Entry("resnet50_dyn", build_resnet50, 1,
          [("input", IMAGE, torch.float32, None)], ["logits"],
          "resnet50_dyn{b}", "torchvision resnet50, dynamic batch",
          {"input": {0: "batch"}, "logits": {0: "batch"}}, pin=False),
    Entry("bert_base_dyn", build_bert_base, 1,
          [("input_ids", (128,), torch.int64, 30522),
           ("attention_mask", (128,), torch.int64, 2)],
          ["last_hidden_state"],
          "bert_base_dyn{b}", "BERT-base encoder, dynamic batch and sequence",
          {"input_ids": {0: "batch", 1: "sequence"},
           "attention_mask": {0: "batch", 1: "sequence"},
           "last_hidden_state": {0: "batch", 1: "sequence"}}, pin=False),
]
ZOO_BY_NAME = {e.name: e for e in ZOO}


def example_inputs(entry, batch):
    g = torch.Generator().manual_seed(SEED)
    args = []
    for name, shape, dtype, high in entry.inputs:
        full = (batch,) + tuple(shape)
        if dtype.is_floating_point:
            args.append(torch.randn(full, generator=g, dtype=dtype))
        elif name == "attention_mask":
            m = torch.ones(full, dtype=dtype)
            m[:, full[1] * 3 // 4:] = 0     # some padding, like a real batch
            args.append(m)
        else:
            args.append(torch.randint(0, high, full, generator=g, dtype=dtype))
    return tuple(args)


def _export_kwargs():
    kw = {}
    params = inspect.signature(torch.onnx.export).parameters
    if "dynamo" in params:              # torch >= 2.5: keep the TorchScript exporter
        kw["dynamo"] = False
    return kw


def pin_dynamic_axes(path, sizes):
    """Replace the symbolic dims of the graph inputs/outputs by static sizes.

    The transformer models are traced the way HF's exporter traces them, with
    symbolic batch/sequence axes, so the graph keeps the Shape -> Gather ->
    Unsqueeze -> Concat -> Reshape chains instead of having them folded to
    constants; the inputs are then pinned to static shapes (like onnxruntime's
    make_dynamic_shape_fixed) and the stale symbolic value_info is dropped.
    """
    import onnx
    model = onnx.load(path)
    g = model.graph
    for vi in list(g.input) + list(g.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                d.dim_value = sizes[d.dim_param]
    del g.value_info[:]
    onnx.save(model, path)


def export(entry, batch, path):
    """Build the model and export it; returns (build seconds, export seconds)."""
    t0 = time.perf_counter()
    torch.manual_seed(SEED)
    model = entry.builder().eval()
    build_s = time.perf_counter() - t0
    # torch >= 2.x: keep nn.MultiheadAttention (ViT) off its fused fast path,
    # which the ONNX exporter cannot export.
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        mha.set_fastpath_enabled(False)
    # A symbolic batch axis is traced at batch 1 (a batch-32 CPU forward pass of ViT or BERT takes
    # minutes on a small machine) and pinned to `batch` afterwards: the graph is the same.
    dynamic_batch = entry.dynamic_axes and any(
        0 in entry.dynamic_axes.get(name, {}) for name, *_ in entry.inputs)
    args = example_inputs(entry, 1 if dynamic_batch else batch)
    t0 = time.perf_counter()
    torch.onnx.export(
        model, args, path,
        export_params=True,
        opset_version=OPSET,
        do_constant_folding=True,
        input_names=[i[0] for i in entry.inputs],
        output_names=entry.outputs,
        dynamic_axes=entry.dynamic_axes,
        **_export_kwargs())
    if entry.dynamic_axes and entry.pin:
        sym = {}
        for name, shape, _, _ in entry.inputs:
            full = (batch,) + tuple(shape)
            for axis, sname in entry.dynamic_axes.get(name, {}).items():
                sym[sname] = full[axis]
        pin_dynamic_axes(path, sym)
    return build_s, time.perf_counter() - t0


def op_histogram(model):
    return collections.Counter(n.op_type for n in model.graph.node)


def check(path):
    import onnx
    model = onnx.load(path)
    onnx.checker.check_model(model)
    return model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/models", help="output directory")
    ap.add_argument("--only", default="",
                    help="comma-separated model names (see --list)")
    ap.add_argument("--batch", type=int, default=None,
                    help="override the batch size (file name gets _b<N>)")
    ap.add_argument("--list", action="store_true", help="list models and exit")
    ap.add_argument("--no-check", action="store_true",
                    help="skip onnx.load + checker + op histogram")
    ap.add_argument("--skip-existing", action="store_true",
                    help="keep models already in --out (files are written whole: temp + rename)")
    a = ap.parse_args(argv)

    if a.list:
        for e in ZOO:
            shapes = ", ".join(f"{n} {str(dt).replace('torch.', '')}"
                               f"[{','.join(map(str, (e.batch,) + s))}]"
                               for n, s, dt, _ in e.inputs)
            print(f"{e.name:20s} {e.file_stem(e.batch) + '.onnx':26s} {shapes}  ({e.note})")
        return 0

    names = [n for n in a.only.split(",") if n] or [e.name for e in ZOO]
    unknown = [n for n in names if n not in ZOO_BY_NAME]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)}; see --list")
    if a.batch is not None and a.batch < 1:
        ap.error("--batch must be >= 1")

    os.makedirs(a.out, exist_ok=True)
    print(f"torch {torch.__version__}, opset {OPSET}, out {a.out}", flush=True)
    done = set()
    for n in names:
        e = ZOO_BY_NAME[n]
        batch = a.batch if a.batch is not None else e.batch
        stem = e.file_stem(batch)
        if stem in done:
            continue
        done.add(stem)
        path = os.path.join(a.out, stem + ".onnx")
        if a.skip_existing and os.path.exists(path):
            print(f"kept {path}", flush=True)
            continue
        # Write to a temporary name so an interrupted export never leaves a partial model.
        tmp = path + ".partial"
        build_s, export_s = export(e, batch, tmp)
        os.replace(tmp, path)
        size = os.path.getsize(path)
        print(f"wrote {path}  {size / 2**20:.1f} MiB  export {export_s:.1f} s"
              f"  (model build {build_s:.1f} s)", flush=True)
        if not a.no_check:
            model = check(path)
            hist = op_histogram(model)
            print(f"  checker ok; {sum(hist.values())} nodes: "
                  + ", ".join(f"{k}:{v}" for k, v in sorted(hist.items())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
