"""Kernels to export and small C programs compiled with gcc against exported libraries, with arrays passed
through raw files (shared by the export tests of the driver and of the graph)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

import tesched as ts
from tesched.driver.kernel import Kernel
from tesched.tools.demo import DemoSizes, declare_conv_relu, schedule_conv_relu

SIZES = DemoSizes(batch=1, channels=3, height=6, width=8, n=0, repeat=1)

# C helpers every test program starts with: read and write float32 files, print a call's status.
C_PRELUDE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((unused)) void *load(const char *path, size_t bytes) {
  FILE *f = fopen(path, "rb");
  void *p = malloc(bytes ? bytes : 1);
  if (f == NULL || p == NULL || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
  fclose(f);
  return p;
}

static __attribute__((unused)) void save(const char *path, const void *p, size_t bytes) {
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
  fclose(f);
}
"""


def conv_relu_kernel(name: str = "conv_relu", target: str | None = None) -> Kernel:
    """relu(conv2d 3x3, padding 1) on SIZES, fused, as the demo schedules it: arguments data, weight, relu."""
    net = declare_conv_relu(SIZES)
    schedule = schedule_conv_relu(net, "fused, pad at tile")
    return ts.build(schedule, [net.data, net.weight, net.relu], name=name, target=target)


def outer_sum_kernel(name: str = "outer_sum") -> Kernel:
    """R[i] = sum_k V[i] * V[k] through an (n, n) intermediate on the heap: symbolic size n."""
    n = ts.var("n")
    V = ts.placeholder((n,), name="V")
    outer = ts.compute((n, n), lambda i, j: V[i] * V[j], name="outer")
    k = ts.reduce_axis((0, n), name="k")
    R = ts.compute((n,), lambda i: ts.sum(outer[i, k], axis=k), name="R")
    return ts.build(ts.create_schedule(R.op), [V, R], name=name)


def compile_program(source: str, directory: Path, library: Path, static: bool = False) -> Path:
    """Compile C ``source`` (after :data:`C_PRELUDE`) against ``library`` (header beside it) into an
    executable in ``directory``."""
    (directory / "main.c").write_text(C_PRELUDE + source)
    exe = directory / "main"
    link = [str(library), "-fopenmp", "-lm"] if static else [str(library), f"-Wl,-rpath,{library.parent}"]
    done = subprocess.run(["gcc", "-O1", "-pthread", "-Wall", "-Werror", "-I", str(library.parent),
                           str(directory / "main.c"), "-o", str(exe), *link], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return exe


def run_program(exe: Path, *args: object) -> subprocess.CompletedProcess:
    """Run a compiled test program; it must exit with status 0."""
    done = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def write(directory: Path, name: str, array: np.ndarray) -> Path:
    path = directory / name
    path.write_bytes(np.ascontiguousarray(array).tobytes())
    return path


def read(path: Path, shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return np.frombuffer(path.read_bytes(), dtype).reshape(shape)
