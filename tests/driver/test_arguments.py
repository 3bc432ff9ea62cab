"""Tests of tesched.driver.arguments: a kernel's argument specification and the checks of a call, without
compiling anything (the specification comes from the lowered function's signature)."""
import numpy as np
import pytest

import tesched as ts
from tesched.codegen.signature import signature_of
from tesched.driver.allocations import Allocations, evaluate_size
from tesched.driver.arguments import KernelArguments


def _arguments(tensors, out, name="k"):
    func = ts.lower(ts.create_schedule(out.op), tensors, name=name)
    signature = signature_of(func)
    return KernelArguments(name, signature, Allocations(name, (), evaluate_size))


def test_sizes_bind_from_affine_dimensions():
    m = ts.var("m")
    A = ts.placeholder((8 * m,), name="A")
    B = ts.compute((8 * m,), lambda i: A[i] + 1.0, name="B")
    args = _arguments([A, B], B)
    assert args.arg_dims() is None          # 8*m is an expression of the sizes, not a size
    assert args.bind([np.zeros(24, np.float32), None]) == [3]
    with pytest.raises(ValueError, match=r"argument A: dimension 0 is 20, which is not .* for any integer m"):
        args.bind([np.zeros(20, np.float32), None])


def test_omitted_outputs_are_allocated_with_the_bound_shape():
    n = ts.var("n")
    A = ts.placeholder((n, 2), name="A")
    B = ts.compute((n, 2), lambda i, j: A[i, j] * 2.0, name="B")
    args = _arguments([A, B], B)
    assert args.arg_dims() == [(-1, 2), (-1, 2)]
    arrays, outputs, sizes, write_back = args.checked((np.zeros((5, 2), np.float32),))
    assert sizes == [5] and len(outputs) == 1 and outputs[0].shape == (5, 2) and arrays[1] is outputs[0]
    assert write_back == []                          # aligned arrays are read in place


@pytest.mark.parametrize("bad, error, message", [
    (lambda a, b: (a.astype(np.float64), b), TypeError, "argument A: expected dtype float32"),
    (lambda a, b: (a, b[:, ::2]), ValueError, "argument B: expected shape"),
    (lambda a, b: (a[:, ::-1], b), ValueError, "argument A: array is not C-contiguous"),
    (lambda a, b: (a, a), ValueError, "argument B: output overlaps argument A"),
    (lambda a, b: (a,) * 3, TypeError, r"k takes 2 arrays \(A, B\) or its 1 inputs, got 3"),
])
def test_each_bad_argument_is_named(bad, error, message):
    A = ts.placeholder((3, 4), name="A")
    B = ts.compute((3, 4), lambda i, j: A[i, j] + 1.0, name="B")
    args = _arguments([A, B], B)
    with pytest.raises(error, match=message):
        args.checked(bad(np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32)))
