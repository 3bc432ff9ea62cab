"""tesched.intrin.amx_source: the C of the AMX micro-kernel compiled alone (gcc -Wall -Werror, no -march)
into a program that runs each path on the same operands: the tiles (when this process may use AMX), the
scalar form the kernel falls back to when the OS refuses, and the scalar form taken for non-unit strides;
each is checked against NumPy."""
import subprocess

import numpy as np
import pytest

from tesched.intrin.amx_source import KINDS, _config, _parts, amx_dense_source

from amx_helpers import DTYPES, amx_host, check, operands

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
{source}
static void *load(const char *path, size_t bytes) {{
  FILE *f = fopen(path, "rb");
  void *p = calloc(1, bytes);
  if (!f || !p || fread(p, 1, bytes, f) != bytes) exit(2);
  fclose(f);
  return p;
}}
static void save(const char *path, const void *p, size_t bytes) {{
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, bytes, f) != bytes) exit(3);
  fclose(f);
}}
int main(int argc, char **argv) {{
  enum {{ M = {m}, N = {n}, K = {k}, G = {g} }};
  {a} *a = load(argv[1], sizeof({a}) * M * K);
  {w} *w = load(argv[2], sizeof({w}) * K * N);
  {a} *wide = calloc(2 * M * K, sizeof({a}));       /* a with a gap after every element */
  {t} *c = calloc(M * N, sizeof({t}));
  for (int i = 0; i < M * K; i++) wide[2 * i] = a[i];
  printf("%d\n", tesched_amx_ready);
  kern_body(a, K, 1, w, N * G, G, 1, c, N, 1);
  save(argv[3], c, sizeof({t}) * M * N);
  tesched_amx_ready = 0;                            /* as when the OS refuses */
  kern_body(a, K, 1, w, N * G, G, 1, c, N, 1);
  save(argv[4], c, sizeof({t}) * M * N);
  kern_body(wide, 2 * K, 2, w, N * G, G, 1, c, N, 1);
  save(argv[5], c, sizeof({t}) * M * N);
  return 0;
}}
"""


@pytest.mark.parametrize("data_dtype, weight_dtype", DTYPES)
@pytest.mark.parametrize("m, n, k", [(32, 32, 128), (25, 20, 100), (7, 3, 4)])
def test_every_path_of_the_kernel_matches_numpy(data_dtype, weight_dtype, m, n, k, rng, tmp_path):
    kind = KINDS[(data_dtype, weight_dtype)]
    source = PROGRAM.format(source=amx_dense_source("kern", kind, m, n, k), m=m, n=n, k=k, g=kind.group,
                            a=kind.a_type, w=kind.w_type, t=kind.c_type)
    (tmp_path / "main.c").write_text(source)
    compile_command = ["gcc", "-O2", "-Wall", "-Werror", str(tmp_path / "main.c"), "-o", str(tmp_path / "main")]
    done = subprocess.run(compile_command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    x, w = operands(rng, m, n, k, data_dtype, weight_dtype)
    packed = np.ascontiguousarray(w.reshape(n, k // kind.group, kind.group).transpose(1, 0, 2))
    x.tofile(tmp_path / "a.bin")
    packed.tofile(tmp_path / "w.bin")
    outputs = [tmp_path / f"c{i}.bin" for i in range(3)]
    files = [tmp_path / "a.bin", tmp_path / "w.bin", *outputs]
    run = subprocess.run([str(tmp_path / "main"), *map(str, files)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == ("1" if amx_host() else "0")      # the tiles ran where they can
    for path in outputs:
        check(np.fromfile(path, {"float": np.float32, "int32_t": np.int32}[kind.c_type]).reshape(m, n), x, w)


def test_tiles_cover_the_output_in_blocks_of_at_most_16():
    assert _parts(32) == [(0, 16), (16, 16)] and _parts(25) == [(0, 16), (16, 9)] and _parts(7) == [(0, 7)]
    config = _config(KINDS[("uint8", "int8")], _parts(25), _parts(20))
    colsb = [config[16 + 2 * t] | config[17 + 2 * t] << 8 for t in range(16)]
    rows = config[48:]
    assert config[0] == 1 and len(config) == 64
    assert colsb[:8] == [64, 16, 64, 16, 64, 64, 64, 16] and rows[:8] == [16, 16, 9, 9, 16, 9, 16, 16]
