"""``fuse_attention``: ``batch_matmul(softmax(logits), v)`` becomes one ``nn.attention`` when the logits are
``batch_matmul(q, kt)`` through reshapes that keep the last two axes, multiplications by scalar constants
(the scale) and additions of a tensor that does not depend on them (a bias or mask), in any order.

Also looked through: the guard PyTorch's decomposed ``scaled_dot_product_attention`` puts around the
softmax, ``where(not any(logits != -inf), 0, softmax)``, which zeroes a row masked out whole, as
``nn.attention`` does anyway. Every value of the chain must feed only the chain (attention weights also
returned to the caller leave the graph as it is). Without the guard, a row whose logits are all ``-inf``
gives zeros after the rewrite where PyTorch's plain softmax gives NaN. A constant causal mask (0 up to the
diagonal ``n <= i + c``, ``-inf`` after it: what ``is_causal=True`` folds to) becomes the op's ``causal=c``,
so no ``M x N`` constant is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.ops_attention import attention
from tesched.graph.ops_elemwise import add, multiply
from tesched.graph.ops_transform import broadcast_to, reshape
from tesched.graph.visit import post_order, use_counts


@dataclass(frozen=True)
class _Match:
    q: Expr
    kt: Expr
    v: Expr
    scale: float
    biases: tuple[tuple[Expr, float, tuple[int, ...]], ...]   # (bias, factor applied after it, shape it met)


def _op(node: Expr, name: str) -> TypeGuard[Call]:
    return isinstance(node, Call) and not isinstance(node.op, Function) and node.op_name == name


def _scalar(node: Expr) -> float | None:
    """The value of a floating constant all of whose elements are one number."""
    if isinstance(node, Constant) and np.issubdtype(node.data.dtype, np.floating) and node.data.size:
        first = node.data.reshape(-1)[0]
        if node.data.size == 1 or bool(np.all(node.data == first)):
            return float(first)
    return None


def _sides(node: Call, scores_full: bool) -> tuple[Expr, Expr]:
    """``(scores, other)`` of a binary op: the scores are the operand of the output's shape (the first when
    both are)."""
    a, b = node.args
    if scores_full and a.tensor_type.extents != node.tensor_type.extents and \
            b.tensor_type.extents == node.tensor_type.extents:
        return b, a
    if not scores_full and _scalar(a) is not None:
        return b, a
    return a, b


def _keeps_rows(node: Call) -> bool:
    """A reshape that keeps the last two axes (splits or merges the batch axes only)."""
    before, after = node.args[0].tensor_type.extents, node.tensor_type.extents
    return len(before) >= 2 and len(after) >= 2 and before[-2:] == after[-2:]


def _unguarded(node: Expr) -> tuple[Expr, Expr | None]:
    """``(softmax, logits guarded)`` under ``where(not any(logits != -inf, -1), 0, softmax)``, else
    ``(node, None)``."""
    if not _op(node, "where"):
        return node, None
    fill = node.args[1].args[0] if _op(node.args[1], "broadcast_to") else node.args[1]   # a dynamic shape's fill
    if not (_scalar(fill) == 0.0 and _op(node.args[2], "nn.softmax")):
        return node, None
    cond = node.args[0]
    if not (_op(cond, "logical_not") and _op(cond.args[0], "any") and cond.args[0].attrs["keepdims"]):
        return node, None
    ndim, axis = node.tensor_type.ndim, cond.args[0].attrs["axis"]
    if [a % ndim for a in ([axis] if isinstance(axis, int) else axis or [])] != [ndim - 1]:
        return node, None
    inner = cond.args[0].args[0]
    if _op(inner, "logical_not"):
        inner = inner.args[0]
        if _op(inner, "equal") and _scalar(inner.args[1]) == float("-inf"):
            return node.args[2], inner.args[0]
    return node, None


def _match(pv: Call, counts: dict[int, int]) -> _Match | None:
    weights, v = pv.args
    if pv.tensor_type.dtype != "float32":                  # the kernel's exponential is float32's
        return None
    node = weights
    while _op(node, "reshape") and _keeps_rows(node) and counts[id(node)] == 1:
        node = node.args[0]
    softmax, guarded = _unguarded(node)
    if softmax is not node and counts[id(node)] != 1:
        return None
    if not _op(softmax, "nn.softmax") or counts[id(softmax)] != 1 or \
            softmax.attrs["axis"] % softmax.tensor_type.ndim != softmax.tensor_type.ndim - 1:
        return None
    node = softmax.args[0]
    if counts[id(node)] != (1 if guarded is None else 2) or (guarded is not None and guarded is not node):
        return None
    scale = 1.0
    biases: list[tuple[Expr, float, tuple[int, ...]]] = []
    while True:
        if node is not softmax.args[0] and counts[id(node)] != 1:
            return None
        if _op(node, "reshape") and _keeps_rows(node):
            node = node.args[0]
        elif _op(node, "multiply") and _scalar(_sides(node, False)[1]) is not None:
            scores, constant = _sides(node, False)
            factor = _scalar(constant)
            assert factor is not None
            scale *= factor                     # of the scores, and of every bias added before it
            node = scores
        elif _op(node, "add") and _sides(node, True)[1].tensor_type.ndim <= node.tensor_type.ndim \
                and not node.tensor_type.is_dynamic:         # (a bias of a dynamic shape: left unfused)
            scores, bias = _sides(node, True)
            biases.append((bias, scale, node.tensor_type.shape))
            node = scores
        elif _op(node, "nn.batch_matmul"):
            break
        else:
            return None
    if counts[id(node)] != 1 or node.tensor_type.extents[:2] != pv.tensor_type.extents[:2]:
        return None
    return _Match(node.args[0], node.args[1], v, scale, tuple(biases))


def _batched_bias(bias: Expr, factor: float, shape: tuple[int, ...], batch: int) -> Expr:
    """``factor * bias`` (added where the logits had ``shape``) in a form that broadcasts to ``(batch, M, N)``."""
    ndim = len(shape)
    padded = (1,) * (ndim - bias.tensor_type.ndim) + bias.tensor_type.shape
    if int(np.prod(padded[:-2])) == 1:
        bias = reshape(bias, padded[-2:]) if bias.tensor_type.shape != padded[-2:] else bias
    else:
        bias = reshape(broadcast_to(bias, shape[:-2] + padded[-2:]), (batch,) + padded[-2:])
    return bias if factor == 1.0 else multiply(bias, factor)


def causal_offset(bias: Expr, factor: float) -> int | None:
    """``c`` when ``factor * bias`` is the constant causal mask of offset ``c``: 0 where key ``n <= i + c``
    (query ``i``), ``-inf`` elsewhere, over the whole last two axes (leading axes of one element)."""
    if not isinstance(bias, Constant) or factor <= 0 or bias.data.ndim < 2 or bias.data.size != \
            bias.data.shape[-1] * bias.data.shape[-2]:
        return None
    rows, keys = (int(d) for d in bias.data.shape[-2:])
    mask = bias.data.reshape(rows, keys)
    offset = int(np.count_nonzero(mask[0] == 0)) - 1
    above = np.arange(keys)[None, :] > np.arange(rows)[:, None] + offset
    expected = np.where(above, -np.inf, 0.0)
    return offset if np.array_equal(mask, expected) else None


def fuse_attention(f: Function) -> Function:
    """Replace each attention chain of ``f`` by one ``nn.attention`` (see the module doc)."""
    counts = use_counts(f.body)
    matches = {id(node): m for node in post_order(f.body)
               if _op(node, "nn.batch_matmul") and (m := _match(node, counts)) is not None}
    if not matches:
        return f
    memo: dict[int, Expr] = {}
    for node in post_order(f.body):
        match = matches.get(id(node))
        if match is None:
            kids = node.children()
            new_kids = tuple(memo[id(k)] for k in kids)
            memo[id(node)] = node if all(a is b for a, b in zip(kids, new_kids)) else node.with_children(new_kids)
            continue
        total: Expr | None = None
        causal: int | None = None
        for bias, factor, shape in match.biases:
            offset = causal_offset(memo[id(bias)], factor) if shape[-2:] == bias.tensor_type.shape[-2:] else None
            if offset is not None and causal is None:
                causal = offset                     # a mask computed from indices in the kernel
                continue
            term = _batched_bias(memo[id(bias)], factor, shape, node.tensor_type.shape[0])
            total = term if total is None else add(total, term)
        memo[id(node)] = attention(memo[id(match.q)], memo[id(match.kt)], memo[id(match.v)], total, match.scale,
                                   causal)
    return f.with_body(memo[id(f.body)])
