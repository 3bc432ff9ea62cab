"""Fused attention: ``attention(q, kt, v, bias, scale)[b, i, j] = sum_n softmax_n(scale * q[b, i] . kt[b, :, n]
+ bias[b, i, n]) * v[b, n, j]`` in one kernel, for ``q`` ``(B, M, D)``, ``kt`` the keys transposed ``(B, D, N)``,
``v`` ``(B, N, Dv)`` and an optional additive ``bias`` broadcast to ``(B, M, N)`` (``-inf`` masks a key out).
``causal=c`` masks out the keys ``n > i + c`` of query ``i`` by comparing indices (``c = 0``: PyTorch's
``is_causal``), so a causal mask costs no ``M x N`` tensor.

A row whose keys are all masked out gives zeros (as PyTorch's decomposed ``scaled_dot_product_attention``
does). The default schedule computes one query row at a time inside the output's loop over rows (parallel
over batches and rows): the row's scores (the key loop vectorized, the head dimension outside it), their
maximum, the sum of the exponentials, and the exponentials times ``v`` (the value columns vectorized), then
the division. So only one row of scores per thread is ever stored (``N`` floats), never the ``M x N``
matrix. This is row tiling with a two-pass softmax over each stored row, not an online (one-pass) softmax:
the graph's ``nn.attention`` runs the online-softmax kernel of :mod:`tesched.graph.attention_kernel` instead
(float32, static shapes), and keeps this declaration as its definition and for the other cases.
"""
from __future__ import annotations

import math

import tesched as ts
from tesched.nn.elemwise import broadcast_read
from tesched.nn.pattern import Pattern, compute
from tesched.nn.schedule import parallel_outer, reduction_work, register_schedule
from tesched.nn.shape import broadcast_shapes
from tesched.schedule.schedule import Schedule
from tesched.te.expr import Expr, as_expr
from tesched.te.tensor import Tensor

STAGE_OP = "attention_row"
"""The op name of the per-row stages (scores, maximum, sum) the attention schedule places itself."""


LN2_HIGH, LN2_LOW = 0.693145751953125, 1.428606765330187e-06     # ln 2 in two parts (the first exact in 16 bits)
EXP_FLOOR = -87.0                                                  # exp(-87) is about 2**-125.5: normal floats


def exp_nonpositive(x: Expr) -> Expr:
    """``exp(x)`` for float32 ``x <= 0`` with additions, multiplications, comparisons and selects only, so a
    vectorized loop keeps it in SIMD code (a call of ``expf`` runs one lane at a time). ``x = -m ln 2 + r``
    with ``m = round(-x / ln 2)`` and ``|r| <= ln 2 / 2``; ``exp(r)`` by its Taylor polynomial of degree 7
    (error below 2e-8 there) and ``2**-m`` as a product over the bits of ``m``. ``x`` below -87 counts as
    -87 (a result under ``2**-125``, where the softmax weights it serves are below float32's resolution);
    a NaN gives NaN."""
    clamped = ts.maximum(x, EXP_FLOOR)
    m = (clamped * -1.4426950408889634 + 0.5).astype("int32")       # truncation of a non-negative: a floor
    mf = m.astype("float32")
    r = clamped + mf * LN2_HIGH + mf * LN2_LOW
    value = as_expr(1.0 / math.factorial(7), "float32")
    for k in range(6, -1, -1):
        value = value * r + 1.0 / math.factorial(k)
    for bit in range(7):                                             # m <= 126
        value = value * ts.select(((m >> bit) & 1) != 0, 2.0 ** -(2 ** bit), 1.0)
    return ts.select(x == x, value, x)                               # a NaN stays NaN


