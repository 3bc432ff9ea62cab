"""``alter_op_layout``: constant weights put, once at build time, in the layout their kernel reads best
(TVM's AlterOpLayout, oneDNN's weight reorder), and the op that reads that layout chosen:

- ``nn.dense(x, W)`` with a constant ``W`` becomes ``nn.dense_panels(x, P)`` with ``P`` the column panels
  of ``W.T`` (:func:`tesched.nn.pack_dense_panels`, panels of two SIMD vectors of output columns, packed
  here instead of at every call): the kernel reads the panels in place, as GEMM register tiles of rows x
  a panel's columns, or with few rows (a matrix-vector product, a recurrent cell at batch 1) as
  accumulators of a few panels' columns, one broadcast of ``x`` per step and no horizontal sums. When no
  panel of whole SIMD vectors divides the output columns but they fill more than one vector (a language
  model's head of 1000 words), ``W`` gets zero columns up to a multiple of two vectors and the product is
  sliced back (``strided_slice``, in the same kernel): a few wasted columns instead of scalar code. With
  fewer columns, a constant ``W`` with at least :data:`GEMM_MIN_ROWS` rows becomes ``nn.matmul(x, W.T)``
  (the GEMM schedule copies column panels at run time) and one with fewer rows stays ``nn.dense``. A ``W``
  that is not a constant stays ``nn.dense``.
- ``nn.conv2d(x, W)`` 3x3, stride 1, no dilation, one group, with a constant ``W``, becomes
  ``reshape(nn.winograd_conv2d(x, U), NCHW)`` with the Winograd-transformed weights ``U`` when the layer's
  shape lets the transforms pay (:func:`tesched.nn.winograd.choose_tile`) and ``rules.winograd`` is set.
  The reshape is a view (no kernel); elementwise and broadcast ops after it (the bias, the residual add,
  the relu) move before it, onto the tile layout, so that they stay in the convolution's kernel: a
  constant operand is reshaped here, a tensor operand of the output's shape gets a reshape (a view).
- a pointwise ``nn.conv2d`` (1x1 window, stride 1, no padding, one group) on a SIMD target reads its image
  viewed as rows of the width of its best register tile over the flattened image
  (:func:`tesched.nn.conv.pointwise_row_width`), when that tile is not a band of whole rows:
  ``reshape(nn.conv2d(reshape(x, (N, C, H*W / w, w)), W), NCHW)``, both reshapes views (rows of 28 fill 3.5
  AVX2 vectors; rows of 16, two). Elementwise and broadcast ops after it move before the view, as above.
- any other ``nn.conv2d`` with one group, a window larger than 1x1, a constant ``W`` and a multiple of the
  SIMD width of output channels, which is strided or whose output rows are narrower than
  :data:`NARROW_ROW` (rows that fill SIMD vectors poorly), becomes ``nn.conv2d_weight_last(x, W')`` with
  ``W'`` stored ``(K / B, C, KH, KW, B)`` (blocks of output channels, each block's weights contiguous, ``B``
  from the target's register file: :func:`tesched.nn.conv_channels.register_tile`):
  vectorized along output channels instead of along the row.

With a dynamic dimension (:class:`~tesched.graph.types.Dim`), a dense layer's rows count at their
largest value (the slice back of a padded product takes a dynamic axis whole), and a convolution gets
only the weight-last layout (Winograd tiles and pointwise row views reshape the image).
Everything else is left as it is. The rewritten graph computes the same values (to float32 rounding).
"""
from __future__ import annotations

import numpy as np

from tesched.graph.fusion_rules import FusionRules
from tesched.graph.ir import Call, Constant, Expr, Function
from tesched.graph.ops_nn import conv2d_weight_last, dense_panels, matmul
from tesched.graph.ops_transform import reshape, strided_slice
from tesched.graph.types import static_shape
from tesched.graph.ops_winograd import winograd_conv2d
from tesched.graph.visit import rewrite, use_counts
from tesched.nn import winograd
from tesched.nn.conv import pointwise_row_width
from tesched.nn.conv_channels import register_tile, weight_last
from tesched.nn.dense_panels import PANEL_VECTORS, pack_dense_panels, panel_width
from tesched.nn.pattern import Pattern
from tesched.nn.shape import normalize_axis
from tesched.target import current_target
from tesched.tiling import RegisterFile

