"""Helpers for the AMX tests: whether this host runs AMX (and why not), operands of the narrow products and
their NumPy references with a tolerance fit for each accumulator."""
import numpy as np
import pytest

from tesched.intrin.amx import os_permits_amx
from tesched.nn import quantized_ref
from tesched.target import host_features

DTYPES = [("bfloat16", "bfloat16"), ("uint8", "int8"), ("int8", "int8")]
"""(data, weight) dtypes of the AMX products."""

FEATURE = {"bfloat16": "amx_bf16", "uint8": "amx_int8", "int8": "amx_int8"}


def amx_host() -> bool:
    """Whether this CPU has every AMX feature and the OS lets this process use it."""
    return {"amx_tile", "amx_bf16", "amx_int8"} <= host_features() and os_permits_amx()


def skip_without_amx(data_dtype: str) -> None:
    """Skip the calling test, saying why, unless this CPU has AMX for ``data_dtype`` and the OS grants it."""
    needed = {"amx_tile", FEATURE[data_dtype]}
    if not needed <= host_features():
        pytest.skip(f"this CPU lacks {sorted(needed - host_features())} (/proc/cpuinfo): no AMX to test")
    if not os_permits_amx():
        pytest.skip("the OS refuses this process AMX's tile state (arch_prctl ARCH_REQ_XCOMP_PERM failed)")


def operands(rng: np.random.Generator, m: int, n: int, k: int, data_dtype: str, weight_dtype: str):
    """``x[m, k]`` and ``w[n, k]`` (PyTorch's Linear layout): normal values for bfloat16, the whole range of
    8-bit integers otherwise."""
    if data_dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays need pip install tesched[bf16]")
        return (rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16),
                rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16))
    info = np.iinfo(data_dtype)
    return (rng.integers(info.min, info.max + 1, (m, k)).astype(data_dtype),
            rng.integers(-128, 128, (n, k)).astype(weight_dtype))


def check(got: np.ndarray, x: np.ndarray, w: np.ndarray) -> None:
    """Integers bit-exact; bfloat16 products (exact in float32) summed in float32, in any order."""
    expected = quantized_ref.dense(x, w)
    if got.dtype == np.int32:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.sqrt(x.shape[1]))
