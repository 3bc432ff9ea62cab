"""Converters of the ATen ops of resampling: ``upsample_nearest{1,2,3}d``, ``_upsample_nearest_exact{1,2,3}d``,
``upsample_linear1d``, ``upsample_bilinear2d`` and ``upsample_trilinear3d`` (the ``.vec`` forms:
``F.interpolate`` with ``size`` or ``scale_factor``, either ``align_corners``) become ``nn.upsample``
(:mod:`.decompose` keeps them whole: PyTorch's default decompositions turn all but the 2-D ones into index
arithmetic, which is not converted); a transposed ``convolution`` (``ConvTranspose1d/2d``: any stride,
padding, output padding, dilation and groups; 1-D as 2-D with a height of one) becomes
``nn.conv2d_transpose`` (sub-pixel convolutions, see :mod:`tesched.graph.ops_conv_transpose`);
``adaptive_max_pool2d`` (``nn.AdaptiveMaxPool1d/2d``) to a size that divides the input becomes
``nn.max_pool2d``. (1-D max and average pooling reach the frontend as their 2-D ops.)

Each converter takes an :class:`~.call.AtenCall` and returns a graph expression. Antialiased and bicubic
resampling are not converted.
"""
from __future__ import annotations

from collections.abc import Callable

from tesched import graph as G
from tesched.frontend.call import AtenCall, Unavailable
from tesched.graph.ir import Expr


def _upsample(method: str) -> Callable[[AtenCall], Expr]:
    def convert(call: AtenCall) -> Expr:
        x = call.tensor("input")
        factors = call["scale_factors"]
        scales = None if factors is None else [float(f) for f in factors]
        align = bool(call.args.get("align_corners") or False)
        return G.nn.upsample(x, call.out.shape[2:], scales, method, align)
    convert.__doc__ = f"``F.interpolate(mode=...)`` by {method} sampling: ``nn.upsample``."
    return convert


upsample_nearest = _upsample("nearest")
upsample_nearest_exact = _upsample("nearest_exact")
upsample_linear = _upsample("linear")


def convolution_transpose(call: AtenCall) -> Expr:
    """A transposed ``aten.convolution``: NCHW (or NCL) data, ``(C_in, C_out / groups, KH, KW)`` weight."""
    x, weight = call.tensor("input"), call.tensor("weight")
    rank = x.tensor_type.ndim
    if rank not in (3, 4):
        raise call.unsupported(f"a {rank - 2}-D transposed convolution", "nn.ConvTranspose2d or nn.ConvTranspose1d")
    stride, padding, extra, dilation = (list(call[k]) for k in ("stride", "padding", "output_padding", "dilation"))
    if rank == 3:   # a 2-D transposed convolution over a height of one
        x = G.reshape(x, x.tensor_type.shape[:2] + (1,) + x.tensor_type.shape[2:])
        weight = G.reshape(weight, weight.tensor_type.shape[:2] + (1,) + weight.tensor_type.shape[2:])
        stride, padding, extra, dilation = [1] + stride, [0] + padding, [0] + extra, [1] + dilation
    bias = call["bias"] if isinstance(call["bias"], Expr) else None
    out = G.nn.conv2d_transpose(x, weight, bias, strides=_two(stride), padding=_two(padding),
                                output_padding=_two(extra), dilation=_two(dilation), groups=int(call["groups"]))
    return out if rank == 4 else G.reshape(out, call.out.shape)


def _two(values: list) -> tuple[int, int]:
    return (int(values[0]), int(values[-1]))


def adaptive_max_pool2d(call: AtenCall) -> tuple[Expr, Unavailable]:
    """To a size that divides the input: ``nn.max_pool2d`` with the window as its stride (indices not
    computed); a 3-D input is one unbatched image."""
    x = call.tensor("self")
    (height, width), (out_h, out_w) = x.tensor_type.shape[-2:], call.out.shape[-2:]
    if height % out_h or width % out_w:
        raise call.unsupported(f"output size {(out_h, out_w)} does not divide the input's {(height, width)}",
                               "an output size that divides the input size (an nn.MaxPool2d)")
    window = (height // out_h, width // out_w)
    batched = x if x.tensor_type.ndim == 4 else G.reshape(x, (1,) + x.tensor_type.shape)
    out = G.nn.max_pool2d(batched, window, window)
    unavailable = call.unavailable("indices", "the pooled values (output 0)")
    return (out if x.tensor_type.ndim == 4 else G.reshape(out, call.out.shape)), unavailable
