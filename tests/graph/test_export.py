"""Tests of tesched.graph.export (with export_plan and export_entry): a built graph exported as one C
library whose single entry point runs every fused kernel in order, called from a C program compiled here
with gcc and compared with NumPy; constants embedded or in a checked side file; results that no kernel
writes; graphs the export refuses."""
import subprocess

import numpy as np
import pytest

from tesched import graph as G
from tesched.graph.export_plan import checksum
from tesched.graph.visit import post_order

from c_programs import compile_program, read, run_program, write
from .helpers import wee_net, wee_net_reference

TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}

MODEL_PROGRAM = """
#include "model.h"

int main(int argc, char **argv) {
  float *data = load(argv[1], 3 * 8 * 8 * sizeof(float)), logits[5];
  if (argc > 3) {
    int loaded = model_load_constants(argv[3]);
    printf("load %d [%s]\\n", loaded, model_last_error());
    if (loaded != TESCHED_OK) return 0;
  }
  int status = model(data, logits);
  printf("status %d [%s]\\n", status, model_last_error());
  if (status == TESCHED_OK) save(argv[2], logits, sizeof logits);
  return 0;
}
"""


@pytest.mark.parametrize("static", [False, True], ids=["shared", "static"])
def test_a_c_program_runs_the_exported_graph(wee, wee_data, tmp_path, static):
    exe, params = wee
    library = exe.export_library(tmp_path / ("libmodel.a" if static else "model.so"))
    header = (tmp_path / "model.h").read_text()
    assert "int model(const float *data, float *output);" in header
    assert f"It runs {len(exe.kernels)} kernels: " in header and all(k.name in header for k in exe.kernels)
    program = MODEL_PROGRAM.replace("model_load_constants(argv[3])", "TESCHED_OK")
    done = run_program(compile_program(program, tmp_path, library, static=static), write(tmp_path, "x.bin", wee_data),
                       tmp_path / "y.bin")
    assert "status 0 []" in done.stdout
    np.testing.assert_allclose(read(tmp_path / "y.bin", (1, 5)), wee_net_reference(wee_data, params), **TOLERANCE)


def test_constants_in_a_side_file_are_loaded_and_checked(wee, wee_data, tmp_path):
    exe, params = wee
    library = exe.export_library(tmp_path / "model.so", constants="file")
    side = tmp_path / "model.constants"
    assert side.read_bytes()[:8] == b"TSCONST1"
    assert "int model_load_constants(const char *path);" in (tmp_path / "model.h").read_text()
    main = compile_program(MODEL_PROGRAM, tmp_path, library)
    x = write(tmp_path, "x.bin", wee_data)
    done = run_program(main, x, tmp_path / "y.bin", side)
    assert "load 0 []" in done.stdout and "status 0 []" in done.stdout
    np.testing.assert_allclose(read(tmp_path / "y.bin", (1, 5)), wee_net_reference(wee_data, params), **TOLERANCE)
    assert "status 5 [model: its constants are not loaded: call model_load_constants(path) first]" in \
        run_program(main, x, tmp_path / "y.bin").stdout
    damaged = bytearray(side.read_bytes())
    damaged[100] ^= 1
    (tmp_path / "damaged.constants").write_bytes(damaged)
    assert "is truncated or damaged (checksum mismatch)" in run_program(main, x, tmp_path / "y.bin",
                                                                        tmp_path / "damaged.constants").stdout
    (tmp_path / "short.constants").write_bytes(side.read_bytes()[:-64])
    assert "is truncated or damaged" in run_program(main, x, tmp_path / "y.bin", tmp_path / "short.constants").stdout
    other, _ = wee_net(size=6)
    G.build(other, wee_net(size=6)[1] | {"fc_bias": np.zeros(5, np.float32)}).export_library(
        tmp_path / "other" / "model.so", constants="file")
    done = run_program(main, x, tmp_path / "y.bin", tmp_path / "other" / "model.constants")
    assert "does not hold this library's constants (it ships them in model.constants)" in done.stdout
    assert "load 5 [model: cannot open the constants file" in run_program(main, x, tmp_path / "y.bin",
                                                                         tmp_path / "none").stdout


