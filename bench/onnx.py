#!/usr/bin/python3
"""bench/onnx.py — the "onnx" section of `make bench`: a ResNet-18 (11.7 M
parameters, random weights, fixed seed, built here in plain PyTorch: the
torchvision layout without torchvision) exported with torch.onnx.export
(opset 17, batch 1, 3 x 224 x 224), then
  - `tir import` of it: the median wall time of --imports runs (process
    start and writing the .tir and .safetensors included) and the peak
    resident memory (/usr/bin/time's maxrss, when it is installed);
  - the imported program timed by bench/tir_time (parse excluded, its input
    the benchmark's deterministic data) against PyTorch eager on the same
    weights and the same data, both at --threads threads, medians.
Prints "key value" lines for bench/run.sh.  Not a test: it checks nothing
about time.  Needs python3-torch and python3-onnx.

  onnx.py --tir TIR --tir-time TIR_TIME [--threads N] [--runs N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")

TIR_HASH = 2654435761  # the data of bench/tir_time.c (see there)


def data(shape, k, lo, hi):
    import numpy as np
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    h = (i * np.uint64(TIR_HASH) + np.uint64(k * 40503)) % np.uint64(1 << 32)
    return (lo + (hi - lo) * (h.astype(np.float64) / 2.0 ** 32)).astype(np.float32).reshape(shape)


def resnet18():
    import torch.nn as nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(self.b1(self.c1(x)).relu()))
            return (y + (self.down(x) if self.down is not None else x)).relu()

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            return self.fc(self.pool(self.layers(self.stem(x))).flatten(1))

    return ResNet18()


def wall_and_rss(cmd):
    """(seconds, peak RSS in MiB or None) of one run of cmd.  The peak is
    /usr/bin/time's (%M): a child's maxrss from wait4 would count this
    Python process's pages, which the child has until its exec."""
    timer = ["/usr/bin/time", "-f", "maxrss_kb %M"] if os.path.exists("/usr/bin/time") else []
    t0 = time.perf_counter()
    r = subprocess.run(timer + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), r.stderr.strip()))
    kb = [ln.split()[1] for ln in r.stderr.splitlines() if ln.startswith("maxrss_kb ")]
    return dt, (int(kb[-1]) / 1024.0 if kb else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tir", required=True)
    ap.add_argument("--tir-time", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--imports", type=int, default=5)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_missing python3-torch")
        return 0
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    net = resnet18().eval()
    x = torch.from_numpy(data((1, 3, 224, 224), 0, -1.0, 1.0))
    with tempfile.TemporaryDirectory(prefix="tir-bench-onnx.") as tmp:
        model = os.path.join(tmp, "resnet18.onnx")
        with torch.no_grad():
            torch.onnx.export(net, x, model, opset_version=17, input_names=["input"], output_names=["logits"])
        print("model_bytes %d" % os.path.getsize(model))
        print("params %d" % sum(p.numel() for p in net.parameters()))
        prog = os.path.join(tmp, "resnet18.tir")
        times, rss = [], []
        for _ in range(a.imports):
            dt, mb = wall_and_rss([a.tir, "import", model, "-o", prog])
            times.append(dt * 1e3)
            rss.append(mb)
        print("import_ms_median %.1f" % statistics.median(times))
        print("import_ms_min %.1f" % min(times))
        if None not in rss:
            print("import_peak_mib %.1f" % max(rss))
        print("weights_mib %.1f" % (os.path.getsize(os.path.join(tmp, "resnet18.safetensors")) / 2 ** 20))
        r = subprocess.run([os.path.abspath(a.tir_time), "--threads", str(a.threads), "--runs", str(a.runs), "--range", "-1", "1",
                            "--files", "--out", "logits", prog], capture_output=True, text=True, cwd=tmp)
        if r.returncode:
            print("tir_time failed: " + r.stderr.strip(), file=sys.stderr)
        for line in r.stdout.splitlines():
            k, _, v = line.partition(" ")
            if k in ("ms_median", "sum", "cpu_ms_median"):
                print("tir_%s %s" % (k, v))
    with torch.no_grad():
        for _ in range(2):
            net(x)
        t, c, start = [], [], time.perf_counter()
        while len(t) < a.runs or time.perf_counter() - start < 1.0:
            t0, c0 = time.perf_counter(), time.process_time()
            y = net(x)
            t.append((time.perf_counter() - t0) * 1e3)
            c.append((time.process_time() - c0) * 1e3)
    print("torch_ms_median %.4f" % statistics.median(t))
    print("torch_cpu_ms_median %.4f" % statistics.median(c))
    print("torch_sum %.9g" % float(y.double().sum()))
    print("torch_version %s" % torch.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