GEMM_MIN_ROWS = 8
"""A dense product with at least this many rows is a GEMM (register tiles of 8 rows fill up)."""

_BROADCAST_ARITHMETIC = ("add", "subtract", "multiply", "divide")
_CHANNEL_OPS = ("nn.bias_add", "nn.batch_norm")

NARROW_ROW = 32
"""Output rows narrower than this many positions are vectorized along output channels instead."""


def _dense_in_panels(node: Call) -> Expr | None:
    """``nn.dense_panels`` over the packed constant weight, else ``nn.matmul`` over its transpose when the
    rows are many, else ``None`` (see the module doc)."""
    x, weight = node.args
    if not isinstance(weight, Constant):
        return None
    columns = weight.tensor_type.shape[0]
    block = panel_width(columns, weight.tensor_type.dtype)
    lanes = current_target().lanes(str(weight.data.dtype))
    if block % lanes == 0:
        return dense_panels(x, Constant(pack_dense_panels(weight.data, block), name=weight.name))
    rows = static_shape(x.tensor_type.extents)[0]
    if columns > lanes:
        width = PANEL_VECTORS * lanes
        padded = np.zeros((-(-columns // width) * width, weight.data.shape[1]), weight.data.dtype)
        padded[:columns] = weight.data
        product = dense_panels(x, Constant(pack_dense_panels(padded, width), name=weight.name))
        return strided_slice(product, [0, 0], [x.tensor_type.extents[0], columns])
    if rows < GEMM_MIN_ROWS:
        return None
    return matmul(x, Constant(np.ascontiguousarray(weight.data.T), name=weight.name))


def _conv_as_winograd(node: Call) -> Expr | None:
    """``nn.winograd_conv2d`` (tile layout) for a conv2d it suits, else ``None``."""
    x, weight = node.args
    attrs = node.attrs
    if not isinstance(weight, Constant) or attrs["groups"] != 1 or tuple(attrs["strides"]) != (1, 1) \
            or tuple(attrs["dilation"]) != (1, 1) or weight.tensor_type.shape[2:] != (3, 3) or x.tensor_type.ndim != 4:
        return None
    _, k, out_h, out_w = node.tensor_type.shape
    tile = winograd.choose_tile(x.tensor_type.shape[1], k, out_h, out_w)
    if tile is None:
        return None
    return winograd_conv2d(x, weight.data, tile, attrs["padding"])


def _pointwise_rows(node: Call) -> Expr | None:
    """The convolution of a pointwise ``node`` over its image viewed as rows of
    :func:`~tesched.nn.conv.pointwise_row_width` positions; ``None`` when ``node`` is not pointwise, the
    target has no SIMD registers, or whole rows are best."""
    x, weight = node.args
    attrs = node.attrs
    if attrs["groups"] != 1 or tuple(attrs["strides"]) != (1, 1) or any(attrs["padding"]) or \
            tuple(weight.tensor_type.shape[2:]) != (1, 1) or x.tensor_type.ndim != 4 or \
            not current_target().vector_registers:
        return None
    n, c, h, w = x.tensor_type.shape
    rf = RegisterFile.of(dtype=str(node.tensor_type.dtype))
    width = pointwise_row_width(node.tensor_type.shape[1], h, w, rf)
    if width == w:
        return None
    viewed = reshape(x, (n, c, h * w // width, width))
    return Call(node.op, [viewed, weight], node.attrs)


def _conv_weight_last(node: Call) -> Expr | None:
    x, weight = node.args
    attrs = node.attrs
    k, _, kh, kw = weight.tensor_type.shape
    strided = tuple(attrs["strides"]) != (1, 1)
    narrow = node.tensor_type.size(3) < NARROW_ROW
    if not isinstance(weight, Constant) or attrs["groups"] != 1 or (kh, kw) == (1, 1) or \
            not current_target().vector_bytes or \
            k % current_target().lanes(str(weight.data.dtype)) or not (strided or narrow):
        return None                 # (without SIMD there are no output-channel vectors to gain)
    _, block = register_tile(node.tensor_type.size(3), k, RegisterFile.of(dtype=str(weight.data.dtype)))
    return conv2d_weight_last(x, Constant(weight_last(weight.data, block), name=weight.name), attrs["strides"],
                              attrs["padding"], attrs["dilation"])


class _Views:
    """Reshapes to NCHW of tile-layout values, and how to move elementwise ops before them."""

    def __init__(self, counts: dict[int, int]):
        self.counts = counts
        self.inner: dict[int, Expr] = {}

    def view(self, tiles: Expr, shape: tuple[int, ...]) -> Expr:
        out = reshape(tiles, shape)
        self.inner[id(out)] = tiles
        return out

    def pushed(self, node: Call, original: Expr) -> Expr | None:
        """``node`` computed on the tile layout and viewed as NCHW, when its data operand is such a view
        read only by it and its other operands can follow: elementwise ops, NumPy-broadcast arithmetic
        (constants are put on the tile layout, tensors of the output's shape reshaped), and ops along
        the channel axis (``nn.bias_add``, ``nn.batch_norm``), whose per-channel operands stay as they are."""
        views = [id(a) in self.inner and self.counts.get(id(o), 0) == 1 for a, o in zip(node.args, original.children())]
        if not any(views):
            return None
        name, ndim = node.op_name, node.tensor_type.ndim
        args: list[Expr] | None = None
        if name in _CHANNEL_OPS and views[0] and normalize_axis(node.attrs["axis"], ndim, name) == 1:
            args = [self.inner[id(node.args[0])], *node.args[1:]]
        elif name in _BROADCAST_ARITHMETIC or (node.pattern == Pattern.ELEMWISE and len(node.args) == 1):
            args = self._tiled_operands(node)
        if args is None:
            return None
        return self.view(Call(node.op, args, node.attrs), node.tensor_type.shape)

    def _tiled_operands(self, node: Call) -> list[Expr] | None:
        tiles = next(self.inner[id(a)] for a in node.args if id(a) in self.inner)
        shape, tiled = node.tensor_type.shape, tiles.tensor_type.shape
        args: list[Expr] = []
        for arg in node.args:
            if id(arg) in self.inner and self.inner[id(arg)].tensor_type.shape == tiled:
                args.append(self.inner[id(arg)])
            elif isinstance(arg, Constant) and _tile_constant(arg.data, shape, tiled) is not None:
                args.append(Constant(_tile_constant(arg.data, shape, tiled)))
            elif arg.tensor_type.shape == shape:
                args.append(reshape(arg, tiled))
            else:
                return None
        return args


def _tile_constant(data: np.ndarray, shape: tuple[int, ...], tiled: tuple[int, ...]) -> np.ndarray | None:
    """A constant broadcast (NumPy's rules) against the NCHW output of ``shape``, put on the layout
    ``tiled`` (batch and channels first, then the positions in another shape; per-channel constants stay
    small), or ``None`` when it does not broadcast to the output's shape."""
    if data.ndim > 4 or any(d not in (1, size) for d, size in zip(data.shape[::-1], shape[::-1])):
        return None
    full = data.reshape((1,) * (4 - data.ndim) + data.shape)
    if full.shape[2:] == (1, 1):
        return np.ascontiguousarray(full.reshape(full.shape[:2] + (1,) * (len(tiled) - 2)))
    spread = np.broadcast_to(full, full.shape[:2] + tuple(shape[2:]))
    return np.ascontiguousarray(spread.reshape(spread.shape[:2] + tuple(tiled[2:])))


def alter_op_layout(f: Function, rules: FusionRules | None = None) -> Function:
    """``f`` with constant dense and conv2d weights transformed for their kernels (see the module doc)."""
    use_winograd = rules.winograd if rules is not None else True
    views = _Views(use_counts(f.body))

    def alter(node: Expr, original: Expr) -> Expr | None:
        if not isinstance(node, Call) or isinstance(node.op, Function):
            return None
        if node.op_name == "nn.dense":
            return _dense_in_panels(node)
        if node.op_name == "nn.conv2d":
            if node.tensor_type.is_dynamic:         # tile layouts and row views assume a static image
                return _conv_weight_last(node)
            tiles = (_conv_as_winograd(node) if use_winograd else None) or _pointwise_rows(node)
            return _conv_weight_last(node) if tiles is None else views.view(tiles, node.tensor_type.shape)
        return views.pushed(node, original)

    return f.with_body(rewrite(f.body, alter))
