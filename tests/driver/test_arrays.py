"""Arrays from other libraries: kernels read torch tensors, DLPack and array-interface objects without
copying, return torch tensors for torch inputs, and never import torch themselves."""
import numpy as np
import pytest

import tesched as ts
from tesched.driver.arrays import as_array, like, torch_module


@pytest.fixture(scope="module")
def scale_kernel():
    a = ts.placeholder((2, 3), name="A")
    b = ts.compute((2, 3), lambda i, j: a[i, j] * 3.0, name="B")
    return ts.build(ts.create_schedule(b.op), [a, b], name="times3")


class Interface:
    """An object exposing only the array interface."""

    def __init__(self, array):
        self.array = array
        self.__array_interface__ = array.__array_interface__


class DLPackOnly:
    """An object exposing only ``__dlpack__``."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_array_interface_and_dlpack_objects_are_read_without_copy(scale_kernel, rand):
    x = rand((2, 3))
    for wrapped in (Interface(x), DLPackOnly(x)):
        view = as_array(wrapped, "x")
        assert np.shares_memory(view, x)
        np.testing.assert_allclose(scale_kernel(wrapped), 3 * x, rtol=1e-6)
    out = np.empty((2, 3), np.float32)
    scale_kernel(Interface(x), Interface(out))
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)


def test_non_arrays_are_refused_with_the_argument_name(scale_kernel):
    with pytest.raises(TypeError, match=r"argument A: expected an array .*got dict"):
        scale_kernel({})
    with pytest.raises(TypeError, match="argument A: expected dtype float32, got float64"):
        scale_kernel(np.zeros((2, 3)))


def test_torch_in_torch_out(scale_kernel, rand):
    torch = pytest.importorskip("torch")
    x = rand((2, 3))
    t = torch.from_numpy(x)
    y = scale_kernel(t)
    assert isinstance(y, torch.Tensor)
    np.testing.assert_allclose(y.numpy(), 3 * x, rtol=1e-6)
    out = torch.empty(2, 3)
    assert scale_kernel(t, out) is None
    np.testing.assert_allclose(out.numpy(), 3 * x, rtol=1e-6)
    assert torch_module([x, t]) is torch and torch_module([x]) is None
    assert like(x, None) is x
    with pytest.raises(TypeError, match="argument A: cannot read this torch tensor"):
        scale_kernel(torch.zeros(2, 3, requires_grad=True))


def test_calling_kernels_never_imports_torch(run_python):
    done = run_python("""
        import sys
        import numpy as np
        import tesched as ts
        from tesched import graph as G
        a = ts.placeholder((4,), name="A")
        b = ts.compute((4,), lambda i: a[i] + 1.0, name="B")
        k = ts.build(ts.create_schedule(b.op), [a, b], name="plus1_4")
        k(np.zeros(4, np.float32))
        x = G.var("x", shape=(4,))
        G.build(G.Function([x], G.exp(x)))(np.zeros(4, np.float32))
        print("torch" in sys.modules)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
