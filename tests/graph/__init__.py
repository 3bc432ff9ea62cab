"""Tests of the inference graph tesched.graph."""
