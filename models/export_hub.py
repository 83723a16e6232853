#!/usr/bin/env python3
"""Models as other people's exporters write them (issue 25: fusions must fire on what real
exporters produce, not only on the zoo's own export).

Hugging Face transformers' BertModel and GPT2Model and torchvision's EfficientNet-B0, built from
their configs with random weights (no download), exported by PyTorch's two ONNX exporters:
``torch.onnx.export(dynamo=True)`` (the torch.export-based one, the default since PyTorch 2.9)
and ``dynamo=False`` (TorchScript). Needs torch >= 2.6, transformers, torchvision and onnxscript
(the GPU host has them; the development host does not).

    python3 models/export_hub.py --out DIR [--size small|base] [--only bert_dynamo,...]

``--size small`` (the default) keeps the architecture (head dim 64, the same ops) with 2 layers
and a small vocabulary, so the files are a few MB and can travel; ``base`` is BERT-base / GPT-2
small as published (for timing). Each model gets symbolic ``batch`` and ``sequence`` axes.
"""
import argparse
import os
import sys
import time


def bert(size):
    from transformers import BertConfig, BertModel
    if size == "base":
        cfg = BertConfig()
    else:
        cfg = BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=1024, max_position_embeddings=128)
    return BertModel(cfg).eval(), "text"


def gpt2(size):
    from transformers import GPT2Config, GPT2Model
    if size == "base":
        cfg = GPT2Config()
    else:
        cfg = GPT2Config(vocab_size=1000, n_embd=256, n_layer=2, n_head=4, n_positions=128)
    return GPT2Model(cfg).eval(), "text"


def efficientnet(size):
    import torchvision
    return torchvision.models.efficientnet_b0(num_classes=1000 if size == "base" else 10).eval(), "image"


MODELS = {"bert": bert, "gpt2": gpt2, "efficientnet_b0": efficientnet}


def export(name, maker, exporter, size, out):
    import torch
    torch.manual_seed(0)
    model, kind = maker(size)
    path = os.path.join(out, "%s_%s.onnx" % (name, exporter))
    t0 = time.time()
    if kind == "text":
        class Wrapped(torch.nn.Module):  # one plain tensor output
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        module = Wrapped(model).eval()
        args = (torch.randint(0, 1000, (2, 32)), torch.ones(2, 32, dtype=torch.int64))
        names, out_names = ["input_ids", "attention_mask"], ["last_hidden_state"]
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "last_hidden_state": {0: "batch", 1: "sequence"}}
    else:
        module, args = model, (torch.randn(2, 3, 224, 224),)
        names, out_names = ["input"], ["logits"]
        axes = {"input": {0: "batch"}, "logits": {0: "batch"}}
    with torch.no_grad():
        if exporter == "dynamo":
            longest = 512 if size == "base" else 128  # (the position tables' length)
            if kind == "text":  # one Dim object per name, shared by the inputs
                batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("sequence", min=2, max=longest)
                shapes = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}}
            else:
                shapes = {"x": {0: torch.export.Dim("batch", min=1, max=64)}}
            torch.onnx.export(module, args, path, input_names=names, output_names=out_names, dynamo=True,
                              dynamic_shapes=shapes, opset_version=18, external_data=False)
        else:
            torch.onnx.export(module, args, path, input_names=names, output_names=out_names, dynamo=False,
                              dynamic_axes=axes, opset_version=17, do_constant_folding=True)
    print("wrote %s  %.1f MiB  %.1f s" % (path, os.path.getsize(path) / 2**20, time.time() - t0), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--size", choices=["small", "base"], default="small")
    p.add_argument("--only", default="", help="comma-separated NAME_EXPORTER (bert_dynamo, gpt2_torchscript, ...)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    failed = 0
    for name, maker in MODELS.items():
        for exporter in ("dynamo", "torchscript"):
            if only and "%s_%s" % (name, exporter) not in only:
                continue
            try:
                export(name, maker, exporter, a.size, a.out)
            except Exception as e:  # one exporter failing must not hide the others
                failed += 1
                print("FAILED %s_%s: %s: %s" % (name, exporter, type(e).__name__, str(e)[:2000]), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
