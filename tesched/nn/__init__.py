"""tesched.nn: an operator library on ``ts.compute``, each op with a pattern kind and a default schedule.

Ops (NCHW layouts, OIHW kernels): ``conv2d``, ``depthwise_conv2d``, ``dense``, ``matmul``, ``batch_matmul``, ``dense_panels``
(``dense`` by a weight packed with ``pack_dense_panels``), ``batch_norm``, ``batch_norm_train``, ``batch_moments``,
``layer_norm``, ``bias_add``, ``add``/``subtract``/``multiply``/``divide`` (NumPy broadcasting), ``relu``,
``sigmoid``, ``tanh``, ``exp``, ``erf``, ``sqrt``, ``rsqrt``, ``log``, ``abs``, ``negative``, ``clip``,
``pad``, ``upsample`` (nearest and linear resampling), ``max_pool2d``, ``avg_pool2d``, ``global_avg_pool2d``,
``softmax``, ``reshape``, ``transpose``,
``concatenate``, ``strided_slice``, ``split``, ``broadcast_to``, ``take``, ``sum``/``mean``/``max``,
``cumsum``, the cells ``rnn_cell`` and ``lstm_cell`` (PyTorch's formulas), and the quantized and low-precision ops
``quantize``, ``dequantize``, ``requantize``, ``dense_packed``, ``conv2d_nhwc_packed``, ``qdense``,
``qconv2d`` (see :mod:`tesched.nn.quantized`). Each returns tensors; schedule them with
``default_schedule(outputs)`` and build as usual::

    out = nn.relu(nn.conv2d(x, w, strides=1, padding=1))
    f = ts.build(nn.default_schedule(out), [x, w, out])

For a GPU target, ``gpu_default_schedule(outputs, target)`` binds every stage to blocks and threads.

``pattern_of(tensor)`` gives the op pattern kind (:class:`Pattern`) recorded on a stage.
"""
from tesched.nn.conv import conv2d, depthwise_conv2d
from tesched.nn.batch_matmul import batch_matmul
from tesched.nn.cumsum import cumsum
from tesched.nn.dense import dense, matmul
from tesched.nn.dense_panels import dense_panels, pack_dense_panels, unpack_dense_panels
from tesched.nn.elemwise import (
    abs,
    add,
    bias_add,
    clip,
    divide,
    erf,
    exp,
    log,
    multiply,
    negative,
    relu,
    rsqrt,
    sigmoid,
    sqrt,
    subtract,
    tanh,
)
from tesched.nn.gpu_schedule import gpu_default_schedule
from tesched.nn.norm import batch_moments, batch_norm, batch_norm_train, layer_norm
from tesched.nn.pattern import Pattern, op_of, pattern_of
from tesched.nn.pool import avg_pool2d, global_avg_pool2d, max_pool2d
from tesched.nn.quantized import (
    conv2d_nhwc_packed,
    dense_packed,
    dequantize,
    pack_conv_weight,
    pack_dense_weight,
    qconv2d,
    qdense,
    quantize,
    quantized_conv_params,
    quantized_dense_params,
    requantize,
)
from tesched.nn.quantized_schedule import schedule_conv2d_nhwc_packed, schedule_dense_packed
from tesched.nn.reduce import max, mean, sum
from tesched.nn.resize import upsample
from tesched.nn.rnn import lstm_cell, rnn_cell
from tesched.nn.schedule import default_schedule, register_schedule, schedule_injective, schedule_reduction
from tesched.nn.softmax import softmax
from tesched.nn.transform import broadcast_to, concatenate, pad, reshape, split, strided_slice, take, transpose

__all__ = [
    "Pattern", "abs", "add", "avg_pool2d", "batch_matmul", "batch_moments", "batch_norm", "batch_norm_train", "bias_add", "broadcast_to", "clip", "concatenate", "conv2d",
    "default_schedule", "gpu_default_schedule", "dense", "depthwise_conv2d", "divide", "erf", "exp", "global_avg_pool2d", "layer_norm", "log",
    "lstm_cell", "matmul", "max", "max_pool2d", "mean", "multiply", "negative", "op_of", "pad", "pattern_of",
    "register_schedule", "relu", "reshape", "rnn_cell", "rsqrt", "schedule_injective", "schedule_reduction",
    "sigmoid", "softmax", "split", "sqrt", "strided_slice", "subtract", "sum", "take", "tanh", "transpose",
    "conv2d_nhwc_packed", "dense_packed", "dequantize", "pack_conv_weight", "pack_dense_weight", "qconv2d",
    "qdense", "quantize", "quantized_conv_params", "quantized_dense_params", "requantize",
    "schedule_conv2d_nhwc_packed", "schedule_dense_packed", "dense_panels", "pack_dense_panels",
    "unpack_dense_panels", "upsample", "cumsum",
]
