"""Tests of tesched.te.extern_op: declaring a stage computed by the user's C function (``ts.extern``), its
two forms, and the errors for a name, an input, an argument or a source that cannot be right."""
import pytest

import tesched as ts
from tesched.te.extern_op import ExternOp, ExternStageCall, WholeIndex

SOURCE = "void add(const float *a, const float *b, float *c, int64_t n) { for (int64_t i = 0; i < n; i++) " \
         "c[i] = a[i] + b[i]; }"


def test_the_default_form_passes_inputs_output_then_sizes():
    n = ts.var("n")
    A, B = ts.placeholder((n,), name="A"), ts.placeholder((n,), name="B")
    C = ts.extern((n,), [A, B], name="C", fname="add", source=SOURCE)
    op = C.op
    assert isinstance(op, ExternOp) and op.function == "add" and tuple(C.shape) == (n,) and C.dtype == "float32"
    assert op.call_args[:3] == [A, B, C] and op.call_args[3] is n
    assert op.input_tensors == [A, B]
    assert isinstance(op.body, ExternStageCall) and op.body.source == SOURCE
    assert all(isinstance(i, WholeIndex) for read in op.body.args for i in read.indices)   # read whole
    assert "add(A[:], B[:])" in repr(op.body)


def test_the_tvm_form_takes_the_arguments_fcompute_gives():
    A = ts.placeholder((4, 6), name="A", dtype="int32")
    src = "void rev(int32_t *out, int64_t rows, const int32_t *in, int64_t cols) {}"
    B = ts.extern((4, 6), [A], lambda ins, outs: ts.extern_call("rev", outs[0], 4, ins[0], A.shape[1] * 1, source=src),
                  name="B", dtype="int32")
    args = B.op.call_args
    assert args[0] is B and args[2] is A and [getattr(a, "value", None) for a in (args[1],)] == [4]
    assert B.dtype == "int32" and tuple(B.shape) == (4, 6)


def test_the_same_input_twice_is_one_input():
    A = ts.placeholder((4,), name="A")
    B = ts.extern((4,), [A, A], name="B", fname="add", source=SOURCE)
    assert B.op.input_tensors == [A] and B.op.call_args == [A, B]


@pytest.mark.parametrize("kwargs, error, words", [
    ({"fname": "not a name", "source": SOURCE}, ValueError, "extern E: the function name must be a C identifier"),
    ({"fname": "exp", "source": SOURCE}, ValueError, "extern E: exp is a name of tesched's own functions"),
    ({"fname": "ts_add", "source": SOURCE}, ValueError, "ts_add is a name of tesched's own functions"),
    ({"fname": "add"}, ValueError, "extern E: fname=add needs source="),
    ({"fname": "sub", "source": SOURCE}, ValueError, "extern E: its source does not define sub"),
    ({"fname": "add", "source": 3}, TypeError, "extern E: source must be C text"),
    ({}, ValueError, "extern E: give either fcompute .* or fname= and source="),
    ({"fname": "add", "source": SOURCE, "dtype": "float37"}, TypeError, "extern E: unknown dtype"),
])
def test_bad_declarations_name_the_extern(kwargs, error, words):
    A = ts.placeholder((4,), name="A")
    with pytest.raises(error, match=words):
        ts.extern((4,), [A], name="E", **kwargs)


@pytest.mark.parametrize("inputs, error, words", [
    (["A"], TypeError, "extern E: input 0 is a str, not a tensor"),
    (3, TypeError, "extern E: inputs must be a list of tensors, got int"),
])
def test_inputs_must_be_tensors(inputs, error, words):
    with pytest.raises(error, match=words):
        ts.extern((4,), inputs, name="E", fname="add", source=SOURCE)


def test_bad_fcompute_results_and_arguments_name_the_extern():
    n = ts.var("n")
    A, other = ts.placeholder((n,), name="A"), ts.placeholder((n,), name="other")
    m = ts.var("m")
    src = "void f(void) {}"
    cases = [
        (lambda ins, outs: None, TypeError, "extern E: fcompute must return ts.extern_call"),
        (lambda ins, outs: ts.extern_call("f", ins[0], source=src), ValueError, r"not given output tensor outs\[0\]"),
        (lambda ins, outs: ts.extern_call("f", other, outs[0], source=src), ValueError,
         "argument 0 is tensor other, which is neither an input of the stage nor an output"),
        (lambda ins, outs: ts.extern_call("f", outs[0], 1.5, source=src), TypeError, "argument 1 is a float"),
        (lambda ins, outs: ts.extern_call("f", outs[0], m, source=src), TypeError,
         "argument 1 .* must be an integer expression of the size variables"),
        (lambda ins, outs: ts.extern_call("f", outs[0], ins[0][0], source=src), TypeError,
         "argument 1 .* must be an integer expression"),
        (lambda ins, outs: ts.extern_call("f g", outs[0], source=src), ValueError,
         "extern_call: the function name must be a C identifier"),
    ]
    for fcompute, error, words in cases:
        with pytest.raises(error, match=words):
            ts.extern((n,), [A], fcompute, name="E")
    with pytest.raises(ValueError, match="source= goes with fname="):
        ts.extern((n,), [A], lambda ins, outs: None, name="E", source=src)


def test_several_outputs_share_a_shape():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    lo, hi = ts.extern([(n,), (n,)], [A], name="E", dtype=["float32", "int32"], fname="add", source=SOURCE)
    assert lo.op is hi.op and (lo.dtype, hi.dtype) == ("float32", "int32") and lo.op.num_outputs == 2
    assert lo.op.call_args[:3] == [A, lo, hi] and lo.op.call_args[3] is n
    with pytest.raises(ValueError, match=r"extern E: outputs of different shapes .* are not supported"):
        ts.extern([(n,), (4,)], [A], name="E", fname="add", source=SOURCE)
    with pytest.raises(ValueError, match="extern E: 2 outputs but 3 dtypes"):
        ts.extern([(4,), (4,)], [A], name="E", dtype=["float32"] * 3, fname="add", source=SOURCE)
    with pytest.raises(ValueError, match=r"not given output tensor outs\[1\]"):
        ts.extern([(4,), (4,)], [A], lambda ins, outs: ts.extern_call("add", ins[0], outs[0], source=SOURCE),
                  name="E")
