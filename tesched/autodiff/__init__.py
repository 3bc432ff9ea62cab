"""Reverse-mode differentiation of tensor-expression pipelines; users call it as ``ts.gradient``."""
from tesched.autodiff.gradient import gradient as gradient
