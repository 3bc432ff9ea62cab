"""The version of tesched (part of every kernel's cache key)."""

__version__ = "0.1.0"
