"""Tests of tesched.driver.export: a kernel exported as a shared object, a static archive or C sources
with a Makefile, called from C programs compiled here with gcc and compared with NumPy; the C entry
point's own checks (NULL, overlap, sizes, allocation failure, CPU features) return error codes with
messages; names that would clash with the C library are refused."""
import shutil
import subprocess

import numpy as np
import pytest

import tesched as ts
from tesched.driver.compiler import system_identifiers
from tesched.target import FEATURE_FLAGS, ISA_FEATURES, host_features
from tesched.tools.demo import conv_relu_reference

from c_programs import SIZES, compile_program, conv_relu_kernel, outer_sum_kernel, read, run_program, write

DATA = (SIZES.batch, SIZES.channels, SIZES.height, SIZES.width)
WEIGHT = (SIZES.channels, SIZES.channels, 3, 3)

CONV_RELU_PROGRAM = f"""
#include "conv_relu.h"

int main(int argc, char **argv) {{
  const size_t data_bytes = {np.prod(DATA) * 4}, weight_bytes = {np.prod(WEIGHT) * 4};
  float *data = load(argv[1], data_bytes), *weight = load(argv[2], weight_bytes);
  float *relu = malloc(data_bytes);
  int status = conv_relu(data, weight, relu);
  if (status != TESCHED_OK) {{ printf("failed %d: %s\\n", status, conv_relu_last_error()); return 1; }}
  save(argv[3], relu, data_bytes);
  printf("ok [%s]\\n", conv_relu_last_error());
  status = conv_relu(data, NULL, relu);
  printf("null %d %s\\n", status, conv_relu_last_error());
  status = conv_relu(data, weight, data);
  printf("overlap %d %s\\n", status, conv_relu_last_error());
  printf("record %s\\n", strstr(conv_relu_build_info(), "\\"kind\\":\\"kernel\\"") ? "kernel" : "?");
  return 0;
}}
"""


@pytest.fixture(scope="module")
def conv_relu():
    return conv_relu_kernel()


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(3)
    return rng.standard_normal(DATA, dtype=np.float32), rng.standard_normal(WEIGHT, dtype=np.float32)


def test_header_declares_the_entry_point_in_argument_order(conv_relu, tmp_path):
    conv_relu.export_library(tmp_path / "conv_relu.so")
    header = (tmp_path / "conv_relu.h").read_text()
    assert "int conv_relu(const float *data, const float *weight, float *relu);" in header
    assert "data    input   float32[1, 3, 6, 8]" in header
    assert "relu    output  float32[1, 3, 6, 8]" in header
    assert "const char *conv_relu_last_error(void);" in header


@pytest.mark.parametrize("static", [False, True], ids=["shared", "static"])
def test_a_c_program_runs_the_exported_kernel(conv_relu, inputs, tmp_path, static):
    library = conv_relu.export_library(tmp_path / ("libconv_relu.a" if static else "conv_relu.so"))
    exe = compile_program(CONV_RELU_PROGRAM, tmp_path, library, static=static)
    done = run_program(exe, write(tmp_path, "data.bin", inputs[0]), write(tmp_path, "weight.bin", inputs[1]),
                       tmp_path / "relu.bin")
    np.testing.assert_allclose(read(tmp_path / "relu.bin", DATA), conv_relu_reference(*inputs), rtol=1e-4, atol=1e-4)
    assert "ok []" in done.stdout
    assert "null 1 conv_relu: argument weight is NULL" in done.stdout
    assert "overlap 1 conv_relu: output relu overlaps argument data in memory" in done.stdout
    assert "record kernel" in done.stdout


