"""tesched.nn: an operator library on ``ts.compute``, each op with a pattern kind and a default schedule.

Ops (NCHW layouts, OIHW kernels): ``conv2d``, ``depthwise_conv2d``, ``dense``, ``matmul``, ``batch_norm``,
``bias_add``, ``add``/``subtract``/``multiply``/``divide`` (NumPy broadcasting), ``relu``, ``sigmoid``,
``tanh``, ``exp``, ``pad``, ``max_pool2d``, ``avg_pool2d``, ``global_avg_pool2d``, ``softmax``,
``reshape``, ``transpose``, ``concatenate``, ``strided_slice``, ``split``, ``sum``/``mean``/``max``, and
the cells ``rnn_cell`` and ``lstm_cell`` (PyTorch's formulas). Each returns tensors; schedule them with
``default_schedule(outputs)`` and build as usual::

    out = nn.relu(nn.conv2d(x, w, strides=1, padding=1))
    f = ts.build(nn.default_schedule(out), [x, w, out])

``pattern_of(tensor)`` gives the op pattern kind (:class:`Pattern`) recorded on a stage.
"""
from tesched.nn.conv import conv2d, depthwise_conv2d
from tesched.nn.dense import dense, matmul
from tesched.nn.elemwise import add, bias_add, divide, exp, multiply, relu, sigmoid, subtract, tanh
from tesched.nn.norm import batch_norm
from tesched.nn.pattern import Pattern, op_of, pattern_of
from tesched.nn.pool import avg_pool2d, global_avg_pool2d, max_pool2d
from tesched.nn.reduce import max, mean, sum
from tesched.nn.rnn import lstm_cell, rnn_cell
from tesched.nn.schedule import default_schedule, register_schedule, schedule_injective, schedule_reduction
from tesched.nn.softmax import softmax
from tesched.nn.transform import concatenate, pad, reshape, split, strided_slice, transpose

__all__ = [
    "Pattern", "add", "avg_pool2d", "batch_norm", "bias_add", "concatenate", "conv2d", "default_schedule",
    "dense", "depthwise_conv2d", "divide", "exp", "global_avg_pool2d", "lstm_cell", "matmul", "max",
    "max_pool2d", "mean", "multiply", "op_of", "pad", "pattern_of", "register_schedule", "relu", "reshape",
    "rnn_cell", "schedule_injective", "schedule_reduction", "sigmoid", "softmax", "split", "strided_slice",
    "subtract", "sum", "tanh", "transpose",
]
