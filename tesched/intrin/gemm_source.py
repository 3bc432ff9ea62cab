"""C source of the GEMM micro-kernel: ``C[mr x nr] (+)= A[mr x kc] * B[kc x nr]``, optionally followed by
``max(C + bias[j], 0)``, for one instruction set (see :mod:`tesched.intrin.isa`) and dtype.

One template, instantiated per instruction set through a handful of vector macros (load, store, broadcast,
fused multiply-add, add, max): ``mr x nr/lanes`` accumulators stay in registers for the whole ``kc`` loop;
each step loads ``nr/lanes`` vectors of a row of B and broadcasts one element of A per row. The vector path
needs unit strides along the rows of B, C and the bias; otherwise the call takes the scalar instantiation
of the same template, so any strides are honoured. The plain-C path is that scalar instantiation only.

Functions (all ``static``, prefixed by ``name``), with tesched's calling convention (pointer to the
region's origin, then one stride per dimension): ``name_reset(c, sc0, sc1)``, ``name_update(a, sa0, sa1,
b, sb0, sb1, c, sc0, sc1)`` (accumulate) and ``name_body(...)`` (overwrite); with ``epilogue``, only
``name_body(a, sa0, sa1, b, sb0, sb1, bias, sbias, o, so0, so1)``. This module only writes text.
"""
from __future__ import annotations

_C_TYPES = {"float32": "float", "float64": "double"}

_SIMD = {
    # isa: (register bytes, type suffix per dtype, intrinsic prefix)
    "avx512": (64, {"float32": ("__m512", "ps"), "float64": ("__m512d", "pd")}, "_mm512"),
    "avx2": (32, {"float32": ("__m256", "ps"), "float64": ("__m256d", "pd")}, "_mm256"),
}

_CORE = r"""
static inline __attribute__((always_inline)) void {fn}(
    const {T} *restrict a, int64_t sa0, int64_t sa1, const {T} *restrict b, int64_t sb0, int64_t sb1,
    const {T} *restrict bias, int64_t sbias, {T} *restrict c, int64_t sc0, int64_t sc1, int accumulate) {{
  VEC acc[{mr}][{nv}];
{unroll_mr}  for (int i = 0; i < {mr}; i++)
{unroll_nv}    for (int v = 0; v < {nv}; v++)
      acc[i][v] = accumulate ? VLOAD(&c[i * sc0 + v * {lanes} * sc1]) : VZERO;
  for (int64_t k = 0; k < {kc}; k++) {{
    VEC row[{nv}];
{unroll_nv}    for (int v = 0; v < {nv}; v++) row[v] = VLOAD(&b[k * sb0 + v * {lanes} * sb1]);
{unroll_mr}    for (int i = 0; i < {mr}; i++) {{
      VEC ai = VSET1(a[i * sa0 + k * sa1]);
{unroll_nv}      for (int v = 0; v < {nv}; v++) acc[i][v] = VFMA(ai, row[v], acc[i][v]);
    }}
  }}
  if (bias) {{
{unroll_nv}    for (int v = 0; v < {nv}; v++) {{
      VEC bv = VLOAD(&bias[v * {lanes} * sbias]);
{unroll_mr}      for (int i = 0; i < {mr}; i++) acc[i][v] = VMAX(VADD(acc[i][v], bv), VZERO);
    }}
  }}
{unroll_mr}  for (int i = 0; i < {mr}; i++)
{unroll_nv}    for (int v = 0; v < {nv}; v++) VSTORE(&c[i * sc0 + v * {lanes} * sc1], acc[i][v]);
}}
"""

_MACROS = ("VEC", "VLOAD", "VSTORE", "VZERO", "VSET1", "VFMA", "VADD", "VMAX")


def _scalar_macros(ctype: str) -> dict[str, str]:
    return {"VEC": ctype, "VLOAD(p)": "(*(p))", "VSTORE(p, x)": "(*(p) = (x))", "VZERO": "(0)",
            "VSET1(x)": "(x)", "VFMA(x, y, z)": "((x) * (y) + (z))", "VADD(x, y)": "((x) + (y))",
            "VMAX(x, y)": "((x) > (y) ? (x) : (y))"}


