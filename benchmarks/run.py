"""The benchmark suite, run from a checkout: ``python benchmarks/run.py [options]`` is
``python -m tesched.bench [options]`` (see :mod:`tesched.benchsuite`)."""
from tesched.benchsuite.cli import main

if __name__ == "__main__":
    main()
