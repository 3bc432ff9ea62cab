"""The ``G.nn`` namespace: neural-network graph builders under Relay's names (``G.nn.conv2d``, ...)."""
from tesched.graph.ops_attention import attention
from tesched.graph.ops_conv_transpose import conv2d_transpose
from tesched.graph.ops_elemwise import bias_add, relu
from tesched.graph.ops_matmul import batch_matmul
from tesched.graph.ops_nn import (
    avg_pool2d,
    batch_norm,
    batch_norm_train,
    conv2d,
    conv2d_weight_last,
    dense,
    dense_panels,
    depthwise_conv2d,
    global_avg_pool2d,
    layer_norm,
    matmul,
    max_pool2d,
    softmax,
)
from tesched.graph.ops_quantized import (
    conv2d_nhwc_packed,
    dense_packed,
    dequantize,
    qconv2d,
    qdense,
    quantize,
    requantize,
)
from tesched.graph.ops_resample import upsample
from tesched.graph.ops_rnn import gru_cell, lstm_cell, rnn_cell
from tesched.graph.ops_transform import pad
from tesched.graph.ops_winograd import winograd_conv2d

__all__ = ["attention", "avg_pool2d", "batch_matmul", "batch_norm", "batch_norm_train", "bias_add", "conv2d", "conv2d_transpose",
           "conv2d_weight_last", "dense", "dense_panels", "depthwise_conv2d",
           "global_avg_pool2d", "gru_cell", "layer_norm", "lstm_cell", "matmul", "max_pool2d", "pad", "relu",
           "rnn_cell", "softmax", "upsample", "winograd_conv2d",
           "conv2d_nhwc_packed", "dense_packed", "dequantize", "qconv2d", "qdense", "quantize", "requantize"]
