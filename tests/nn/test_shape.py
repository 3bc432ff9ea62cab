"""Shape arithmetic: pairs, paddings, window sizes, broadcasting, reshape targets."""
import pytest

from tesched.nn.shape import broadcast_shapes, normalize_axis, padding4, pair, reshape_target, window_output


def test_pair_and_padding_forms():
    assert pair(2, "s") == (2, 2) and pair((1, 3), "s") == (1, 3)
    assert padding4(1) == (1, 1, 1, 1) and padding4((1, 2)) == (1, 2, 1, 2) and padding4((1, 2, 3, 4)) == (1, 2, 3, 4)
    for bad in (0, (1, 2, 3), True):
        with pytest.raises(ValueError):
            pair(bad, "s")
    with pytest.raises(ValueError, match="1, 2 or 4"):
        padding4((1, 2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        padding4(-1)


def test_window_output_counts_positions():
    assert window_output(7, 3, 2, 1, 1, 1, "op") == 4
    assert window_output(8, 3, 1, 0, 0, 2, "op") == 4
    with pytest.raises(ValueError, match="op: window of 5"):
        window_output(3, 3, 1, 0, 0, 2, "op")


def test_broadcast_and_axes():
    assert broadcast_shapes((2, 1, 4), (3, 1), "add") == (2, 3, 4)
    with pytest.raises(ValueError, match=r"add: shapes \(2,\) and \(3,\)"):
        broadcast_shapes((2,), (3,), "add")
    assert normalize_axis(-1, 3, "op") == 2
    assert reshape_target((2, 6), (3, -1), "reshape") == (3, 4)


def test_a_symbolic_size_passes_broadcasts_and_reshapes_whole():
    import tesched as ts
    n, m = ts.var("n"), ts.var("m")
    assert broadcast_shapes((n, 1, 4), (3, 1), "add") == (n, 3, 4)
    assert broadcast_shapes((1, 4), (n, 4), "add")[0] is n
    with pytest.raises(ValueError, match="add: shapes"):
        broadcast_shapes((n, 4), (m, 4), "add")
    with pytest.raises(ValueError, match="add: shapes"):
        broadcast_shapes((n,), (3,), "add")
    assert reshape_target((n, 4, 6), (n, -1), "reshape") == (n, 24)
    assert reshape_target((2, n, 6), (n, 3, 4), "reshape") == (n, 3, 4)
    assert reshape_target((n,), (n, 1), "reshape") == (n, 1)
    with pytest.raises(ValueError, match="reshape: the dynamic dimensions .* must appear unchanged"):
        reshape_target((n, 4), (-1,), "reshape")
    with pytest.raises(ValueError, match=r"reshape: cannot reshape \(4,\)"):
        reshape_target((n, 4), (n, 5), "reshape")
