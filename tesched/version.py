"""The version of tesched (part of every kernel's cache key)."""

#: The version of tesched (``python -m tesched --version`` prints it).
__version__ = "0.1.0"