def attention(q: Tensor, kt: Tensor, v: Tensor, bias: Tensor | None = None, scale: float = 1.0,
              causal: int | None = None) -> Tensor:
    """Softmax attention of ``q`` over keys ``kt`` (transposed) and values ``v``; see the module doc."""
    if q.ndim != 3 or kt.ndim != 3 or v.ndim != 3:
        raise ValueError(f"attention: q, kt and v must be 3-D, got {q.shape}, {kt.shape} and {v.shape}")
    (batch, rows, depth), (_, _, keys) = q.shape, kt.shape
    if kt.shape[:2] != (batch, depth) or v.shape[:2] != (batch, keys):
        raise ValueError(f"attention: shapes q {q.shape}, kt {kt.shape} and v {v.shape} disagree (expected kt "
                         f"({batch}, {depth}, N) and v ({batch}, N, Dv))")
    if len({t.dtype for t in (q, kt, v)}) != 1 or (bias is not None and bias.dtype != q.dtype):
        raise TypeError("attention: q, kt, v and bias must have one dtype")
    if bias is not None and broadcast_shapes(bias.shape, (batch, rows, keys), "attention bias") != (batch, rows, keys):
        raise ValueError(f"attention: bias of shape {bias.shape} does not broadcast to {(batch, rows, keys)}")
    d = ts.reduce_axis((0, depth), "d")
    scores = compute((batch, rows, keys), lambda b, i, n: ts.sum(q[b, i, d] * kt[b, d, n], axis=d),
                     name="attention_scores", pattern=Pattern.OPAQUE, op=STAGE_OP)

    def logit(b, i, n):
        value = scores[b, i, n] * scale
        if bias is not None:
            value = value + broadcast_read(bias, (b, i, n))
        return value if causal is None else ts.select(n <= i + causal, value, float("-inf"))

    n1 = ts.reduce_axis((0, keys), "n")
    biggest = compute((batch, rows), lambda b, i: ts.max(logit(b, i, n1), axis=n1), name="attention_max",
                      pattern=Pattern.OPAQUE, op=STAGE_OP)

    def exponential(b, i, n, one):
        # a row masked out whole has maximum -inf: its weights are 0, not exp(-inf + inf); the sum over
        # ``one`` (a single term) makes the weights a stage of their own, stored per row, not recomputed
        # for every value column (a stage without a reduction would be inlined into its readers)
        return ts.sum(ts.select(biggest[b, i] == float("-inf"), 0.0, exp_nonpositive(logit(b, i, n) - biggest[b, i])),
                      axis=one)

    one = ts.reduce_axis((0, 1), "one")
    weights = compute((batch, rows, keys), lambda b, i, n: exponential(b, i, n, one), name="attention_weights",
                      pattern=Pattern.OPAQUE, op=STAGE_OP)
    n2 = ts.reduce_axis((0, keys), "n")
    total = compute((batch, rows), lambda b, i: ts.sum(weights[b, i, n2], axis=n2), name="attention_sum",
                    pattern=Pattern.OPAQUE, op=STAGE_OP)
    n3 = ts.reduce_axis((0, keys), "n")
    weighted = compute((batch, rows, v.shape[2]), lambda b, i, j: ts.sum(weights[b, i, n3] * v[b, n3, j], axis=n3),
                       name="attention_weighted", pattern=Pattern.OPAQUE, op="attention")
    return compute(weighted.shape,
                   lambda b, i, j: ts.select(total[b, i] == 0.0, 0.0, weighted[b, i, j] / total[b, i]),
                   name="attention", pattern=Pattern.OPAQUE, op="attention")


@register_schedule("attention", producers=(STAGE_OP,))
def schedule_attention(s: Schedule, weighted: Tensor, host: Tensor) -> None:
    """One query row per iteration of the output's fused (batch, row) loop: see the module doc."""
    hstage = s[host]
    b, i, j = hstage.op.axis
    row = parallel_outer(hstage, [b, i], 3 * reduction_work(weighted))
    hstage.vectorize(j)
    stages = {t.op.name: t for t in _producers(host)}
    scores = stages["attention_scores"]
    for name in ("attention_scores", "attention_max", "attention_weights", "attention_sum"):
        s[stages[name]].compute_at(hstage, row)
    for name in ("attention_max", "attention_sum"):
        s[stages[name]].vectorize(s[stages[name]].op.reduce_axis[0])
    estage = s[stages["attention_weights"]]
    estage.reorder(*estage.op.axis[:2], *estage.op.reduce_axis, estage.op.axis[2])
    estage.vectorize(estage.op.axis[2])
    sstage = s[scores]
    sb, si, sn = sstage.op.axis
    sstage.reorder(sb, si, *sstage.op.reduce_axis, sn)
    sstage.vectorize(sn)
    wstage = s[weighted]
    wstage.compute_at(hstage, row)
    wb, wi, wj = wstage.op.axis
    wstage.reorder(wb, wi, *wstage.op.reduce_axis, wj)
    wstage.vectorize(wj)


def _producers(t: Tensor) -> list[Tensor]:
    """The compute stages ``t`` reads, directly or not (each once)."""
    found: dict[int, Tensor] = {}
    frontier = [t]
    while frontier:
        for src in frontier.pop().op.input_tensors:
            if id(src.op) not in found and hasattr(src.op, "reduce_axis"):
                found[id(src.op)] = src
                frontier.append(src)
    return list(found.values())
