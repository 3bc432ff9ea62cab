"""TensorType and Dim: dynamic dimensions validated, printed by name, made static at a size or their maximum."""
import pytest

from tesched.graph.types import Dim, TensorType, dims_of, static_shape


def test_a_dim_prints_its_name_and_checks_its_range():
    batch = Dim("batch", 1, 64)
    ty = TensorType((batch, 16))
    assert str(ty) == "Tensor[(batch, 16), float32]" and ty.is_dynamic and not TensorType((2, 16)).is_dynamic
    batch.check(1)
    batch.check(64)
    with pytest.raises(ValueError, match=r"dimension 'batch' = 65 is outside its declared range \[1, 64\]"):
        batch.check(65)
    with pytest.raises(ValueError, match=r"dimension 'batch' = 0 is outside"):
        batch.check(0)


@pytest.mark.parametrize("bad", [("", 1, 4), ("n", 0, 4), ("n", 5, 4), ("a b", 1, 2)])
def test_malformed_dims_are_refused(bad):
    with pytest.raises(ValueError):
        Dim(*bad)


def test_static_shape_and_dims_of():
    batch, seq = Dim("batch", 1, 8), Dim("seq", 2, 32)
    assert static_shape((batch, seq, 4)) == (8, 32, 4)
    assert static_shape((batch, seq, 4), {"batch": 3, "seq": 5}) == (3, 5, 4)
    assert dims_of([(batch, 4), (seq, batch)]) == [batch, seq]
    with pytest.raises(ValueError, match=r"dimension 'batch' is declared with two ranges: \[1, 8\] and \[1, 9\]"):
        dims_of([(batch,), (Dim("batch", 1, 9),)])
    with pytest.raises(ValueError, match="positive ints or dynamic dims"):
        TensorType(("batch", 4))


def test_static_readers_refuse_a_dynamic_type_by_name():
    ty = TensorType((Dim("seq", 1, 9), 4))
    assert ty.extents[1] == 4 and ty.size(1) == 4 and ty.size(-1) == 4 and ty.ndim == 2
    with pytest.raises(TypeError, match=r"Tensor\[\(seq, 4\), float32\] has the dynamic dimension 'seq'"):
        ty.shape
    with pytest.raises(TypeError, match="axis 0 of .* is the dynamic dimension 'seq'"):
        ty.size(0)
    assert TensorType((2, 4)).shape == (2, 4)
