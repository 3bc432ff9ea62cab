"""Tutorial 9: deploy without Python. Export a kernel and a whole model as C libraries, call them from C,
======================================================================================================
load them back into Python on a machine without a compiler.

Run it:  python tutorials/09_deploy.py                 (32 x 56 x 56 convolutions; well under a minute)
         python tutorials/09_deploy.py --quick         (4 x 8 x 8, a smoke test; or TESCHED_QUICK=1)
         python tutorials/09_deploy.py --out deploy/   (keep the files it writes there)

tesched compiles into a private cache, through Python. To ship a kernel to a C program, a device without
a compiler, or another machine, export it:

- ``f.export_library("conv_relu.so")`` writes a shared object and ``conv_relu.h`` beside it (``.a`` for a
  static archive). The header declares one plain C function named after the kernel, taking the buffers
  in the build's argument order: ``int conv_relu(const float *data, const float *weight, float *relu);``
  (symbolic sizes follow as ``int64_t``). It returns 0, or an error code and ``conv_relu_last_error()``
  says what went wrong: the checks a Python caller gets (NULL or overlapping arrays, sizes, allocation
  failure) and one more, that the CPU has the instruction-set features the code was compiled for.
- ``f.export_c("out_dir/")`` writes the same as C sources, the runtime headers and a Makefile.
- ``ts.load_module("conv_relu.so")`` gives a Kernel back, with the same argument checks, without a
  compiler; it refuses a library compiled for instructions this CPU lacks, or by a tesched with another
  module ABI, instead of crashing.
- ``exe = G.build(fn, params); exe.export_library("model.so")`` compiles a whole model into one entry
  point running every fused kernel in order, constants included; ``G.load_executable`` loads it back.

Steps: 1. the kernel; 2. export it; 3. call it from C; 4. a static archive and the sources with make;
5. load it back in a process without a compiler; 6. a whole model from C and back; 7. another target;
8. summary. Every step checks its results against NumPy.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

import tesched as ts
from tesched import graph as G
from tesched.driver.manifest import check_host, read_record
from tesched.target import host_features
from tesched.tools.demo import DemoSizes, conv2d_reference, conv_relu_reference, declare_conv_relu, schedule_conv_relu
from tesched.tools.tutorial import parse_tutorial_args, tutorial_parser

parser = tutorial_parser(__doc__, "1 x 4 x 8 x 8, a smoke test")
parser.add_argument("--out", type=Path, help="keep the files written here (default: a temporary directory)")
options = parse_tutorial_args(parser)
QUICK = options.quick
CHANNELS, SIZE = (4, 8) if QUICK else (32, 56)
CC = shutil.which("cc") or shutil.which("gcc") or "cc"
REPEAT = 5 if QUICK else 50

work = options.out or Path(tempfile.mkdtemp(prefix="tesched-deploy-"))
work.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
data_np = rng.standard_normal((1, CHANNELS, SIZE, SIZE), dtype=np.float32)
weight_np = (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) / np.sqrt(9 * CHANNELS)).astype(np.float32)
expected = conv_relu_reference(data_np, weight_np)


def check(what: str, got: np.ndarray, want: np.ndarray = expected) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    print(f"-> matches NumPy ({what})")


def compile_and_run(source: str, library: Path, *args: object, static: bool = False) -> str:
    """Compile a C program against ``library`` (its header beside it), run it, return what it prints."""
    (work / "main.c").write_text(source)
    link = [str(library), "-fopenmp", "-lm"] if static else [str(library), f"-Wl,-rpath,{library.parent.resolve()}"]
    subprocess.run([CC, "-O2", "-I", str(library.parent), str(work / "main.c"), "-o", str(work / "main"), *link],
                   check=True)
    return subprocess.run([str(work / "main"), *map(str, args)], check=True, capture_output=True, text=True).stdout


print("=== 1. The kernel: relu(conv2d 3x3), fused ===")
net = declare_conv_relu(DemoSizes(1, CHANNELS, SIZE, SIZE, n=0, repeat=1))
f = ts.build(schedule_conv_relu(net, "fused, pad at tile"), [net.data, net.weight, net.relu], name="conv_relu")
print(f)
check("the kernel called from Python", f(data_np, weight_np))

print("\n=== 2. Export it: a shared object and its header ===")
library = f.export_library(work / "conv_relu.so")
header = (work / "conv_relu.h").read_text()
print(header[:header.index("#ifndef")])
print("The library keeps what it was built for (conv_relu_build_info() in C, build_record in Python); the\n"
      "kernel is compiled for the build's target, the entry point's checks for any x86-64 CPU.")
data_file, weight_file = work / "data.bin", work / "weight.bin"
data_file.write_bytes(data_np.tobytes())
weight_file.write_bytes(weight_np.tobytes())
check("the exported kernel called through ts.load_module", ts.load_module(library)(data_np, weight_np))

print("\n=== 3. Call it from C ===")
C_PROGRAM = textwrap.dedent(f"""\
    #include <stdio.h>
    #include <stdlib.h>
    #include "conv_relu.h"

    static float *read_floats(const char *path, size_t count) {{
      float *p = malloc(count * sizeof(float));
      FILE *f = fopen(path, "rb");
      if (!f || fread(p, sizeof(float), count, f) != count) exit(2);
      fclose(f);
      return p;
    }}

    int main(int argc, char **argv) {{
      const size_t n_data = {data_np.size}, n_weight = {weight_np.size};
      float *data = read_floats(argv[1], n_data), *weight = read_floats(argv[2], n_weight);
      float *relu = malloc(n_data * sizeof(float));
      if (conv_relu(data, weight, relu) != TESCHED_OK) {{
        fprintf(stderr, "%s\\n", conv_relu_last_error());
        return 1;
      }}
      FILE *out = fopen(argv[3], "wb");
      fwrite(relu, sizeof(float), n_data, out);
      fclose(out);
      /* the checks a Python caller gets: */
      int status = conv_relu(data, NULL, relu);
      printf("conv_relu(data, NULL, relu) = %d: %s\\n", status, conv_relu_last_error());
      status = conv_relu(data, weight, data);
      printf("conv_relu(data, weight, data) = %d: %s\\n", status, conv_relu_last_error());
      return 0;
    }}
    """)
print(C_PROGRAM)
print(compile_and_run(C_PROGRAM, library, data_file, weight_file, work / "relu.bin"), end="")
check("the C program", np.fromfile(work / "relu.bin", np.float32).reshape(expected.shape))

print("\n=== 4. A static archive, and the C sources built with make ===")
archive = f.export_library(work / "libconv_relu.a")
print(f"{archive.name}: only conv_relu, conv_relu_last_error and conv_relu_build_info are global symbols;\n"
      "link it with -fopenmp -lm.")
compile_and_run(C_PROGRAM, archive, data_file, weight_file, work / "relu_static.bin", static=True)
check("the C program linked statically", np.fromfile(work / "relu_static.bin", np.float32).reshape(expected.shape))
files = f.export_c(work / "src")
print("export_c wrote:", ", ".join(p.name for p in files))
subprocess.run(["make", "-s", "-C", str(work / "src"), f"CC={CC}"], check=True)
compile_and_run(C_PROGRAM, work / "src" / "conv_relu.so", data_file, weight_file, work / "relu_make.bin")
check("the C program against the library make built",
      np.fromfile(work / "relu_make.bin", np.float32).reshape(expected.shape))

print("\n=== 5. Load it back in a Python without a compiler ===")
np.save(work / "data.npy", data_np)
np.save(work / "weight.npy", weight_np)
no_compiler = work / "empty_bin"
no_compiler.mkdir(exist_ok=True)
env = {k: v for k, v in os.environ.items() if k != "CC"} | {"PATH": str(no_compiler)}
loader = textwrap.dedent(f"""\
    import shutil, numpy as np, tesched as ts
    print("compiler on PATH:", shutil.which("cc") or shutil.which("gcc"))
    f = ts.load_module({str(library)!r})
    print(f, "built for", f.build_record.target, "by tesched", f.build_record.tesched_version)
    data, weight = np.load({str(work / 'data.npy')!r}), np.load({str(work / 'weight.npy')!r})
    np.save({str(work / 'relu_loaded.npy')!r}, f(data, weight))
    try:
        f(data.astype(np.float64), weight)
    except TypeError as err:
        print("TypeError:", err)
    """)
done = subprocess.run([sys.executable, "-c", loader], env=env, capture_output=True, text=True,
                      cwd=Path(ts.__file__).resolve().parent.parent)   # beside the tesched imported here
print(done.stdout, done.stderr, sep="", end="")
done.check_returncode()
check("ts.load_module in a fresh process", np.load(work / "relu_loaded.npy"))

print("\n=== 6. A whole model: one entry point runs every fused kernel ===")
x = G.var("data", shape=(1, CHANNELS, SIZE, SIZE))
params, variables, h = {}, [x], x
for k in range(2):
    w = G.var(f"conv{k}_weight", shape=(CHANNELS, CHANNELS, 3, 3))
    stats = [G.var(f"bn{k}_{n}", shape=(CHANNELS,)) for n in ("gamma", "beta", "mean", "var")]
    h = G.nn.relu(G.nn.batch_norm(G.nn.conv2d(h, w, padding=1), *stats, epsilon=1e-5))
    variables += [w, *stats]
    params[w.name] = (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) / np.sqrt(9 * CHANNELS)).astype(np.float32)
    params.update({f"bn{k}_gamma": rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32),
                   f"bn{k}_beta": rng.standard_normal(CHANNELS).astype(np.float32) * 0.1,
                   f"bn{k}_mean": rng.standard_normal(CHANNELS).astype(np.float32) * 0.1,
                   f"bn{k}_var": rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32)})
model = G.Function(variables, h)         # conv -> batch_norm -> relu, twice


def model_reference(data: np.ndarray) -> np.ndarray:
    out = data
    c = (slice(None), None, None)
    for k in range(2):
        conv = conv2d_reference(out, params[f"conv{k}_weight"])
        g, b, m, v = (params[f"bn{k}_{n}"] for n in ("gamma", "beta", "mean", "var"))
        out = np.maximum((conv - m[c]) / np.sqrt(v[c] + 1e-5) * g[c] + b[c], 0)
    return out


exe = G.build(model, params)
print(exe)
model_library = exe.export_library(work / "model.so")
model_header = (work / "model.h").read_text()
print(model_header[:model_header.index("#ifndef")])
MODEL_PROGRAM = textwrap.dedent(f"""\
    #include <stdio.h>
    #include <stdlib.h>
    #include <time.h>
    #include "model.h"

    int main(int argc, char **argv) {{
      const size_t count = {data_np.size};
      float *data = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
      FILE *in = fopen(argv[1], "rb");
      if (!in || fread(data, sizeof(float), count, in) != count) return 2;
      fclose(in);
      struct timespec t0, t1;
      double best = 1e30;
      for (int k = 0; k < {REPEAT}; k++) {{
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (model(data, out) != TESCHED_OK) {{ fprintf(stderr, "%s\\n", model_last_error()); return 1; }}
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3;
        if (us < best) best = us;
      }}
      printf("model() called from C: best of {REPEAT} calls %.1f us\\n", best);
      FILE *f = fopen(argv[2], "wb");
      fwrite(out, sizeof(float), count, f);
      fclose(f);
      return 0;
    }}
    """)
print(compile_and_run(MODEL_PROGRAM, model_library, data_file, work / "model_out.bin"), end="")
reference = model_reference(data_np)
check("the model called from C", np.fromfile(work / "model_out.bin", np.float32).reshape(reference.shape), reference)
m = G.load_executable(model_library)
print(m)
check("G.load_executable", m(data_np), reference)
print(f"from Python: the loaded library {m.benchmark(data_np, repeat=REPEAT).min * 1e6:.1f} us, the executable "
      f"{exe.benchmark(data_np, repeat=REPEAT).min * 1e6:.1f} us (best of {REPEAT}; the same kernels, each\n"
      "checking the inputs and running the whole model in one C call).")

print("\n=== 7. Another target: a library for a machine with AVX2 but no AVX-512 ===")
avx2 = f.export_library(work / "avx2" / "conv_relu.so", target="x86-64-avx2")
record = read_record(avx2)                 # read from the file, without loading it
print(f"built for {record.target}: needs {', '.join(record.features)}; flags {' '.join(record.flags)}")
if set(record.features) <= host_features():
    check("the AVX2 library on this machine", ts.load_module(avx2)(data_np, weight_np))
else:
    print("This machine has no AVX2, so ts.load_module refuses that library; the host one runs:")
    check("the host library", ts.load_module(library)(data_np, weight_np))
try:
    check_host(read_record(library), library, host=frozenset(record.features))    # an AVX2-only machine
except ts.ModuleLoadError as err:
    print(f"The host library on an AVX2-only machine is refused before it runs:\n  ModuleLoadError: {err}")

print("\n=== 8. Summary ===")
print(f"Files in {work}:")
for p in sorted(work.glob("*.[soah]*")):
    print(f"  {p.name:<20} {p.stat().st_size:>9,} bytes")
if options.out is None:
    shutil.rmtree(work)
