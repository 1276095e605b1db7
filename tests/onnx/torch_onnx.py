#!/usr/bin/python3
"""tests/onnx/torch_onnx.py --tir TIR — real architectures from PyTorch
through ONNX: depthwise, grouped and dilated convolutions, a residual CNN
with batch norm (its BatchNormalization nodes
kept: no constant folding) and a two-layer transformer encoder, each
exported with torch.onnx.export (random weights, fixed seeds, opset 17) and
run by `tir run MODEL.onnx`; tir's output must match PyTorch's (rtol 1e-4,
atol 1e-5).  Prints "ok NAME" or "FAIL NAME: WHY" per model, then
"N passed, M failed".  Needs python3-torch and python3-onnx (make
test-torch)."""
import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn

warnings.filterwarnings("ignore")


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.blocks = nn.Sequential(Block(16), Block(16))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = self.blocks(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class Mobile(nn.Module):
    """depthwise (groups = channels), grouped and dilated convolutions"""
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.gr = nn.Conv2d(8, 12, 3, padding=2, dilation=2, groups=4)
        self.c1 = nn.Conv1d(12, 6, 3, dilation=3)

    def forward(self, x):
        y = torch.relu(self.gr(torch.relu(self.dw(x))))
        return self.c1(y.mean(dim=2))


def models():
    torch.manual_seed(0)
    cnn = ResNet().eval()
    for m in cnn.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    yield "resnet_bn", cnn, torch.randn(2, 3, 32, 32), False
    yield "mobile_grouped_dilated", Mobile().eval(), torch.randn(2, 8, 16, 16), True
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0, activation="gelu")
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    yield "transformer_encoder", enc, torch.randn(2, 8, 32), True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tir", default="build/tir")
    a = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="tir-torch-onnx-") as tmp:
        for name, model, x, fold in models():
            path = os.path.join(tmp, name + ".onnx")
            with torch.no_grad():
                want = model(x).numpy()
            # (outside no_grad: the encoder's fused inference path has no export)
            # (PRESERVE: the CNN's batch norms stay BatchNormalization nodes,
            # in inference mode, rather than being folded into the convolutions)
            torch.onnx.export(model, x, path, opset_version=17, input_names=["x"], output_names=["y"],
                              do_constant_folding=fold, training=torch.onnx.TrainingMode.PRESERVE)
            kept = [n.op_type for n in __import__("onnx").load(path).graph.node]
            if name == "resnet_bn" and "BatchNormalization" not in kept:
                print("FAIL %s: the export folded the batch norms away" % name)
                failed += 1
                continue
            np.save(os.path.join(tmp, "x.npy"), x.numpy())
            out = os.path.join(tmp, "y.npy")
            r = subprocess.run([a.tir, "run", path, "--input", "x=" + os.path.join(tmp, "x.npy"),
                                "--save", "y=" + out, "--quiet"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, timeout=120)
            if r.returncode != 0:
                print("FAIL %s: tir run: %s" % (name, r.stderr.strip()[:400]))
                failed += 1
                continue
            got = np.load(out)
            if got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5):
                print("ok %s (max abs diff %.2g)" % (name, float(np.abs(got - want).max())))
                passed += 1
            else:
                print("FAIL %s: output differs (max abs diff %s)" % (
                    name, np.abs(got - want).max() if got.shape == want.shape else got.shape))
                failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
