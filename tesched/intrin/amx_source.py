"""C source of the AMX micro-kernel of a narrow product: ``C[mr x nr] = A[mr x K] * W[K/G x nr x G]``, bfloat16
pairs into float32 (``TDPBF16PS``) or 8-bit quadruples into int32 (``TDPBUSD`` for uint8 x int8, ``TDPBSSD``
for int8 x int8), with W in the packed layout of ``nn.pack_dense_weight`` (``G`` reduction elements per
output column, columns next: the layout AMX reads a B tile in, 16 columns of 64 bytes per row).

The tile is cut into up to 2 x 2 blocks of at most 16 x 16 outputs (C tiles 0 to 3), each reduction step of
``KB`` elements (32 bfloat16, 64 bytes) loads up to two A tiles (4, 5) and two B tiles (6, 7). The tile
configuration is a constant of the kernel; loading it costs about 200 ns, so a call reads the thread's
current one (``STTILECFG``, about 10 ns) and loads its own only when it differs (the first call on a
thread, or after other AMX code ran there). The tiles are left configured after the call. The last
``K % KB`` reduction elements are copied into zero-padded tiles for one more step. The tile code carries its own ``target`` attribute, so the source compiles for
any x86-64 target (with or without ``-mamx-*``).

The process asks Linux for the tile state once, when the kernel's library is loaded (a constructor calling
``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``). Where the OS or the CPU refuses, or a region's
innermost strides are not unit (the row strides are free), the call runs the scalar form of the same
product: never an illegal instruction. This module only writes text.
"""
from __future__ import annotations

from dataclasses import dataclass

ROWS = 16
"""Rows of one AMX tile."""
ROW_BYTES = 64
"""Bytes of one tile row."""


@dataclass(frozen=True)
class AmxKind:
    """One AMX product: operand C types, accumulator, packing group and instruction."""

    a_type: str
    w_type: str
    c_type: str
    group: int
    instruction: str
    scalar_load: str       # C expression of one operand element ({x}) as the accumulator's type

    @property
    def step(self) -> int:
        """Reduction elements per tile step (one 64-byte row of A)."""
        return ROW_BYTES // self.element_bytes

    @property
    def element_bytes(self) -> int:
        """Bytes of one operand element (a 32-bit lane holds ``group`` of them)."""
        return 4 // self.group


KINDS = {
    ("bfloat16", "bfloat16"): AmxKind("uint16_t", "uint16_t", "float", 2, "_tile_dpbf16ps",
                                      "tesched_amx_bf16({x})"),
    ("uint8", "int8"): AmxKind("uint8_t", "int8_t", "int32_t", 4, "_tile_dpbusd", "(int32_t)({x})"),
    ("int8", "int8"): AmxKind("int8_t", "int8_t", "int32_t", 4, "_tile_dpbssd", "(int32_t)({x})"),
}
"""(data dtype, weight dtype) -> the AMX product computing it."""

_PRELUDE = r"""#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifndef TESCHED_AMX_PRELUDE
#define TESCHED_AMX_PRELUDE
/* 1 once Linux lets this process use AMX tiles (asked once, when the library is loaded), else 0 */
static int tesched_amx_ready;
/* gcc's _tile_loadd does not tell the compiler it reads memory: a barrier keeps the stores before it */
#define TESCHED_AMX_READS_MEMORY() __asm__ volatile("" ::: "memory")
__attribute__((constructor)) static void tesched_amx_request(void) {
  __builtin_cpu_init();
  tesched_amx_ready = __builtin_cpu_supports("amx-tile")
      && syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
}
static inline float tesched_amx_bf16(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
#endif
"""


def _parts(size: int) -> list[tuple[int, int]]:
    """(offset, extent) of the tile blocks covering ``size`` rows or columns (at most two of 16)."""
    first = min(size, ROWS)
    return [(0, first)] + ([(ROWS, size - ROWS)] if size > ROWS else [])


def _config(kind: AmxKind, rows: list[tuple[int, int]], cols: list[tuple[int, int]]) -> list[int]:
    """The 64 bytes of the tile configuration (palette 1): C tiles 2p+q, A tiles 4+p, B tiles 6+q."""
    colsb = [0] * 16
    nrows = [0] * 16
    for p, (_, r) in enumerate(rows):
        for q, (_, c) in enumerate(cols):
            colsb[2 * p + q], nrows[2 * p + q] = 4 * c, r
        colsb[4 + p], nrows[4 + p] = ROW_BYTES, r
    for q, (_, c) in enumerate(cols):
        colsb[6 + q], nrows[6 + q] = 4 * c, kind.step // kind.group
    data = [1] + [0] * 15
    for width in colsb:
        data += [width & 0xFF, width >> 8]
    return data + nrows


