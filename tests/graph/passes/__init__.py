"""Tests of the graph passes."""
