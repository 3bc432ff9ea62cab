"""Shared fixtures for tesched's tests: seeded random data, an isolated kernel cache, a subprocess runner.

Most tests use the default kernel cache (compiled kernels are reused across runs). Tests that inspect the
cache itself (``test_builder.py``) or draw many one-off kernels (``test_random_schedules.py``) point
``TESCHED_CACHE_DIR`` at a directory private to the test session instead.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

# the loop IR is checked after every lowering pass in the suite (tesched.ir.verify): a pass that breaks an
# invariant fails the test that lowered through it with an InternalError naming the pass
os.environ.setdefault("TESCHED_VERIFY", "1")

SLOW_REASON = "slow: run with `python -m pytest --slow -m slow` (.ci/run does, after the default suite)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (whole models, tuning, the quick fuzz campaign)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` skip unless ``--slow`` is given, so the default suite stays within its budget."""
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason=SLOW_REASON)
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def rand(rng: np.random.Generator) -> Callable[..., np.ndarray]:
    """``rand(shape, dtype="float32", low=0, high=1)``: a seeded random array (integers for int dtypes)."""

    def make(shape, dtype: str = "float32", low: float = 0.0, high: float = 1.0) -> np.ndarray:
        if np.dtype(dtype).kind in "iu":
            return rng.integers(int(low), int(high), size=shape, endpoint=True).astype(dtype)
        return rng.uniform(low, high, size=shape).astype(dtype)

    return make


@pytest.fixture(scope="session")
def session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel cache directory under pytest's basetemp, shared by the whole session."""
    return tmp_path_factory.mktemp("tesched-cache")


@pytest.fixture
def isolated_cache(session_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``TESCHED_CACHE_DIR`` at the session's private cache for the duration of one test."""
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(session_cache_dir))
    return session_cache_dir


@pytest.fixture(scope="module")
def module_cache(session_cache_dir: Path) -> Iterator[Path]:
    """``isolated_cache`` for a whole module (hypothesis tests building many kernels, with a fixture of
    module scope): ``pytestmark = pytest.mark.usefixtures("module_cache")``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TESCHED_CACHE_DIR", str(session_cache_dir))
        yield session_cache_dir


@pytest.fixture
def run_python() -> Callable[..., subprocess.CompletedProcess]:
    """``run_python(code, env=None)``: run ``code`` in a fresh interpreter (for caches shared between
    processes, and for inputs that might crash the process instead of raising)."""

    def run(code: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              env=full_env, timeout=timeout)

    return run


@pytest.fixture(autouse=True)
def isl_budget_restored():
    """Every isl operation budget tesched sets is lifted again when the call that set it returns (a leaked
    budget makes every later isl call in the process fail with "maximal number of operations exceeded")."""
    yield
    import islpy as isl
    leaked = isl.DEFAULT_CONTEXT.get_max_operations()
    if leaked:
        isl.DEFAULT_CONTEXT.set_max_operations(0)
        isl.DEFAULT_CONTEXT.reset_operations()
        pytest.fail(f"this test left an isl operation budget of {leaked} on the default context")


@pytest.fixture
def host_target():
    """Build for this CPU whatever ``TESCHED_TARGET`` says: for tests of the SIMD code generated for the
    machine running them (``.ci/run`` runs the suite again under other default targets; tests that assert
    what one named target gets pin it instead, see ``tests/targets.py``)."""
    import tesched as ts
    with ts.Target("host"):
        yield