def amx_dense_source(name: str, kind: AmxKind, mr: int, nr: int, k: int) -> str:
    """The C text of ``name_body(a, sa0, sa1, w, sw0, sw1, sw2, c, sc0, sc1)`` (tesched's calling
    convention: each region's origin and its strides in elements)."""
    rows, cols = _parts(mr), _parts(nr)
    main = k - k % kind.step
    g, a, w, t = kind.group, kind.a_type, kind.w_type, kind.c_type
    config = ", ".join(map(str, _config(kind, rows, cols)))
    loads = [f"      _tile_loadd({4 + p}, a + {r0} * sa0 + kb, sa0 * {kind.element_bytes});" for p, (r0, _) in
             enumerate(rows)]
    loads += [f"      _tile_loadd({6 + q}, w + (kb / {g}) * sw0 + {c0 * g}, sw0 * {kind.element_bytes});"
              for q, (c0, _) in enumerate(cols)]
    products = [f"      {kind.instruction}({2 * p + q}, {4 + p}, {6 + q});" for p in range(len(rows))
                for q in range(len(cols))]
    zeros = [f"  _tile_zero({2 * p + q});" for p in range(len(rows)) for q in range(len(cols))]
    stores = [f"  _tile_stored({2 * p + q}, c + {r0} * sc0 + {c0}, sc0 * 4);" for p, (r0, _) in enumerate(rows)
              for q, (c0, _) in enumerate(cols)]
    load_a = kind.scalar_load.format(x="a[i * sa0 + kk * sa1]")
    load_w = kind.scalar_load.format(x=f"w[(kk / {g}) * sw0 + j * sw1 + (kk % {g}) * sw2]")
    rest, eb, nl = k - main, kind.element_bytes, "\n"
    tail = ""
    if rest:
        copies = [f"    for (int r = 0; r < {r}; r++) memcpy(pad_a[{p}] + r * {ROW_BYTES}, "
                  f"a + ({r0} + r) * sa0 + {main}, {rest * eb});" for p, (r0, r) in enumerate(rows)]
        copies += [f"    for (int r = 0; r < {rest // g}; r++) memcpy(pad_w[{q}] + r * {4 * c}, "
                   f"w + ({main // g} + r) * sw0 + {c0 * g}, {4 * c});" for q, (c0, c) in enumerate(cols)]
        pad_loads = [f"    _tile_loadd({4 + p}, pad_a[{p}], {ROW_BYTES});" for p in range(len(rows))]
        pad_loads += [f"    _tile_loadd({6 + q}, pad_w[{q}], {4 * c});" for q, (_, c) in enumerate(cols)]
        tail = (f"  {{  /* the last {rest} reduction elements, zero-padded to a whole step */\n"
                f"    uint8_t pad_a[{len(rows)}][{ROWS * ROW_BYTES}] __attribute__((aligned(64))) = {{{{0}}}};\n"
                f"    uint8_t pad_w[{len(cols)}][{ROWS * ROW_BYTES}] __attribute__((aligned(64))) = {{{{0}}}};\n"
                + nl.join(copies) + "\n    TESCHED_AMX_READS_MEMORY();\n" + nl.join(pad_loads) + "\n"
                + nl.join("  " + line for line in products) + "\n  }\n")
    return _PRELUDE + f"""
/* the same product in scalar C, for any strides, where AMX may not run */
static void {name}_scalar(const {a} *a, int64_t sa0, int64_t sa1, const {w} *w, int64_t sw0, int64_t sw1,
                          int64_t sw2, {t} *c, int64_t sc0, int64_t sc1) {{
  for (int64_t i = 0; i < {mr}; i++)
    for (int64_t j = 0; j < {nr}; j++) {{
      {t} acc = 0;
      for (int64_t kk = 0; kk < {k}; kk++) acc += {load_a} * {load_w};
      c[i * sc0 + j * sc1] = acc;
    }}
}}

__attribute__((target("amx-tile,amx-bf16,amx-int8")))
static void {name}_tiles(const {a} *a, int64_t sa0, const {w} *w, int64_t sw0, {t} *c, int64_t sc0) {{
  static const uint8_t config[64] __attribute__((aligned(64))) = {{{config}}};
  uint8_t current[64] __attribute__((aligned(64)));
  _tile_storeconfig(current);               /* about 10 ns; loading a configuration costs about 200 */
  if (memcmp(current, config, 64) != 0) _tile_loadconfig(config);
  TESCHED_AMX_READS_MEMORY();
{nl.join(zeros)}
  for (int64_t kb = 0; kb < {main}; kb += {kind.step}) {{
{nl.join(loads)}
{nl.join(products)}
  }}
{tail}{nl.join(stores)}
}}

static void {name}_body(const {a} *a, int64_t sa0, int64_t sa1, const {w} *w, int64_t sw0, int64_t sw1,
                        int64_t sw2, {t} *c, int64_t sc0, int64_t sc1) {{
  if (tesched_amx_ready && sa1 == 1 && sw1 == {g} && sw2 == 1 && sc1 == 1)
    {name}_tiles(a, sa0, w, sw0, c, sc0);
  else
    {name}_scalar(a, sa0, sa1, w, sw0, sw1, sw2, c, sc0, sc1);
}}
"""