def test_export_c_writes_sources_that_make_builds(wee, wee_data, tmp_path):
    exe, params = wee
    files = exe.export_c(tmp_path / "src", name="model")
    assert sum(f.name.startswith("model_fused_") for f in files) == len({id(k.kernel) for k in exe.kernels})
    done = subprocess.run(["make", "-s", "-C", str(tmp_path / "src")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    program = MODEL_PROGRAM.replace("model_load_constants(argv[3])", "TESCHED_OK")
    main = compile_program(program, tmp_path, tmp_path / "src" / "model.so")
    run_program(main, write(tmp_path, "x.bin", wee_data), tmp_path / "y.bin")
    np.testing.assert_allclose(read(tmp_path / "y.bin", (1, 5)), wee_net_reference(wee_data, params), **TOLERANCE)


def test_results_that_no_kernel_writes_are_copied(tmp_path):
    x = G.var("x", shape=(2, 3))
    y = G.nn.relu(G.add(x, G.const(np.ones((2, 3), np.float32))))
    exe = G.build(G.Function([x], G.Tuple([y, x, y, G.const(np.full((2, 3), 7, np.float32))])))
    library = exe.export_library(tmp_path / "copies.so")
    assert "int copies(const float *x, float *output0, float *output1, float *output2, float *output3);" in \
        (tmp_path / "copies.h").read_text()
    program = """
#include "copies.h"
int main(void) {
  float x[6] = {-3, -2, -1, 0, 1, 2}, out[4][6];
  printf("%d [%s]\\n", copies(x, out[0], out[1], out[2], out[3]), copies_last_error());
  for (int k = 0; k < 4; k++) for (int i = 0; i < 6; i++) printf("%g ", out[k][i]);
  printf("\\n%d %s\\n", copies(x, out[0], out[0], out[2], out[3]), copies_last_error());
  return 0;
}
"""
    lines = run_program(compile_program(program, tmp_path, library)).stdout.splitlines()
    assert lines[0] == "0 []"
    got = np.array(lines[1].split(), np.float32).reshape(4, 6)
    xs = np.arange(-3, 3, dtype=np.float32)
    np.testing.assert_array_equal(got, [np.maximum(xs + 1, 0), xs, np.maximum(xs + 1, 0), np.full(6, 7)])
    assert lines[2] == "1 copies: output output0 overlaps output output1 in memory"


def test_a_group_without_a_kernel_that_only_reshapes_is_a_view(wee, wee_data, tmp_path):
    exe, params = wee
    groups = [n.op.name for n in post_order(exe.function.body)
              if isinstance(n, G.Call) and isinstance(n.op, G.Function)]
    assert "fused_reshape" in groups and "fused_reshape" not in [g.name for g in exe.kernels]
    m = G.load_executable(exe.export_library(tmp_path / "view.so"))
    assert m.build_record.contents["kernels"] == [g.name for g in exe.kernels]
    np.testing.assert_allclose(m(wee_data), wee_net_reference(wee_data, params), **TOLERANCE)


def test_the_side_file_checksum_is_the_one_c_computes(tmp_path):
    blob = np.random.default_rng(0).integers(0, 2**63, 16, dtype=np.int64).tobytes()
    words = np.frombuffer(blob, "<u8").astype(object)
    plain = sum(words) % 2**64
    weighted = sum(w * (k + 1) for k, w in enumerate(words)) % 2**64
    assert checksum(blob) == plain ^ (weighted * 0x9E3779B97F4A7C15 % 2**64)


ADD_SOURCE = "void add2(const float *a, const float *b, float *out, int64_t n) { for (int64_t i = 0; i < n; i++) " \
             "out[i] = a[i] + b[i]; }"
ADD2 = G.ExternalFunction("add2", inputs=[("N",), ("N",)], output=("N",))


def partitioned(library):
    """relu(x + x) + c with both adds handed to ``library``'s add2."""
    x = G.var("x", shape=(4,))
    body = G.add(G.nn.relu(G.add(x, x)), G.const(np.arange(4, dtype=np.float32)))
    graph = G.partition(G.Function([x], body), {"add2": G.pattern(G.is_op("add", G.wildcard(), G.wildcard()))},
                        library)
    return G.build(graph)


def test_external_functions_given_as_source_are_compiled_into_the_library(tmp_path):
    exe = partitioned(G.ExternalLibrary([ADD2], source=ADD_SOURCE))
    assert [c.name for c in exe.external_calls] == ["external.add2"] * 2      # x + x, and relu(...) + c
    m = G.load_executable(exe.export_library(tmp_path / "ext.so"))
    x = np.array([-2, -1, 1, 2], np.float32)
    np.testing.assert_allclose(m(x), np.maximum(2 * x, 0) + np.arange(4), rtol=1e-6)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(tmp_path / "ext.so")], capture_output=True,
                             text=True).stdout
    assert "add2" not in symbols and " ext\n" in symbols


def test_external_functions_in_a_shared_object_are_refused(tmp_path):
    (tmp_path / "add.c").write_text("#include <stdint.h>\n" + ADD_SOURCE)
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp_path / "add.c"), "-o", str(tmp_path / "libadd.so")], check=True)
    exe = partitioned(G.ExternalLibrary([ADD2], path=tmp_path / "libadd.so"))
    with pytest.raises(TypeError, match=r"calls an external library given as the shared object .*libadd.so; an "
                                        r"exported library can carry external functions given as plain C source"):
        exe.export_library(tmp_path / "ext.so")


def test_bad_constants_mode_and_names(wee, tmp_path):
    exe, _ = wee
    with pytest.raises(ValueError, match="constants must be 'auto', 'embed' or 'file', got 'zip'"):
        exe.export_library(tmp_path / "model.so", constants="zip")
    with pytest.raises(ValueError, match="named exit, a name the C library"):
        exe.export_library(tmp_path / "exit.so")
