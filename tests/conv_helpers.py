"""Convolution pipelines declared with ``ts.compute``, and their NumPy references, for the fusion tests.

``declare_pad`` zero-pads the two spatial axes with ``ts.if_then_else`` (so footprints clip at the
borders), ``declare_conv2d`` is a valid (unpadded) NCHW convolution with stride and dilation over
``sum(rc, ry, rx)``, ``declare_relu`` is ``max(x, 0)``. ``declare_conv_chain`` strings them into
``x -> pad -> conv -> [relu] -> pad -> conv -> ...``. The ``*_ref`` functions compute the same in NumPy
(float64) by shifting slices, independent of tesched. ``loop_body`` cuts one loop out of the text that
``lower()`` prints. This module builds no schedule and no kernel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

import tesched as ts

RTOL = ATOL = 1e-4


def declare_pad(data: ts.Tensor, padding: int, name: str) -> ts.Tensor:
    """``data`` (N, C, H, W) with ``padding`` zeros around H and W."""
    batch, channels, height, width = data.shape
    return ts.compute(
        (batch, channels, height + 2 * padding, width + 2 * padding),
        lambda n, c, y, x: ts.if_then_else(
            ts.all(y >= padding, y < height + padding, x >= padding, x < width + padding),
            data[n, c, y - padding, x - padding], 0.0),
        name=name)


def conv_output_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    """Output extent of a valid convolution along one axis."""
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def declare_conv2d(data: ts.Tensor, weight: ts.Tensor, stride: int, dilation: int, name: str) -> ts.Tensor:
    """Valid convolution of ``data`` (N, C, H, W) with ``weight`` (F, C, K, K)."""
    batch, channels, height, width = data.shape
    filters, _, kernel, _ = weight.shape
    rc = ts.reduce_axis((0, channels), name="rc")
    ry = ts.reduce_axis((0, kernel), name="ry")
    rx = ts.reduce_axis((0, kernel), name="rx")
    shape = (batch, filters, conv_output_size(height, kernel, stride, dilation),
             conv_output_size(width, kernel, stride, dilation))
    return ts.compute(
        shape,
        lambda n, f, y, x: ts.sum(
            data[n, rc, y * stride + ry * dilation, x * stride + rx * dilation] * weight[f, rc, ry, rx],
            axis=[rc, ry, rx]),
        name=name)


def declare_relu(data: ts.Tensor, name: str) -> ts.Tensor:
    return ts.compute(data.shape, lambda n, c, y, x: ts.maximum(data[n, c, y, x], 0.0), name=name)


@dataclass(frozen=True)
class ConvLayer:
    """One ``pad -> conv -> [relu]`` layer of a chain."""

    channels: int
    kernel: int = 3
    stride: int = 1
    dilation: int = 1
    padding: int = 1
    relu: bool = False


@dataclass
class ConvChain:
    """The tensors of a chain; ``pads[k]``, ``convs[k]``, ``relus[k]`` (None without relu) per layer."""

    data: ts.Tensor
    weights: list[ts.Tensor]
    layers: list[ConvLayer]
    pads: list[ts.Tensor] = field(default_factory=list)
    convs: list[ts.Tensor] = field(default_factory=list)
    relus: list[ts.Tensor | None] = field(default_factory=list)

    @property
    def output(self) -> ts.Tensor:
        last = self.relus[-1]
        return self.convs[-1] if last is None else last

    @property
    def args(self) -> list[ts.Tensor]:
        return [self.data, *self.weights, self.output]


def declare_conv_chain(in_channels: int, size: int, layers: list[ConvLayer]) -> ConvChain:
    """``layers`` applied in turn to a (1, in_channels, size, size) input."""
    data = ts.placeholder((1, in_channels, size, size), name="data")
    chain = ConvChain(data, [], list(layers))
    current, channels = data, in_channels
    for k, layer in enumerate(layers, start=1):
        weight = ts.placeholder((layer.channels, channels, layer.kernel, layer.kernel), name=f"w{k}")
        pad = declare_pad(current, layer.padding, f"pad{k}")
        conv = declare_conv2d(pad, weight, layer.stride, layer.dilation, f"conv{k}")
        relu = declare_relu(conv, f"relu{k}") if layer.relu else None
        chain.weights.append(weight)
        chain.pads.append(pad)
        chain.convs.append(conv)
        chain.relus.append(relu)
        current, channels = (conv if relu is None else relu), layer.channels
    return chain


def chain_inputs(chain: ConvChain, seed: int = 0) -> list[np.ndarray]:
    """Random float32 input and weights for ``chain``, in argument order (output excluded)."""
    rng = np.random.default_rng(seed)
    shapes = [chain.data.shape] + [w.shape for w in chain.weights]
    return [rng.standard_normal(tuple(int(d) for d in s)).astype(np.float32) for s in shapes]


# NumPy references ---------------------------------------------------------------------------------
def conv2d_ref(data: np.ndarray, weight: np.ndarray, stride: int = 1, padding: int = 0,
               dilation: int = 1) -> np.ndarray:
    """NCHW convolution (cross-correlation) in float64."""
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    kernel = weight.shape[2]
    out_h = conv_output_size(padded.shape[2], kernel, stride, dilation)
    out_w = conv_output_size(padded.shape[3], kernel, stride, dilation)
    out = np.zeros((data.shape[0], weight.shape[0], out_h, out_w))
    for dy in range(kernel):
        for dx in range(kernel):
            window = padded[:, :, dy * dilation: dy * dilation + stride * (out_h - 1) + 1: stride,
                            dx * dilation: dx * dilation + stride * (out_w - 1) + 1: stride]
            out += np.einsum("nchw,fc->nfhw", window, weight[:, :, dy, dx].astype(np.float64))
    return out


def relu_ref(data: np.ndarray) -> np.ndarray:
    return np.maximum(data, 0.0)


def chain_ref(layers: list[ConvLayer], data: np.ndarray, *weights: np.ndarray) -> np.ndarray:
    out = data.astype(np.float64)
    for layer, weight in zip(layers, weights):
        out = conv2d_ref(out, weight, layer.stride, layer.padding, layer.dilation)
        if layer.relu:
            out = relu_ref(out)
    return out


def check_chain(kernel, chain: ConvChain, seed: int = 0) -> None:
    """Run ``kernel`` on random inputs of ``chain`` and compare with the NumPy reference."""
    inputs = chain_inputs(chain, seed)
    np.testing.assert_allclose(kernel(*inputs), chain_ref(chain.layers, *inputs), rtol=RTOL, atol=ATOL)


def loop_body(ir_text: str, loop: str) -> str:
    """The printed body of the first loop named ``loop`` in ``ir_text``, up to its closing brace."""
    lines = ir_text.splitlines()
    for k, line in enumerate(lines):
        if re.match(rf"\s*(parallel |vectorized |unrolled )?for {re.escape(loop)} in ", line):
            indent = len(line) - len(line.lstrip())
            end = next((j for j in range(k + 1, len(lines))
                        if len(lines[j]) - len(lines[j].lstrip()) <= indent), len(lines))
            return "\n".join(lines[k + 1:end])
    raise AssertionError(f"no loop {loop} in\n{ir_text}")
