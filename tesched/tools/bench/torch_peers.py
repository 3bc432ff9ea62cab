"""The runtimes an imported PyTorch model is timed against, each made ready to call on its example inputs:
PyTorch eager, ``torch.compile`` (inductor) and ONNX Runtime (``torch.onnx.export``, then a CPU session).

Each function returns a :class:`Peer`: a ``call()`` that runs the model once on the inputs it was given,
the output of its first call (to check against eager before anything is timed), and the seconds that
getting ready took (compiling on the first call; exporting and creating the session). A runtime that
cannot run says why in ``skipped`` instead (not installed, or its export or compilation failed), so a
benchmark or a tutorial prints the reason and goes on with the others.

This module times nothing and checks no output: :mod:`tesched.driver.timing` times, the caller compares. It imports
torch and onnxruntime only when a function is called (``pip install tesched[bench]`` installs both).
"""
from __future__ import annotations

import contextlib
import io
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tesched.config import variables_set
from tesched.tools.bench.threads import BENCH_EXTRA, optional_module


@dataclass(frozen=True)
class Peer:
    """A runtime ready to be timed (``call``), or, when ``call`` is None, the reason it is not (``skipped``).
    ``output`` is the result of the first call; ``setup_seconds`` what the export, session or first
    (compiling) call took."""

    call: Callable[[], object] | None
    output: Any = None
    setup_seconds: float = 0.0
    skipped: str = ""


def _failure(what: str, error: Exception) -> str:
    first_line = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
    return f"{what} failed: {type(error).__name__}{': ' + first_line if first_line else ''}"


def eager_peer(model: Any, inputs: tuple) -> Peer:
    """``model(*inputs)`` under ``torch.inference_mode()`` (``model`` in eval mode)."""
    import torch

    def call() -> object:
        with torch.inference_mode():
            return model(*inputs)

    started = time.perf_counter()
    output = call()
    return Peer(call, output, time.perf_counter() - started)


def torch_compile_peer(model: Any, inputs: tuple) -> Peer:
    """``torch.compile(model)`` (inductor, default mode) called as :func:`eager_peer` calls the model; the
    first call compiles and is counted in ``setup_seconds``. Skipped when compilation fails (inductor needs
    a C++ compiler on CPU), with the error's type and first line."""
    import torch
    compiled = torch.compile(model)

    def call() -> object:
        with torch.inference_mode():
            return compiled(*inputs)

    started = time.perf_counter()
    try:
        output = call()
    except Exception as error:   # inductor's failures come as many exception types; report, do not stop
        return Peer(None, skipped=_failure("torch.compile", error))
    return Peer(call, output, time.perf_counter() - started)


def onnxruntime_peer(model: Any, inputs: tuple, threads: int) -> Peer:
    """``torch.onnx.export(model, inputs, dynamo=True)`` to a temporary file, then an ONNX Runtime
    ``InferenceSession`` on the CPU with ``threads`` intra-op threads and one inter-op thread, run on the
    inputs as NumPy arrays (``call()`` returns the list of outputs). Its idle threads spin unless
    ``OMP_WAIT_POLICY=passive`` is set, as the OpenMP runtimes of tesched and PyTorch do (ONNX Runtime has
    its own pool, which reads its own option). Skipped when onnxruntime (or the exporter's
    ``onnx``/``onnxscript``) is not installed or the export fails."""
    ort = optional_module("onnxruntime")
    if ort is None:
        return Peer(None, skipped=f"onnxruntime is not installed ({BENCH_EXTRA})")
    missing = [name for name in ("onnx", "onnxscript") if optional_module(name) is None]
    if missing:
        return Peer(None, skipped=f"torch.onnx.export needs {' and '.join(missing)} ({BENCH_EXTRA})")
    import torch
    started = time.perf_counter()
    path = Path(tempfile.mkdtemp(prefix="tesched-onnx-")) / "model.onnx"
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # the exporter prints its progress
            torch.onnx.export(model, inputs, path, dynamo=True)
    except Exception as error:   # the exporter's own failures are many types; report, do not stop the run
        return Peer(None, skipped=_failure("torch.onnx.export", error))
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    if variables_set(["OMP_WAIT_POLICY"]).get("OMP_WAIT_POLICY", "").lower() == "passive":
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}

    def call() -> object:
        return session.run(None, feeds)

    output = call()
    return Peer(call, output, time.perf_counter() - started)
