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

So the ``M x N`` scores are never stored: a task keeps ``block_rows x (block_keys + Dv)`` floats, plus
``block_keys x (D + Dv)`` for zero-padded copies of a partial last key block (so that block too runs on the
micro-kernel tiles). The
exponential is a polynomial (as :func:`tesched.nn.attention.exp_nonpositive`) written on GCC/Clang vector types,
a whole key block at a time (the keys past a partial block's end count as masked out); its argument is never
positive, and below -87 it counts as 0. This module only writes text: compiling
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


def _exp_lanes(shape: AttentionShape) -> int:
    """Lanes of the exponential's vector type: a register of the micro-kernels' instruction set (4 for plain
    C, which the compiler splits as the target allows); a key block is a whole number of them."""
    return max(4, lanes(shape.isa, "float32"))


def _value_tile(shape: AttentionShape) -> int:
    """Value columns per tile of the ``P @ V`` micro-kernel: up to 4 vectors dividing ``Dv``; 0 when ``Dv`` is
    not a multiple of the vector (the loops are then plain C)."""
    width = lanes(shape.isa, "float32")
    if shape.value_depth % width:
        return 0
    return width * next(c for c in (4, 3, 2, 1) if (shape.value_depth // width) % c == 0)


_EXP = """
typedef float NAME_vf __attribute__((vector_size(BYTES)));
typedef int32_t NAME_vi __attribute__((vector_size(BYTES)));

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

/* NAME_exp on a vector, as bit operations on vector types (a select written as ?: in a scalar loop
   becomes a branch the compiler does not vectorize) */
static inline NAME_vf NAME_vexp(NAME_vf x)
{
    NAME_vf floor87 = (NAME_vf){0} - 87.0f;
    NAME_vi small = x < floor87;                                   /* -1 where x < -87; 0 for NaN */
    NAME_vf c = (NAME_vf)(((NAME_vi)x & ~small) | ((NAME_vi)floor87 & small));
    NAME_vi m = __builtin_convertvector(c * -1.4426950408889634f + 0.5f, NAME_vi);
    NAME_vf mf = __builtin_convertvector(m, NAME_vf);
    NAME_vf r = c + mf * 0.693145751953125f + mf * 1.428606765330187e-06f;
    NAME_vf p = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    NAME_vf y = p * (NAME_vf)((127 - m) << 23);
    return (NAME_vf)((NAME_vi)y & ~small);
}
"""


def _tail_width(shape: AttentionShape, bk: int) -> int:
    """Keys the partial last key block is padded to: its keys rounded up to whole vectors of the exponential
    (0 when the keys fill whole blocks)."""
    width = _exp_lanes(shape)
    return -(-(shape.keys % bk) // width) * width


def _micro_kernels(name: str, shape: AttentionShape, bk: int, tile: int) -> tuple[str, str, str]:
    """``(source, scores, values)``: the micro-kernel functions, and C statements computing a block's scores
    (``sc = q @ kt``) and adding its weights times ``v`` into the accumulator, tile by tile. The partial last
    block (which would read past the last key) has micro-kernels of its own, as wide as its padded keys
    (:func:`_tail_width`), reading the task's zero-padded copies ``ktail`` and ``vtail``. When ``Dv`` fits no
    tile, the weights times ``v`` are plain loops."""
    s, mr, tw = shape, _TILE_ROWS[shape.isa], _tail_width(shape, bk)
    rows = sorted({mr, 1})
    parts = [gemm_source(f"{name}_qk{r}", s.isa, "float32", r, bk, s.depth, False) for r in rows]
    if tw:
        parts += [gemm_source(f"{name}_qt{r}", s.isa, "float32", r, tw, s.depth, False) for r in rows]
    if tile:
        parts += [gemm_source(f"{name}_pv{r}", s.isa, "float32", r, tile, bk, False) for r in rows]
        if tw:
            parts += [gemm_source(f"{name}_pt{r}", s.isa, "float32", r, tile, tw, False) for r in rows]

    def tiles(call: str) -> str:
        return f"""int64_t i = 0;
                for (; i + {mr} <= rows; i += {mr}) {call.format(r=mr)}
                for (; i < rows; i++) {call.format(r=1)}"""

    def inside_or_tail(inside: str, tail: str) -> str:
        if not tw:
            return tiles(inside)
        return f"""if (n0 + {bk} <= {s.keys}) {{
                {tiles(inside)}
            }} else {{
                {tiles(tail)}
            }}"""
    qk = f"{name}_KERNEL{{r}}_tile(qb + i * {s.depth}, {s.depth}, 1, KEYS, 1, 0, 0, sc[i], {bk}, 1, 0);"
    scores = inside_or_tail(qk.replace("KERNEL", "qk").replace("KEYS", f"kb + n0, {s.keys}"),
                            qk.replace("KERNEL", "qt").replace("KEYS", f"&ktail[0][0], {tw}"))
    plain = f"""for (int64_t i = 0; i < rows; i++)
                    for (int64_t n = 0; n < nk; n++) {{
                        float p = sc[i][n];
                        const float *restrict vrow = vb + (n0 + n) * (int64_t){s.value_depth};
                        #pragma omp simd
                        for (int64_t j = 0; j < {s.value_depth}; j++) acc[i][j] += p * vrow[j];
                    }}"""
    if not tile:
        return "\n".join(parts), scores, plain
    pv = f"{name}_KERNEL{{r}}_tile(sc[i], {bk}, 1, VALUES + j0, {s.value_depth}, 1, 0, 0, acc[i] + j0, " \
         f"{s.value_depth}, 1, 1);"
    tail = pv.replace("KERNEL", "pt").replace("VALUES", "&vtail[0][0]")
    values = f"""for (int64_t j0 = 0; j0 < {s.value_depth}; j0 += {tile}) {{
                {inside_or_tail(pv.replace("KERNEL", "pv").replace("VALUES", f"vb + n0 * {s.value_depth}"), tail)}
            }}"""
    return "\n".join(parts), scores, values


def _tail_copies(shape: AttentionShape, bk: int, tile: int) -> tuple[str, str]:
    """``(declarations, fill)``: a task's zero-padded copies of the keys (and, with a value tile, the values)
    of the partial last key block, filled when the task reaches that block; empty without a partial block."""
    s, tw = shape, _tail_width(shape, bk)
    start = s.keys - s.keys % bk
    if not tw:
        return "", ""
    declare = f"float ktail[{s.depth}][{tw}] __attribute__((aligned(64)));"
    fill = f"""if (key_end > {start}) {{
            memset(ktail, 0, sizeof ktail);
            for (int64_t d = 0; d < {s.depth}; d++)
                memcpy(ktail[d], kb + d * (int64_t){s.keys} + {start}, {s.keys - start} * sizeof(float));"""
    if tile:
        declare += f"\n        float vtail[{tw}][{s.value_depth}] __attribute__((aligned(64)));"
        fill += f"""
            memset(vtail, 0, sizeof vtail);
            memcpy(vtail, vb + {start} * (int64_t){s.value_depth}, {(s.keys - start) * s.value_depth} * sizeof(float));"""
    return declare, fill + "\n        }"


def attention_source(name: str, shape: AttentionShape) -> str:
    """The C definition of kernel ``name`` for ``shape`` (see the module doc)."""
    br, bk = block_sizes(shape)
    s, width = shape, _exp_lanes(shape)
    m_blocks = -(-s.rows // br)
    tile = _value_tile(s)
    micro, scores, values = _micro_kernels(name, s, bk, tile)
    tail_declare, tail_fill = _tail_copies(s, bk, tile)
    tw = _tail_width(s, bk)
    block_width = f"n0 + {bk} <= {s.keys} ? {bk} : {tw}" if tw else str(bk)
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
{_EXP.replace("NAME", name).replace("BYTES", str(4 * width))}
void {name}(const float *restrict q, const float *restrict kt, const float *restrict v, {bias_param}float *restrict out)
{{
    #pragma omp parallel for schedule(static, 1)
    for (int64_t task = 0; task < (int64_t){s.batch * m_blocks}; task++) {{
        int64_t b = task / {m_blocks}, i0 = task % {m_blocks} * {br};
        int64_t rows = {s.rows} - i0 < {br} ? {s.rows} - i0 : {br};
        float sc[{br}][{bk}] __attribute__((aligned(64)));
        float acc[{br}][{s.value_depth}] __attribute__((aligned(64)));
        float mx[{br}], sum[{br}];
        {tail_declare}
        memset(acc, 0, sizeof acc);
        for (int64_t i = 0; i < {br}; i++) {{ mx[i] = -INFINITY; sum[i] = 0.0f; }}
        const float *qb = q + (b * {s.rows} + i0) * {s.depth};
        const float *kb = kt + b * (int64_t){s.depth * s.keys};
        const float *vb = v + b * (int64_t){s.keys * s.value_depth};
        {key_end}
        {tail_fill}
        for (int64_t n0 = 0; n0 < key_end; n0 += {bk}) {{
            int64_t nk = key_end - n0 < {bk} ? key_end - n0 : {bk};
            int64_t width = {block_width};                  /* keys the tiles compute: the block's, padded */
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
                    for (int64_t n = 0; n < {bk}; n++) srow[n] = 0.0f;
                    continue;
                }}
                float alpha = {name}_exp(mx[i] - best);
                for (int64_t n = nk; n < width; n++) srow[n] = -INFINITY;    /* past the keys: weight 0 */
                {name}_vf vsum = {{0}};
                for (int64_t n = 0; n < width; n += {width}) {{
                    {name}_vf p = {name}_vexp(*({name}_vf *)(srow + n) - best);
                    *({name}_vf *)(srow + n) = p;
                    vsum += p;
                }}
                for (int64_t w = 0; w < {width}; w++) total += vsum[w];
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
