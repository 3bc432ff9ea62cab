"""Intel AMX micro-kernels of ``nn.dense_packed``: bfloat16 x bfloat16 -> float32 and uint8 (or int8) x int8 ->
int32 on weights packed by ``nn.pack_dense_weight`` (that layout is AMX's VNNI-style B tile layout).

- :func:`amx_dense_microkernel` declares the product of an ``mr x nr`` output tile (each at most 32: up to
  2 x 2 AMX tiles) over the whole reduction ``k`` as a tensor intrinsic whose expression is the one
  ``dense_packed`` declares, so ``tensorize`` matches it (the C is in :mod:`tesched.intrin.amx_source`);
- :func:`amx_usable` says whether a target runs it: its features include ``amx_tile`` and ``amx_bf16`` (or
  ``amx_int8``); for the host target, the OS must also grant this process the tile state
  (:func:`os_permits_amx` asks once). A named target (``Target("x86-64-avx512+amx_int8")``) is taken at its
  word: its kernels ask the OS themselves when they load and, refused, run the scalar form of the product.

So the OS refusing AMX is never an error: host kernels fall back to the AVX-512 VNNI / BF16 schedules of
``nn.dense_packed``, forced ones to scalar code. This module schedules nothing.
"""
from __future__ import annotations

import ctypes
import functools
import platform
import sys

import tesched as ts
from tesched.intrin.amx_source import KINDS, amx_dense_source
from tesched.target import Target, as_target
from tesched.te.intrinsic import TensorIntrin

MAX_TILE = 32
"""Rows or columns of the largest micro-kernel tile (two AMX tiles of 16)."""

_FEATURE = {"bfloat16": "amx_bf16", "uint8": "amx_int8", "int8": "amx_int8"}
_ACCUMULATOR = {"bfloat16": "float32", "uint8": "int32", "int8": "int32"}
_SYS_ARCH_PRCTL = 158            # x86-64 Linux
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18


@functools.lru_cache(maxsize=None)
def os_permits_amx() -> bool:
    """Whether Linux grants this process AMX's tile state (asked once; False off x86-64 Linux, or where the
    kernel, a VM or a container refuses). The grant covers the whole process, kernels included."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


def amx_feature(data_dtype: str, weight_dtype: str) -> str | None:
    """The AMX feature (``amx_bf16`` or ``amx_int8``) a product of these operand dtypes needs, or None when
    AMX has no instruction for it."""
    return _FEATURE[data_dtype] if (data_dtype, weight_dtype) in KINDS else None


def amx_usable(data_dtype: str, weight_dtype: str, target: Target | str | None = None) -> bool:
    """Whether ``target`` (default: the current one) runs the AMX micro-kernel of this product (see the
    module docstring for the host's OS check)."""
    feature = amx_feature(data_dtype, weight_dtype)
    t = as_target(target)
    if feature is None or not t.has("amx_tile", feature):
        return False
    return t.name != "host" or os_permits_amx()


def _check(mr: int, nr: int, k: int, data_dtype: str, weight_dtype: str) -> None:
    if (data_dtype, weight_dtype) not in KINDS:
        raise TypeError(f"amx micro-kernel: no AMX product of {data_dtype} data and {weight_dtype} weights; "
                        f"supported: {sorted(KINDS)}")
    for label, value, most in (("mr", mr, MAX_TILE), ("nr", nr, MAX_TILE), ("k", k, None)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1 or (most and value > most):
            bound = f" at most {most}" if most else ""
            raise ValueError(f"amx micro-kernel: {label} must be a positive int{bound}, got {value!r}")
    group = KINDS[(data_dtype, weight_dtype)].group
    if k % group:
        raise ValueError(f"amx micro-kernel: k={k} must be a multiple of the packing group {group}")


def amx_dense_microkernel(mr: int, nr: int, k: int, data_dtype: str = "bfloat16",
                          weight_dtype: str | None = None) -> TensorIntrin:
    """``c[i, j] = sum_k wide(a[i, k]) * wide(w[k // G, j, k % G])`` for an ``mr x nr`` tile over the whole
    reduction ``k``, as ``nn.dense_packed`` declares it (``weight_dtype`` defaults to ``int8`` for 8-bit
    data, else to ``data_dtype``)."""
    weight = weight_dtype or ("int8" if data_dtype in ("uint8", "int8") else data_dtype)
    _check(mr, nr, k, data_dtype, weight)
    return _declare(mr, nr, k, data_dtype, weight)


@functools.lru_cache(maxsize=None)
def _declare(mr: int, nr: int, k: int, data_dtype: str, weight_dtype: str) -> TensorIntrin:
    kind = KINDS[(data_dtype, weight_dtype)]
    group, acc = kind.group, _ACCUMULATOR[data_dtype]
    a = ts.placeholder((mr, k), data_dtype, name="a")
    w = ts.placeholder((k // group, nr, group), weight_dtype, name="w")
    ko = ts.reduce_axis((0, k // group), "ko")
    kt = ts.reduce_axis((0, group), "kt")
    c = ts.compute((mr, nr), lambda i, j: ts.sum(a[i, group * ko + kt].astype(acc) * w[ko, j, kt].astype(acc),
                                                 axis=[ko, kt]), name="c")
    name = f"tesched_amx_{data_dtype}_{weight_dtype}_{mr}x{nr}x{k}"
    impl = ts.CIntrinsic(source=amx_dense_source(name, kind, mr, nr, k), body=f"{name}_body")
    return ts.decl_tensor_intrin(c.op, impl, name=name)
