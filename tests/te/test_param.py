"""Tests of tesched.te.param: declaring runtime parameters, the dtypes they may have, their order, and the
error for one used where a size must be known when the loops are built."""
import pytest

import tesched as ts
from tesched.errors import LoweringError
from tesched.te.expr import Param
from tesched.te.param import PARAM_TYPES, params_of


@pytest.mark.parametrize("dtype", PARAM_TYPES)
def test_param_of_each_passable_dtype(dtype):
    p = ts.param("p", dtype)
    assert isinstance(p, Param) and p.dtype == dtype and p.name == "p"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_params_are_refused_with_the_way_out(dtype):
    with pytest.raises(TypeError, match=r"param h: dtype .* cannot be passed at call time.*float32 param"):
        ts.param("h", dtype)


def test_a_float_size_variable_points_to_param():
    with pytest.raises(TypeError, match=r"var r_sigma: size variables must be integers.*ts.param\('r_sigma'"):
        ts.var("r_sigma", dtype="float32")


def test_params_of_lists_each_once_in_the_order_made():
    b, a = ts.param("b"), ts.param("a", "int32")
    assert params_of([a * 2 + a, (b + 1.0) * a.astype("float32"), 3]) == [b, a]


def _reduction_over_k(A, k):
    kk = ts.reduce_axis((0, k), name="kk")
    return ts.compute((8,), lambda i: ts.sum(A[i, kk], axis=kk), name="S")


def _shape_k(A, k):
    return ts.compute((k,), lambda i: A[i, 0], name="T")


@pytest.mark.parametrize("make, stage", [(_reduction_over_k, "S"), (_shape_k, "T")])
def test_a_param_in_a_shape_or_extent_names_param_and_stage(make, stage):
    A = ts.placeholder((8, 8), name="A")
    out = make(A, ts.param("k", "int32"))
    with pytest.raises(LoweringError, match=rf"param k is used in the shape or a reduction extent of {stage}.*ts.var"):
        ts.lower(ts.create_schedule(out.op), [A, out])