THREADS_PROGRAM = f"""
#include <pthread.h>
#include "conv_relu.h"

static float *data, *weight, *outputs[4];
static int statuses[4];
static char messages[4][256];

static void *work(void *arg) {{
  const long k = (long)arg;
  for (int round = 0; round < 20; round++) {{
    statuses[k] |= conv_relu(data, k == 3 ? NULL : weight, outputs[k]);
    snprintf(messages[k], sizeof messages[k], "%s", conv_relu_last_error());
  }}
  return NULL;
}}

int main(int argc, char **argv) {{
  const size_t data_bytes = {np.prod(DATA) * 4}, weight_bytes = {np.prod(WEIGHT) * 4};
  data = load(argv[1], data_bytes);
  weight = load(argv[2], weight_bytes);
  pthread_t threads[4];
  for (long k = 0; k < 4; k++) {{
    outputs[k] = calloc(1, data_bytes);
    pthread_create(&threads[k], NULL, work, (void *)k);
  }}
  for (int k = 0; k < 4; k++) pthread_join(threads[k], NULL);
  for (int k = 0; k < 3; k++) save(argv[3 + k], outputs[k], data_bytes);
  for (int k = 0; k < 4; k++) printf("%d [%s]\\n", statuses[k], messages[k]);
  return 0;
}}
"""


def test_threads_call_it_at_once_each_with_its_own_message(conv_relu, inputs, tmp_path):
    library = conv_relu.export_library(tmp_path / "conv_relu.so")
    outs = [tmp_path / f"out{k}.bin" for k in range(3)]
    done = run_program(compile_program(THREADS_PROGRAM, tmp_path, library), write(tmp_path, "d.bin", inputs[0]),
                       write(tmp_path, "w.bin", inputs[1]), *outs)
    assert done.stdout.splitlines() == ["0 []"] * 3 + ["1 [conv_relu: argument weight is NULL]"]
    for out in outs:
        np.testing.assert_allclose(read(out, DATA), conv_relu_reference(*inputs), rtol=1e-4, atol=1e-4)


def test_only_the_public_functions_are_exported(conv_relu, tmp_path):
    shared = conv_relu.export_library(tmp_path / "conv_relu.so")
    archive = conv_relu.export_library(tmp_path / "libconv_relu.a")
    for path in (shared, archive):
        out = subprocess.run(["nm", "-g", "--defined-only", str(path)], capture_output=True, text=True).stdout
        names = sorted(line.split()[-1] for line in out.splitlines() if line.count(" ") == 2)
        assert names == ["conv_relu", "conv_relu_argv", "conv_relu_build_info", "conv_relu_last_error"], names


