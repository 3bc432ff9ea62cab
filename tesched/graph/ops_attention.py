"""The fused attention graph op ``nn.attention(q, kt, v[, bias], scale)``: ``softmax(scale * q @ kt + bias) @ v``
per batch in one kernel (:func:`tesched.nn.attention.attention`), for ``q`` ``(B, M, D)``, ``kt`` ``(B, D, N)``,
``v`` ``(B, N, Dv)``, an additive ``bias`` that broadcasts to ``(B, M, N)`` and ``causal=c``, which masks out
the keys ``n > i + c`` of query ``i``. A row whose logits are all ``-inf`` gives zeros. The ``fuse_attention`` pass makes it from the batched products and softmax the frontend
imports; this module only defines the op. A built graph runs a float32 ``nn.attention`` of static shapes
with the online-softmax kernel of :mod:`.attention_kernel`, any other with the declaration's kernel.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from tesched.graph.ir import Call, Expr
from tesched.graph.op import register_op
from tesched.nn.attention import attention as declare_attention
from tesched.nn.pattern import Pattern


def _attention_eval(args: Sequence[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    q, kt, v = (a.astype(np.float64) for a in args[:3])
    logits = q @ kt * attrs["scale"]
    if len(args) == 4:
        logits = logits + args[3].astype(np.float64)
    if attrs["causal"] is not None:
        rows, keys = logits.shape[-2:]
        logits = np.where(np.arange(keys)[None, :] <= np.arange(rows)[:, None] + attrs["causal"], logits, -np.inf)
    biggest = logits.max(-1, keepdims=True)
    live = np.isfinite(biggest)
    weights = np.where(live, np.exp(logits - np.where(live, biggest, 0.0)), 0.0)
    total = weights.sum(-1, keepdims=True)
    return (np.where(total > 0, weights / np.where(total > 0, total, 1.0), 0.0) @ v).astype(args[0].dtype)


def _declare(args: Sequence[Any], attrs: Mapping[str, Any]) -> Any:
    return declare_attention(args[0], args[1], args[2], args[3] if len(args) == 4 else None, attrs["scale"],
                             attrs["causal"])


_ATTENTION = register_op("nn.attention", Pattern.OPAQUE, _declare, _attention_eval, None)


def attention(q: Expr, kt: Expr, v: Expr, bias: Expr | None = None, scale: float = 1.0,
              causal: int | None = None) -> Call:
    """``softmax(scale * q @ kt + bias) @ v`` per batch, keys after ``i + causal`` masked out when given (see
    the module doc)."""
    args = [q, kt, v] if bias is None else [q, kt, v, bias]
    return Call(_ATTENTION, args, {"scale": float(scale), "causal": None if causal is None else int(causal)})
