"""The C text of the graph's fused attention kernel: ``softmax(scale * q @ kt + bias) @ v`` with an online
(one-pass, FlashAttention-style) softmax, specialised to one set of shapes.

:func:`attention_source` writes ``void NAME(const float *q, const float *kt, const float *v[, const float
*bias], float *out)`` for ``q`` ``(B, M, D)``, ``kt`` ``(B, D, N)``, ``v`` ``(B, N, Dv)`` and ``out``
``(B, M, Dv)``, all C-contiguous; ``bias`` is read through the element strides it is given (0 along an axis it
is broadcast over). Its loops:

- one OpenMP task per (batch, block of ``block_rows`` query rows), interleaved over the threads (a causal
  mask makes later row blocks longer);
- per task, the key blocks of ``block_keys`` keys in order: the block's scores (vectorized over the keys),
  the scale, bias and causal mask, then per row the running maximum ``m``, the running sum ``l`` and the
  ``block_rows x Dv`` accumulator, rescaled by ``exp(m_old - m_new)`` whenever the maximum grows, plus the
  block's exponentials times ``v`` (vectorized over the head dimension);
- a causal mask (``causal=c``: keys ``n > i + c`` masked out) ends the key loop after the last key any row of
  the block sees, so fully masked key blocks cost nothing;
- the output row is the accumulator divided by ``l``, or zeros when every key of the row was masked out.

So the ``M x N`` scores are never stored: a task keeps ``block_rows x (block_keys + Dv)`` floats. The
exponential is a polynomial (as :func:`tesched.nn.attention.exp_nonpositive`) that the compiler keeps in SIMD
code; its argument is never positive, and below -87 it counts as 0. This module only writes text: compiling
and calling it is :mod:`.attention_kernel`'s job.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.intrin.gemm_source import gemm_source, lanes


@dataclass(frozen=True)
class AttentionShape:
    """What one kernel is specialised to."""

    batch: int
    rows: int
    keys: int
    depth: int
    value_depth: int
    scale: float
    causal: int | None
    bias_strides: tuple[int, int, int] | None       # element strides of the bias along (B, M, N); None: no bias
    isa: str                                         # of the micro-kernels (:mod:`tesched.intrin.isa`)


def _float(value: float) -> str:
    """A C float literal of exactly ``value`` (rounded to float32 as the kernel's arithmetic is)."""
    return f"((float){float(value).hex()})"


_TILE_ROWS = {"avx512": 4, "avx2": 2, "c": 1}
"""Rows of a micro-kernel tile: ``rows x 4`` vector accumulators plus a row of 4 vectors fit the registers."""


def block_sizes(shape: AttentionShape) -> tuple[int, int]:
    """``(block_rows, block_keys)``: 4 vectors of keys per block (64 float32 with AVX-512), so a block row
    of scores is one micro-kernel tile wide; a task's scores and accumulator stay within about 16 KiB each."""
    keys = 4 * lanes(shape.isa, "float32") if shape.isa != "c" else 16
    rows = max(1, min(16, 4096 // max(shape.value_depth, keys), shape.rows))
    return rows, keys


def _value_tile(shape: AttentionShape) -> int:
    """Value columns per tile of the ``P @ V`` micro-kernel: up to 4 vectors dividing ``Dv``; 0 when ``Dv`` is
    not a multiple of the vector (the loops are then plain C)."""
    width = lanes(shape.isa, "float32")
    if shape.value_depth % width:
        return 0
    return width * next(c for c in (4, 3, 2, 1) if (shape.value_depth // width) % c == 0)


_EXP = """
static inline float NAME_exp(float x)     /* exp(x) for x <= 0; 0 below -87; NaN stays NaN */
{
    float c = x < -87.0f ? -87.0f : x;
    int m = (int)(c * -1.4426950408889634f + 0.5f);
    float mf = (float)m;
    float r = c + mf * 0.693145751953125f + mf * 1.428606765330187e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union { int32_t i; float f; } two = { (int32_t)(127 - m) << 23 };
    return x < -87.0f ? 0.0f : p * two.f;
}
"""


def _micro_kernels(name: str, shape: AttentionShape, br: int, bk: int, tile: int) -> tuple[str, str, str]:
    """``(source, scores, values)``: the micro-kernel functions, and C statements computing a block's scores
    (``sc = q @ kt``) and adding its weights times ``v`` into the accumulator, full key blocks tile by tile
    and partial ones (or any block, when ``Dv`` fits no tile) with plain loops."""
    s, mr = shape, _TILE_ROWS[shape.isa]
    parts = [gemm_source(f"{name}_qk{r}", s.isa, "float32", r, bk, s.depth, False) for r in sorted({mr, 1})]
    if tile:
        parts += [gemm_source(f"{name}_pv{r}", s.isa, "float32", r, tile, bk, False) for r in sorted({mr, 1})]

    def tiles(call: str) -> str:
        return f"""int64_t i = 0;
                for (; i + {mr} <= rows; i += {mr}) {call.format(r=mr)}
                for (; i < rows; i++) {call.format(r=1)}"""
    qk = f"{name}_qk{{r}}_tile(qb + i * {s.depth}, {s.depth}, 1, kb + n0, {s.keys}, 1, 0, 0, sc[i], {bk}, 1, 0);"
    pv = f"{name}_pv{{r}}_tile(sc[i], {bk}, 1, vb + n0 * {s.value_depth} + j0, {s.value_depth}, 1, 0, 0, " \
         f"acc[i] + j0, {s.value_depth}, 1, 1);"
    scores = f"""if (nk == {bk}) {{
                {tiles(qk)}
            }} else {{
                for (int64_t i = 0; i < rows; i++) {{
                    for (int64_t n = 0; n < {bk}; n++) sc[i][n] = 0.0f;
                    for (int64_t d = 0; d < {s.depth}; d++) {{
                        float qv = qb[i * {s.depth} + d];
                        const float *restrict krow = kb + d * (int64_t){s.keys} + n0;
                        #pragma omp simd
                        for (int64_t n = 0; n < nk; n++) sc[i][n] += qv * krow[n];
                    }}
                }}
            }}"""
    plain = f"""for (int64_t i = 0; i < rows; i++)
                    for (int64_t n = 0; n < nk; n++) {{
                        float p = sc[i][n];
                        const float *restrict vrow = vb + (n0 + n) * (int64_t){s.value_depth};
                        #pragma omp simd
                        for (int64_t j = 0; j < {s.value_depth}; j++) acc[i][j] += p * vrow[j];
                    }}"""
    if not tile:
        return "\n".join(parts), scores, plain
    values = f"""if (nk == {bk}) {{
                for (int64_t j0 = 0; j0 < {s.value_depth}; j0 += {tile}) {{
                    {tiles(pv)}
                }}
            }} else {{
                {plain}
            }}"""
    return "\n".join(parts), scores, values


def attention_source(name: str, shape: AttentionShape) -> str:
    """The C definition of kernel ``name`` for ``shape`` (see the module doc)."""
    br, bk = block_sizes(shape)
    s = shape
    m_blocks = -(-s.rows // br)
    micro, scores, values = _micro_kernels(name, s, br, bk, _value_tile(s))
    bias_param = "const float *restrict bias, " if s.bias_strides is not None else ""
    if s.bias_strides is not None:
        sb, si, sn = s.bias_strides
        bias_row = f"const float *brow = bias + (int64_t){sb} * b + (int64_t){si} * (i0 + i) + (int64_t){sn} * n0;"
        bias_add = f" + brow[(int64_t){sn} * n]"
    else:
        bias_row, bias_add = "", ""
    if s.causal is not None:
        key_end = f"int64_t last = i0 + rows - 1 + ({s.causal});\n" \
                  f"        int64_t key_end = last + 1 < {s.keys} ? (last + 1 > 0 ? last + 1 : 0) : {s.keys};"
        mask = f"if (n0 + n > i0 + i + ({s.causal})) x = -INFINITY;"
    else:
        key_end, mask = f"int64_t key_end = {s.keys};", ""
    return f"""#include <math.h>
#include <stdint.h>
#include <string.h>
{micro}
{_EXP.replace("NAME", name)}
void {name}(const float *restrict q, const float *restrict kt, const float *restrict v, {bias_param}float *restrict out)
{{
    #pragma omp parallel for schedule(static, 1)
    for (int64_t task = 0; task < (int64_t){s.batch * m_blocks}; task++) {{
        int64_t b = task / {m_blocks}, i0 = task % {m_blocks} * {br};
        int64_t rows = {s.rows} - i0 < {br} ? {s.rows} - i0 : {br};
        float sc[{br}][{bk}] __attribute__((aligned(64)));
        float acc[{br}][{s.value_depth}] __attribute__((aligned(64)));
        float mx[{br}], sum[{br}];
        memset(acc, 0, sizeof acc);
        for (int64_t i = 0; i < {br}; i++) {{ mx[i] = -INFINITY; sum[i] = 0.0f; }}
        const float *qb = q + (b * {s.rows} + i0) * {s.depth};
        const float *kb = kt + b * (int64_t){s.depth * s.keys};
        const float *vb = v + b * (int64_t){s.keys * s.value_depth};
        {key_end}
        for (int64_t n0 = 0; n0 < key_end; n0 += {bk}) {{
            int64_t nk = key_end - n0 < {bk} ? key_end - n0 : {bk};
            {scores}
            for (int64_t i = 0; i < rows; i++) {{
                float *restrict srow = sc[i];
                {bias_row}
                float best = mx[i];
                #pragma omp simd reduction(max:best)
                for (int64_t n = 0; n < nk; n++) {{
                    float x = srow[n] * {_float(s.scale)}{bias_add};
                    {mask}
                    srow[n] = x;
                    best = x > best ? x : best;
                }}
                float total = 0.0f;
                if (best == -INFINITY) {{                /* every key so far masked out: weights 0 */
                    for (int64_t n = 0; n < nk; n++) srow[n] = 0.0f;
                    continue;
                }}
                float alpha = {name}_exp(mx[i] - best);
                #pragma omp simd reduction(+:total)
                for (int64_t n = 0; n < nk; n++) {{
                    float p = {name}_exp(srow[n] - best);
                    srow[n] = p;
                    total += p;
                }}
                sum[i] = sum[i] * alpha + total;
                mx[i] = best;
                if (alpha != 1.0f) {{
                    float *restrict arow = acc[i];
                    #pragma omp simd
                    for (int64_t j = 0; j < {s.value_depth}; j++) arow[j] *= alpha;
                }}
            }}
            {values}
        }}
        for (int64_t i = 0; i < rows; i++) {{
            float *restrict orow = out + (b * {s.rows} + i0 + i) * {s.value_depth};
            float inv = sum[i] > 0.0f ? 1.0f / sum[i] : 0.0f;
            #pragma omp simd
            for (int64_t j = 0; j < {s.value_depth}; j++) orow[j] = acc[i][j] * inv;
        }}
    }}
}}
"""
