"""The benchmark suite behind ``python -m tesched.bench``: tesched against NumPy and PyTorch, in one process.

Each workload (``workloads.WORKLOADS``) is prepared as a :class:`~.workloads.Case`: its variants
(tesched fused, tesched unfused, NumPy, and PyTorch eager when torch is importable), a float64 NumPy
reference every variant is checked against before it is timed, and its flop count. tesched variants are
plain calls (``f(*inputs)``: arguments checked at every call), and tesched fused is also timed through its
prepared call beside it (``Kernel.prepare``, ``Executable.prepare``: arguments checked once, as in a loop
of calls). Variants of a
workload are timed interleaved, round after round, so a burst of load from other processes hits all of
them alike (:mod:`tesched.driver.timing`); the report gives median and minimum microseconds, GFLOP/s, and the speed-up
of tesched fused over each other variant (:mod:`.report`). The machine's peak FMA throughput
(:mod:`.peak`, from ``tesched/tools/bench/peak_flops.c``) puts the GEMM in proportion, and :mod:`.build_times`
measures cold and cached builds.

The suite measures; it holds no numbers of its own and asserts nothing about speed.
"""


def __getattr__(name: str):
    """``run_suite`` and ``SuiteResult`` load on first use, so ``python -m tesched.tools.bench.peak`` runs alone."""
    if name in ("run_suite", "SuiteResult"):
        from tesched.tools.bench import suite
        return getattr(suite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
