"""``python -m tesched.bench``: the benchmark suite (tesched fused and unfused against NumPy and PyTorch).
See :mod:`tesched.tools.bench` for what it measures and ``--help`` for its options."""
from tesched.tools.bench.cli import main

if __name__ == "__main__":
    main()
