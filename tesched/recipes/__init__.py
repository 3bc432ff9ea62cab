"""Schedule recipes for whole pipelines, written with tesched's primitives only.

- :mod:`.conv_chain`: two 3x3 convolutions with a relu between, unfused (each stage in full, register
  tiled) or fused by overlapped tiling (the first convolution recomputed per row band of the second).
"""
