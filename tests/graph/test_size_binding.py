"""SizeBinding: dims bound from the first input axis that has them, range-checked, other axes agreeing."""
import numpy as np
import pytest

from tesched.graph.size_binding import SizeBinding
from tesched.graph.types import Dim, TensorType

BATCH, SEQ = Dim("batch", 1, 8), Dim("seq", 2, 5)


def test_dims_are_bound_in_order_and_passed_as_negative_slots():
    binding = SizeBinding([TensorType((BATCH, SEQ, 4)), TensorType((SEQ,)), TensorType((3,))])
    assert binding and [d.name for d in binding.dims] == ["batch", "seq"]
    assert binding.bind([np.empty((8, 2, 4)), np.empty(2), np.empty(3)]) == {"batch": 8, "seq": 2}
    assert binding.spec_dims((BATCH, 7, SEQ)) == (-1, 7, -2)
    assert binding.size_args(["seq", "batch"], "k") == [-2, -1]
    with pytest.raises(ValueError, match="k: size n is not a dynamic dimension of the inputs"):
        binding.size_args(["n"], "k")
    assert not SizeBinding([TensorType((3,))])


def test_out_of_range_and_disagreeing_sizes_name_the_dimension():
    binding = SizeBinding([TensorType((BATCH, SEQ, 4)), TensorType((SEQ,))])
    with pytest.raises(ValueError, match=r"dimension 'batch' = 9 is outside its declared range \[1, 8\]"):
        binding.bind([np.empty((9, 2, 4)), np.empty(2)])
    with pytest.raises(ValueError, match=r"dimension 'seq' = 1 is outside its declared range \[2, 5\]"):
        binding.bind([np.empty((3, 1, 4)), np.empty(1)])
    with pytest.raises(ValueError, match="input 1: axis 0 is dimension 'seq' = 4, but an earlier input set it to 3"):
        binding.bind([np.empty((3, 3, 4)), np.empty(4)])
    with pytest.raises(ValueError, match=r"input 1: expected an array with at least 1 axes \(dimension 'seq'"):
        binding.bind([np.empty((3, 3, 4)), np.float32(1)])
    with pytest.raises(TypeError, match="expected an input at position 1 to bind dimension 'seq'"):
        binding.bind([np.empty((3, 3, 4))])