def test_export_c_writes_sources_that_make_builds(conv_relu, inputs, tmp_path):
    files = conv_relu.export_c(tmp_path / "src")
    assert {f.name for f in files} >= {"conv_relu.c", "conv_relu_kernel.c", "conv_relu.h", "tesched_runtime.h",
                                      "tesched_export.h", "Makefile"}
    done = subprocess.run(["make", "-s", "-C", str(tmp_path / "src")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for library in (tmp_path / "src" / "conv_relu.so", tmp_path / "src" / "libconv_relu.a"):
        exe = compile_program(CONV_RELU_PROGRAM, tmp_path, library, static=library.suffix == ".a")
        run_program(exe, write(tmp_path, "data.bin", inputs[0]), write(tmp_path, "weight.bin", inputs[1]),
                    tmp_path / "relu.bin")
        np.testing.assert_allclose(read(tmp_path / "relu.bin", DATA), conv_relu_reference(*inputs), rtol=1e-4,
                                   atol=1e-4)


OUTER_SUM_PROGRAM = """
#include <stdint.h>
#include "outer_sum.h"

int main(int argc, char **argv) {
  const int64_t n = atoll(argv[1]);
  float *v = load(argv[2], n * sizeof(float)), *r = malloc(n * sizeof(float));
  int status = outer_sum(v, r, n);
  printf("status %d [%s]\\n", status, outer_sum_last_error());
  if (status == TESCHED_OK) save(argv[3], r, n * sizeof(float));
  printf("zero %d %s\\n", outer_sum(v, r, 0), outer_sum_last_error());
  return 0;
}
"""


def test_symbolic_sizes_follow_the_buffers_and_are_checked(tmp_path):
    f = outer_sum_kernel()
    library = f.export_library(tmp_path / "outer_sum.so")
    assert "int outer_sum(const float *V, float *R, int64_t n);" in (tmp_path / "outer_sum.h").read_text()
    exe = compile_program(OUTER_SUM_PROGRAM, tmp_path, library)
    v = np.arange(1, 6, dtype=np.float32)
    done = run_program(exe, 5, write(tmp_path, "v.bin", v), tmp_path / "r.bin")
    np.testing.assert_allclose(read(tmp_path / "r.bin", (5,)), v * v.sum(), rtol=1e-6)
    assert "status 0 []" in done.stdout
    assert "zero 2 outer_sum: size n must be positive, got 0" in done.stdout


def test_a_heap_buffer_that_cannot_be_allocated_is_an_error_code_naming_it(tmp_path):
    f = outer_sum_kernel("outer_sum")
    library = f.export_library(tmp_path / "outer_sum.so")
    exe = compile_program(OUTER_SUM_PROGRAM, tmp_path, library)
    n = 600_000                                   # the (n, n) float32 intermediate needs 1.44 TB
    done = run_program(exe, n, write(tmp_path, "v.bin", np.ones(n, np.float32)), tmp_path / "r.bin")
    assert "status 3 [outer_sum: cannot allocate buffer outer of 1440000000000 bytes (float32[600000, 600000])]" \
        in done.stdout


def test_a_cpu_without_a_feature_the_code_uses_gets_an_error_code(tmp_path, monkeypatch, inputs):
    # Simulate a library built for a CPU feature this one lacks: AMD's FMA4 (absent from Intel and Zen).
    if "fma4" in host_features():
        pytest.skip("this CPU has FMA4")
    monkeypatch.setitem(FEATURE_FLAGS, "fma4", "-mfma4")
    monkeypatch.setitem(ISA_FEATURES, "fma4", "fma4")
    f = conv_relu_kernel()
    library = f.export_library(tmp_path / "conv_relu.so", target="x86-64-avx2+fma4")
    exe = compile_program(CONV_RELU_PROGRAM, tmp_path, library)
    done = subprocess.run([str(exe), write(tmp_path, "data.bin", inputs[0]), write(tmp_path, "weight.bin", inputs[1]),
                           tmp_path / "relu.bin"], capture_output=True, text=True)
    assert done.returncode == 1
    assert "failed 4: conv_relu: this CPU lacks the fma4 instructions; the library was compiled for target " \
           "x86-64-avx2+fma4" in done.stdout


def test_target_selects_the_instruction_set(conv_relu, tmp_path):
    conv_relu.export_c(tmp_path / "avx2", target="x86-64-avx2")
    makefile = (tmp_path / "avx2" / "Makefile").read_text()
    assert "KERNEL_FLAGS = -O3 -march=x86-64-v3" in makefile
    entry = (tmp_path / "avx2" / "conv_relu.c").read_text()
    assert '__builtin_cpu_supports("avx2")' in entry and "avx512" not in entry
    assert '"target":"x86-64-avx2"' in entry.replace("\\", "")


def test_names_that_the_c_library_uses_are_refused(conv_relu, tmp_path):
    assert "sin" in system_identifiers(ts.Target())
    with pytest.raises(ValueError, match="named sin, a name the C library"):
        conv_relu.export_library(tmp_path / "k.so", name="sin")
    with pytest.raises(ValueError, match="not a C identifier"):
        conv_relu.export_library(tmp_path / "k.so", name="conv-relu")
    conv_relu.export_library(tmp_path / "k.so", name="my_conv")
    assert "int my_conv(const float *data" in (tmp_path / "my_conv.h").read_text()


def test_static_flag_and_suffix_must_agree(conv_relu, tmp_path):
    with pytest.raises(ValueError, match="static=True but the path"):
        conv_relu.export_library(tmp_path / "conv_relu.so", static=True)
    path = conv_relu.export_library(tmp_path / "conv_relu.lib", static=True)
    assert path.read_bytes()[:8] == b"!<arch>\n"


def test_user_names_reach_c_escaped(tmp_path):
    A = ts.placeholder((4,), name='in"put*/%s')
    B = ts.compute((4,), lambda i: A[i] * 2.0, name="out\\")
    f = ts.build(ts.create_schedule(B.op), [A, B], name="weird")
    library = f.export_library(tmp_path / "weird.so")
    program = """
#include "weird.h"
int main(void) {
  float x[4] = {1, 2, 3, 4};
  printf("%d %s\\n", weird(NULL, x), weird_last_error());
  return 0;
}
"""
    done = run_program(compile_program(program, tmp_path, library))
    assert 'weird: argument in"put*/%s is NULL' in done.stdout


def test_a_kernel_without_gcc_features_exports_for_portable_c(tmp_path, inputs):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    f = conv_relu_kernel(target="c")
    library = f.export_library(tmp_path / "conv_relu.so")
    exe = compile_program(CONV_RELU_PROGRAM, tmp_path, library)
    run_program(exe, write(tmp_path, "data.bin", inputs[0]), write(tmp_path, "weight.bin", inputs[1]),
                tmp_path / "relu.bin")
    np.testing.assert_allclose(read(tmp_path / "relu.bin", DATA), conv_relu_reference(*inputs), rtol=1e-4, atol=1e-4)
    assert "__builtin_cpu_supports" not in f.export_c(tmp_path / "src")[1].read_text()


SCALED_PROGRAM = r"""
#include "scaled.h"
int main(int argc, char **argv) {
  int64_t n = atoi(argv[1]);
  float *a = load(argv[2], n * sizeof(float));
  float *b = malloc(n * sizeof(float));
  int status = scaled(a, b, n, (float)atof(argv[3]), (int32_t)atoi(argv[4]));
  printf("status %d [%s]\n", status, scaled_last_error());
  if (status == TESCHED_OK) save(argv[5], b, n * sizeof(float));
  return 0;
}
"""


def test_runtime_params_follow_the_sizes_in_the_c_entry_and_survive_loading(tmp_path, rand, monkeypatch):
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    gain, bias = ts.param("gain"), ts.param("bias", "int32")
    B = ts.compute((n,), lambda i: A[i] * gain + bias, name="B")
    library = ts.build(ts.create_schedule(B.op), [A, B], name="scaled").export_library(tmp_path / "scaled.so")
    header = (tmp_path / "scaled.h").read_text()
    assert "int scaled(const float *A, float *B, int64_t n, float gain, int32_t bias);" in header
    assert "gain  param   float32" in header
    exe = compile_program(SCALED_PROGRAM, tmp_path, library)
    a = rand((7,), low=-1, high=1)
    done = run_program(exe, 7, write(tmp_path, "a.bin", a), 2.5, -3, tmp_path / "b.bin")
    assert "status 0 []" in done.stdout
    np.testing.assert_allclose(read(tmp_path / "b.bin", (7,)), a * np.float32(2.5) - 3, rtol=1e-6)
    loaded = ts.load_module(library)
    for g, b in [(0.5, 4), (-2.0, 0)]:
        np.testing.assert_allclose(loaded(a, gain=g, bias=b), a * np.float32(g) + b, rtol=1e-6)
    with pytest.raises(TypeError, match=r"param bias \(int32\): expected an integer"):
        loaded(a, 1.0, 0.5)
    from tesched.driver import kernel as kernel_module
    monkeypatch.setattr(kernel_module, "helper_available", lambda: False)     # calls through cffi
    direct = ts.load_module(library)
    assert direct._program is None
    np.testing.assert_allclose(direct(a, 0.5, 4), a * np.float32(0.5) + 4, rtol=1e-6)
    np.testing.assert_allclose(direct.prepare(a, gain=3.0, bias=-2)(), a * np.float32(3.0) - 2, rtol=1e-6)
