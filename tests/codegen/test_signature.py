"""Tests of tesched.codegen.signature: a kernel's arguments, sizes and heap buffers read from its lowered
function, and written to JSON and back with every name, dtype and shape intact (symbolic shapes included)."""
import json

import pytest

import tesched as ts
from tesched.codegen.signature import Signature, signature_of
from tesched.driver.allocations import evaluate_size


def lowered():
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n, 8 * m), name="A")
    B = ts.placeholder((m,), dtype="float64", name="B")
    C = ts.compute((n + 2, 8 * m), lambda i, j: A[i % n, j].astype("float64") * B[j // 8], name="C")
    return ts.lower(ts.create_schedule(C.op), [A, B, C], name="affine")


def test_signature_of_a_lowered_function():
    sig = signature_of(lowered())
    assert sig.name == "affine" and [p.name for p in sig.params] == ["n", "m"]
    assert [(a.name, a.dtype, a.is_output) for a in sig.args] == [("A", "float32", False), ("B", "float64", False),
                                                                  ("C", "float64", True)]


@pytest.mark.parametrize("n, m", [(1, 1), (3, 5), (10, 2)])
def test_json_round_trip_keeps_shapes(n, m):
    sig = signature_of(lowered())
    back = Signature.from_json(json.loads(json.dumps(sig.to_json())))
    assert back.to_json() == sig.to_json()

    def shapes(s):
        values = {id(s.params[0]): n, id(s.params[1]): m}
        return [tuple(d if isinstance(d, int) else evaluate_size(d, values) for d in a.shape) for a in s.args]

    assert shapes(back) == shapes(sig) == [(n, 8 * m), (m,), (n + 2, 8 * m)]


def test_heap_buffers_keep_their_order_and_shapes():
    n = ts.var("n")
    V = ts.placeholder((n,), name="V")
    outer = ts.compute((n, n), lambda i, j: V[i] * V[j], name="outer")
    k = ts.reduce_axis((0, n), name="k")
    R = ts.compute((n,), lambda i: ts.sum(outer[i, k], axis=k), name="R")
    f = ts.build(ts.create_schedule(R.op), [V, R], name="outer_sum")
    record = f.signature.to_json()
    assert record["allocations"] == [{"name": "outer", "dtype": "float32", "shape": [{"size": 0}, {"size": 0}]}]
    back = Signature.from_json(json.loads(json.dumps(record)))
    assert back.allocations[0].shape == [back.params[0], back.params[0]]


def test_malformed_records_raise_value_error():
    with pytest.raises(ValueError, match="kernel signature record is malformed"):
        Signature.from_json({"name": "k", "args": [{"name": "A"}], "params": [], "allocations": []})


def test_runtime_params_round_trip_with_their_dtypes():
    A = ts.placeholder((4,), name="A")
    gain, flag = ts.param("gain", "float64"), ts.param("flag", "bool")
    B = ts.compute((4,), lambda i: ts.if_then_else(flag, A[i].astype("float64") * gain, 0.0), name="B")
    sig = signature_of(ts.lower(ts.create_schedule(B.op), [A, B]))
    assert [(p.name, p.dtype) for p in sig.scalars] == [("gain", "float64"), ("flag", "bool")]
    back = Signature.from_json(json.loads(json.dumps(sig.to_json())))
    assert [(p.name, p.dtype) for p in back.scalars] == [("gain", "float64"), ("flag", "bool")]
    assert back.to_json() == sig.to_json()
