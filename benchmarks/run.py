"""The benchmark suite, run from a checkout: ``python benchmarks/run.py [options]`` is
``python -m tesched.bench [options]`` (see :mod:`tesched.tools.bench`)."""
from tesched.tools.bench.cli import main

if __name__ == "__main__":
    main()
