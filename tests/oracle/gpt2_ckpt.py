#!/usr/bin/python3
"""gpt2_ckpt.py — writes samples/gpt2.safetensors: random weights for
samples/gpt2.tir, a 12-layer GPT-2-shaped decoder (vocabulary 64, context
16, width 32, 4 heads, MLP 128), stored as bf16 under GPT-2's own tensor
names (h.{i}.attn.c_attn.weight is [in, out], as GPT-2's Conv1D keeps it),
plus the 16 input tokens as I64.  Deterministic (seed 2): the file in the
repository is this script's output, which samples_check.py verifies.

    gpt2_ckpt.py [OUT]        (default samples/gpt2.safetensors)
"""
import json
import struct
import sys

import numpy as np

V, T, D, FF, LAYERS = 64, 16, 32, 128, 12


def bf16_bits(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def tensors():
    r = np.random.default_rng(2)
    t = {"wte.weight": r.standard_normal((V, D)) * 0.5,
         "wpe.weight": r.standard_normal((T, D)) * 0.1}
    for i in range(LAYERS):
        p = "h.%d." % i
        t[p + "ln_1.weight"] = 1 + r.standard_normal(D) * 0.1
        t[p + "ln_1.bias"] = r.standard_normal(D) * 0.1
        t[p + "attn.c_attn.weight"] = r.standard_normal((D, 3 * D)) / np.sqrt(D)
        t[p + "attn.c_attn.bias"] = r.standard_normal(3 * D) * 0.1
        t[p + "attn.c_proj.weight"] = r.standard_normal((D, D)) / np.sqrt(D) * 0.5
        t[p + "attn.c_proj.bias"] = r.standard_normal(D) * 0.1
        t[p + "ln_2.weight"] = 1 + r.standard_normal(D) * 0.1
        t[p + "ln_2.bias"] = r.standard_normal(D) * 0.1
        t[p + "mlp.c_fc.weight"] = r.standard_normal((D, FF)) / np.sqrt(D)
        t[p + "mlp.c_fc.bias"] = r.standard_normal(FF) * 0.1
        t[p + "mlp.c_proj.weight"] = r.standard_normal((FF, D)) / np.sqrt(FF) * 0.5
        t[p + "mlp.c_proj.bias"] = r.standard_normal(D) * 0.1
    t["ln_f.weight"] = 1 + r.standard_normal(D) * 0.1
    t["ln_f.bias"] = r.standard_normal(D) * 0.1
    out = {k: ("BF16", v.shape, bf16_bits(v.astype(np.float32)).tobytes()) for k, v in t.items()}
    tok = r.integers(0, V, T).astype(np.int64)
    out["tokens"] = ("I64", tok.shape, tok.tobytes())
    return out


def write(path):
    head, off, blobs = {"__metadata__": {"format": "pt", "by": "tests/oracle/gpt2_ckpt.py"}}, 0, []
    for k, (dt, shape, raw) in tensors().items():
        head[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "samples/gpt2.safetensors")
