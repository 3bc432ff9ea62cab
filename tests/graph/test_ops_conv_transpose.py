"""nn.conv2d_transpose (sub-pixel convolutions) against a NumPy scatter reference, compiled and interpreted,
with its argument errors."""
import numpy as np
import pytest

from tesched import graph as G


def scatter_reference(x, w, bias, stride, padding, extra, dilation, groups):
    """Each input pixel scatters its kernel into the output: the definition, with loops (float64)."""
    n, c_in, h, width = x.shape
    _, c_out_g, kh, kw = w.shape
    full = np.zeros((n, groups * c_out_g, (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 + extra[0],
                     (width - 1) * stride[1] + dilation[1] * (kw - 1) + 1 + extra[1]))
    c_in_g = c_in // groups
    for g in range(groups):
        for i in range(h):
            for j in range(width):
                for a in range(kh):
                    for b in range(kw):
                        contrib = np.einsum("nc,cd->nd", x[:, g * c_in_g:(g + 1) * c_in_g, i, j],
                                            w[g * c_in_g:(g + 1) * c_in_g, :, a, b].astype(np.float64))
                        full[:, g * c_out_g:(g + 1) * c_out_g, i * stride[0] + a * dilation[0],
                             j * stride[1] + b * dilation[1]] += contrib
    out = full[:, :, padding[0]:full.shape[2] - padding[0], padding[1]:full.shape[3] - padding[1]]
    return out + (0 if bias is None else bias.reshape(1, -1, 1, 1))


CASES = [  # (data shape, (c_out / groups, kh, kw), stride, padding, output_padding, dilation, groups, bias)
    ((1, 3, 4, 5), (4, 2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 1, True),
    ((2, 4, 5, 4), (3, 3, 3), (2, 3), (1, 2), (1, 0), (1, 2), 2, True),
    ((1, 2, 3, 6), (2, 5, 3), (1, 1), (2, 1), (0, 0), (2, 1), 1, False),
    ((1, 2, 4, 4), (2, 3, 3), (3, 2), (3, 0), (2, 1), (1, 1), 1, True),
]


@pytest.mark.parametrize("shape, kernel, stride, padding, extra, dilation, groups, with_bias", CASES)
def test_matches_the_scatter_definition(shape, kernel, stride, padding, extra, dilation, groups, with_bias):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((shape[1],) + kernel).astype(np.float32)
    b = rng.standard_normal(groups * kernel[0]).astype(np.float32) if with_bias else None
    data = G.var("x", shape=shape)
    out = G.nn.conv2d_transpose(data, G.const(w), None if b is None else G.const(b), stride, padding, extra,
                                dilation, groups)
    want = scatter_reference(x, w, b, stride, padding, extra, dilation, groups)
    fn = G.Function([data], out)
    np.testing.assert_allclose(G.interpret(fn, x), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(G.build(fn)(x), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kwargs, message", [
    ({"groups": 2}, "do not match groups=2"),
    ({"strides": 2, "output_padding": 2}, "must be smaller than the stride"),
    ({"padding": -1}, "padding must be a non-negative int"),
    ({"padding": 9}, "gives an empty output"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        G.nn.conv2d_transpose(G.var("x", shape=(1, 3, 4, 4)), G.var("w", shape=(3, 2, 3, 3)), **kwargs)
