"""Two convolutions in one GPU kernel (``auto_schedule``'s GPU path, tesched/autoschedule/gpu_chain.py): the
first computed per block in shared memory with its halo, on pocl against NumPy and compiled by NVRTC; its
global traffic beside the two kernels of the unfused version; what is not chained, and the tile fitted to
the device's shared memory; grouped, depthwise, dilated and strided convolutions. Decisions are asserted
for the ``cuda`` target, whose limits are its presets."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.autoschedule.gpu_chain import MIN_THREADS
from tesched.recipes import conv_chain
from tests.autoschedule.helpers import data
from tests.gpu_helpers import need_nvrtc, need_opencl
from tests.nn.helpers import ATOL, RTOL, conv2d_reference

PRODUCER = "conv1: computed per block in shared memory, halo included"


def _shared_bytes(text):
    return [int(b) for b in re.findall(r"(\d+) bytes", text.split("\n")[1])]


# (channels, mid channels, size, batch): a square image, one that is not, a batch of two
@pytest.mark.parametrize("channels, mid, size, batch", [(4, 4, 13, 1), (3, 5, 10, 2)])
def test_conv_relu_conv_is_one_kernel_that_matches_numpy_on_opencl(channels, mid, size, batch):
    need_opencl()
    chain = conv_chain.declare(channels, size, batch, mid_channels=mid)
    s = ts.auto_schedule(chain.conv2, target="opencl")
    text = ts.explain_schedule(s)
    assert PRODUCER in text and "pad2: not staged: read from conv1, computed per block in shared memory" in text
    f = ts.build(s, chain.args, target="opencl")
    assert len(f.gpu.kernels) == 1
    x, w1, w2 = (data(*(int(d) for d in t.shape), seed=k) for k, t in enumerate(chain.args[:3]))
    np.testing.assert_allclose(f(x, w1, w2), conv_chain.reference(x, w1, w2), rtol=RTOL, atol=ATOL)


def test_the_fused_kernel_compiles_for_cuda():
    need_nvrtc()
    chain = conv_chain.declare(4, 13, 1)
    f = ts.build(ts.auto_schedule(chain.conv2, target="cuda"), chain.args, target="cuda")
    assert len(f.gpu.kernels) == 1 and "__shared__ float conv1" in f.source and "sm_90" in f.ptx


def _unfused_traffic(chain):
    """Global traffic of the two convolutions scheduled apart (conv1 a kernel, conv2 another reading it)."""
    first = ts.lower(ts.auto_schedule(chain.conv1, target="cuda"), [chain.x, chain.w1, chain.conv1])
    stored = ts.placeholder(chain.conv1.shape, name="stored")
    relu = ts.compute(stored.shape, lambda *i: ts.maximum(stored[i], 0.0), name="relu")
    second = conv_chain.conv3x3(conv_chain.pad(relu, 1, "pad2"), chain.w2, "conv2")
    return first.global_traffic.total + \
        ts.lower(ts.auto_schedule(second, target="cuda"), [stored, chain.w2, second]).global_traffic.total


def test_the_fused_kernel_moves_under_a_third_of_the_unfused_global_traffic():
    """The unfused kernels read the image (and the stored conv1) once per tile of output channels; the fused
    one reads the image once per block and never stores conv1."""
    chain = conv_chain.declare(16, 24, 1)
    fused = ts.lower(ts.auto_schedule(chain.conv2, target="cuda"), chain.args).global_traffic
    assert "conv1" not in fused.reads and "conv1" not in fused.writes
    assert fused.total <= _unfused_traffic(chain) / 3


def test_the_tile_shrinks_its_rows_and_columns_until_the_producer_fits_shared_memory():
    chain = conv_chain.declare(32, 40, 1)
    s = ts.auto_schedule(chain.conv2, target="cuda")
    text = ts.explain_schedule(s)
    assert PRODUCER in text and "reduction in steps of 16" in text and "f in tiles of 4 per thread" in text
    threads = re.search(r"(\d+) x (\d+) threads", text)
    assert int(threads[1]) * int(threads[2]) >= MIN_THREADS
    assert _shared_bytes(text)[0] <= ts.Target("cuda").gpu_shared_bytes


def test_without_room_for_the_producer_it_stays_a_kernel_of_its_own():
    chain = conv_chain.declare(32, 16, 1)
    small = ts.Target("cuda").with_gpu_limits(256, 2048)
    text = ts.explain_schedule(ts.auto_schedule(chain.conv2, target=small))
    assert PRODUCER not in text and "conv1: a kernel" in text and len(_shared_bytes(text)) == 2


def _gemm_chain():
    """relu(A @ B) @ E: the second product reads the first at its own row, not through a window."""
    A, B, E = (ts.placeholder(shape, name=name) for shape, name in (((24, 20), "A"), ((20, 16), "B"), ((16, 12), "E")))
    k, m = ts.reduce_axis((0, 20), name="k"), ts.reduce_axis((0, 16), name="m")
    C = ts.compute((24, 16), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    R = ts.compute(C.shape, lambda i, j: ts.maximum(C[i, j], 0.0), name="R")
    return ts.compute((24, 12), lambda i, j: ts.sum(R[i, m] * E[m, j], axis=m), name="D")


def test_a_producer_read_elsewhere_or_not_through_a_window_is_not_chained():
    chain = conv_chain.declare(4, 13, 1)
    both = ts.explain_schedule(ts.auto_schedule([chain.conv1, chain.conv2], target="cuda"))
    assert PRODUCER not in both and len(_shared_bytes(both)) == 2              # conv1 is a result too
    products = ts.explain_schedule(ts.auto_schedule(_gemm_chain(), target="cuda"))
    assert "computed per block in shared memory, halo included" not in products and "C: a kernel" in products


# (name, (n, c, h, w), conv1 (filters, groups), conv2 (filters, groups, stride, dilation), chained)
VARIANTS = [
    ("grouped-batch2", (2, 4, 9, 9), (6, 2), (4, 2, 1, 1), True),
    ("depthwise", (1, 4, 10, 10), (4, 4), (4, 4, 1, 1), True),
    pytest.param("dilated", (1, 3, 11, 12), (4, 1), (5, 1, 1, 2), True, marks=pytest.mark.slow),
    pytest.param("strided", (1, 4, 12, 12), (4, 1), (4, 1, 2, 1), False, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, shape, first, second, chained", VARIANTS, ids=lambda v: v if isinstance(v, str) else "")
def test_chains_of_grouped_depthwise_dilated_and_strided_convolutions_match_numpy_on_opencl(name, shape, first,
                                                                                         second, chained):
    """A strided second convolution reads the first at twice its own rows: its region per block would be
    computed over twice, so the first stays a kernel of its own."""
    need_opencl()
    (k1, g1), (k2, g2, stride, dilation) = first, second
    x = ts.placeholder(shape, name="x")
    w1, w2 = ts.placeholder((k1, shape[1] // g1, 3, 3), name="w1"), ts.placeholder((k2, k1 // g2, 3, 3), name="w2")
    out = nn.conv2d(nn.relu(nn.conv2d(x, w1, 1, 1, 1, g1)), w2, stride, dilation, dilation, g2)
    s = ts.auto_schedule(out, target="opencl")
    assert (PRODUCER.replace("conv1", "conv2d") in ts.explain_schedule(s)) == chained
    f = ts.build(s, [x, w1, w2, out], target="opencl")
    xv, w1v, w2v = (data(*(int(d) for d in t.shape), seed=k) for k, t in enumerate((x, w1, w2)))
    middle = np.maximum(conv2d_reference(xv, w1v, 1, 1, 1, g1), 0)
    want = conv2d_reference(middle, w2v, stride, dilation, dilation, g2)
    np.testing.assert_allclose(f(xv, w1v, w2v), want, rtol=RTOL, atol=ATOL)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(1, 9), st.integers(3, 30), st.integers(3, 30), st.integers(1, 2))
def test_chains_of_any_size_match_numpy_on_opencl(channels, mid, height, width, batch):
    """Partial blocks at the image's edges, halos clipped there, channel counts no tile divides."""
    need_opencl()
    chain = conv_chain.declare(channels, 1, batch, mid_channels=mid)
    x = ts.placeholder((batch, channels, height, width), name="x")
    c1 = conv_chain.conv3x3(conv_chain.pad(x, 1, "pad1"), chain.w1, "conv1")
    relu = ts.compute(c1.shape, lambda *i: ts.maximum(c1[i], 0.0), name="relu")
    out = conv_chain.conv3x3(conv_chain.pad(relu, 1, "pad2"), chain.w2, "conv2")
    f = ts.build(ts.auto_schedule(out, target="opencl"), [x, chain.w1, chain.w2, out], target="opencl")
    xv, w1, w2 = (data(*(int(d) for d in t.shape), seed=k) for k, t in enumerate((x, chain.w1, chain.w2)))
    np.testing.assert_allclose(f(xv, w1, w2), conv_chain.reference(xv, w1, w2), rtol=RTOL, atol=ATOL)
