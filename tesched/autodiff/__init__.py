"""Reverse-mode differentiation of tensor-expression pipelines (``ts.gradient``)."""
from tesched.autodiff.gradient import gradient

__all__ = ["gradient"]