def _simd_macros(isa: str, dtype: str) -> dict[str, str]:
    _, types, pre = _SIMD[isa]
    vec, sfx = types[dtype]
    return {"VEC": vec, "VLOAD(p)": f"{pre}_loadu_{sfx}(p)", "VSTORE(p, x)": f"{pre}_storeu_{sfx}(p, x)",
            "VZERO": f"{pre}_setzero_{sfx}()", "VSET1(x)": f"{pre}_set1_{sfx}(x)",
            "VFMA(x, y, z)": f"{pre}_fmadd_{sfx}(x, y, z)", "VADD(x, y)": f"{pre}_add_{sfx}(x, y)",
            "VMAX(x, y)": f"{pre}_max_{sfx}(x, y)"}


def lanes(isa: str, dtype: str) -> int:
    """Elements of ``dtype`` in one register of ``isa`` (1 for plain C)."""
    if isa == "c":
        return 1
    return _SIMD[isa][0] // (4 if dtype == "float32" else 8)


def _core(fn: str, macros: dict[str, str], ctype: str, mr: int, nr: int, kc: int, lane_count: int) -> str:
    """The template for one set of macros; vector accumulators are unrolled (so they live in registers),
    scalar ones are left as loops for gcc to vectorize as it sees fit."""
    defines = "".join(f"#define {k} {v}\n" for k, v in macros.items())
    undefs = "".join(f"#undef {m}\n" for m in _MACROS)
    nv = nr // lane_count
    unroll = lane_count > 1
    body = _CORE.format(fn=fn, T=ctype, mr=mr, nv=nv, lanes=lane_count, kc=kc,
                        unroll_mr=f"#pragma GCC unroll {mr}\n" if unroll else "",
                        unroll_nv=f"#pragma GCC unroll {nv}\n" if unroll else "")
    return defines + body + undefs


def gemm_source(name: str, isa: str, dtype: str, mr: int, nr: int, kc: int, epilogue: bool) -> str:
    """The C text of one micro-kernel (see the module docstring for its functions)."""
    ctype = _C_TYPES[dtype]
    scalar = _core(f"{name}_scalar", _scalar_macros(ctype), ctype, mr, nr, kc, 1)
    if isa == "c":
        parts, tile = [scalar], f"{name}_scalar"
        dispatch = ""
    else:
        width = lanes(isa, dtype)
        simd = _core(f"{name}_simd", _simd_macros(isa, dtype), ctype, mr, nr, kc, width)
        parts, tile = ["#include <immintrin.h>\n", scalar, simd], f"{name}_simd"
        dispatch = (f"  if (sb1 != 1 || sc1 != 1 || (bias && sbias != 1)) {{\n"
                    f"    {name}_scalar(a, sa0, sa1, b, sb0, sb1, bias, sbias, c, sc0, sc1, accumulate);\n"
                    f"    return;\n  }}\n")
    t = ctype
    a_b = f"const {t} *a, int64_t sa0, int64_t sa1, const {t} *b, int64_t sb0, int64_t sb1"
    parts.append(
        f"static inline void {name}_tile({a_b}, const {t} *bias, int64_t sbias, {t} *c, int64_t sc0, "
        f"int64_t sc1, int accumulate) {{\n{dispatch}"
        f"  {tile}(a, sa0, sa1, b, sb0, sb1, bias, sbias, c, sc0, sc1, accumulate);\n}}\n")
    if epilogue:
        parts.append(f"static void {name}_body({a_b}, const {t} *bias, int64_t sbias, {t} *o, int64_t so0, "
                     f"int64_t so1) {{\n  {name}_tile(a, sa0, sa1, b, sb0, sb1, bias, sbias, o, so0, so1, 0);\n}}\n")
    else:
        parts.append(
            f"static void {name}_reset({t} *c, int64_t sc0, int64_t sc1) {{\n"
            f"  for (int i = 0; i < {mr}; i++)\n    for (int j = 0; j < {nr}; j++) c[i * sc0 + j * sc1] = 0;\n}}\n"
            f"static void {name}_update({a_b}, {t} *c, int64_t sc0, int64_t sc1) {{\n"
            f"  {name}_tile(a, sa0, sa1, b, sb0, sb1, 0, 0, c, sc0, sc1, 1);\n}}\n"
            f"static void {name}_body({a_b}, {t} *c, int64_t sc0, int64_t sc1) {{\n"
            f"  {name}_tile(a, sa0, sa1, b, sb0, sb1, 0, 0, c, sc0, sc1, 0);\n}}\n")
    return "\n".join(parts)
