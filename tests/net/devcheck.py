"""tests/net/devcheck.py — what the several-devices tests share
(devices_test.py, devices_edge_test.py): their counts and checks, running
tir, files in a directory of their own, and the servers' log lines they
wait for.  Each check prints "ok NAME" or "FAIL NAME: WHY"; the script ends
with counts() as its last line (tests/py-suite.sh reads it)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

RUN_LINE = r"^POST /v1/sessions/\S+/run 200 "
IMPORT_LINE = r"^POST /v1/sessions/\S+/import 200 "
EXPORT_LINE = r"^GET /v1/exports/\S+ 200 "


class Checks:
    def __init__(self, tir, prefix):
        self.tir_path = tir
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        sys.stdout.flush()
        return ok

    def tir(self, *args, stdin=None, env=None):
        """tir ARGS (TIR_TOKEN unset unless env sets it): status, stdout, stderr."""
        e = dict(os.environ)
        e.pop("TIR_TOKEN", None)
        e.update(env or {})
        p = subprocess.run([self.tir_path, *args], input=stdin, capture_output=True, timeout=300, env=e)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def npy(self, name, a):
        path = os.path.join(self.tmp, name)
        np.save(path, a)
        return path

    def counts(self):
        """The last line, and the exit status; the files go."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def local_twin(text):
    """The program with every to(...) taken out: what runs on one device."""
    return re.sub(r'to\((\w+), "[a-z0-9:]+"\)', r"\1", text)


def addr(*servers):
    """--remote's list of tirnet.Servers on loopback."""
    return ",".join(f"127.0.0.1:{s.port}" for s in servers)
