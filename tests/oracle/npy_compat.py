#!/usr/bin/python3
"""npy_compat.py — NumPy's side of the .npy compatibility check.

    npy_compat.py DIR              write .npy files with numpy (every dtype tir
                                   reads, rank 0 to 3, a zero-size array, a
                                   version 2.0 file) and a two-tensor
                                   .safetensors file into DIR; print one line
                                   per file: name dtype shape first values
    npy_compat.py --check FILE...  load files tir wrote with numpy.load and
                                   print the same kind of line for each

The lines of the two modes have one format, so a harness can load the
written files with tir, save them again and diff the --check output against
the write output.  Not a test by itself: it only reports what NumPy sees.
"""
import json
import os
import struct
import sys

import numpy as np

CASES = [
    ("f32_2x3", np.arange(6, dtype="<f4").reshape(2, 3) / 4),
    ("f64_scalar", np.array(-2.5, dtype="<f8")),
    ("i32_5", np.array([-3, -1, 0, 7, 2**31 - 1], dtype="<i4")),
    ("i64_2x1x2", np.array([[[-(2**63), 1]], [[2, 2**62]]], dtype="<i8")),
    ("bool_4", np.array([True, False, False, True])),
    ("f32_0x3", np.zeros((0, 3), dtype="<f4")),
]


def describe(name, a):
    flat = a.reshape(-1)[:6].tolist()
    shape = "[" + ", ".join(str(d) for d in a.shape) + "]"
    return "%s %s %s %s" % (name, a.dtype.name, shape, flat)


def write(d):
    os.makedirs(d, exist_ok=True)
    for name, a in CASES:
        np.save(os.path.join(d, name + ".npy"), a)
        print(describe(name + ".npy", a))
    a = np.arange(12, dtype="<f8").reshape(3, 4) - 5.5
    with open(os.path.join(d, "v2_f64_3x4.npy"), "wb") as f:
        np.lib.format.write_array(f, a, version=(2, 0))
    print(describe("v2_f64_3x4.npy", a))

    # safetensors by hand: u64 LE header size, JSON, data (no extra package)
    w = np.arange(4, dtype="<f4").reshape(2, 2)
    b = np.array([7, -8, 9], dtype="<i8")
    header = {
        "__metadata__": {"format": "np"},
        "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "b": {"dtype": "I64", "shape": [3], "data_offsets": [16, 40]},
    }
    h = json.dumps(header).encode()
    with open(os.path.join(d, "two.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + w.tobytes() + b.tobytes())
    print(describe("two.safetensors:w", w))
    print(describe("two.safetensors:b", b))


def check(paths):
    status = 0
    for p in paths:
        try:
            a = np.load(p, allow_pickle=False)
        except Exception as e:  # report and go on: one line per file
            print("%s ERROR %s" % (os.path.basename(p), e))
            status = 1
            continue
        print(describe(os.path.basename(p), a))
    return status


def main(argv):
    if len(argv) >= 2 and argv[0] == "--check":
        return check(argv[1:])
    if len(argv) == 1 and not argv[0].startswith("-"):
        write(argv[0])
        return 0
    sys.stderr.write("usage: npy_compat.py DIR | npy_compat.py --check FILE...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
