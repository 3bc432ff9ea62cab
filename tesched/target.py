"""What the generated code is for: instruction-set features, SIMD width, compiler and flags, threads.

A :class:`Target` is a frozen value built once, from the host (``Target("host")``: the CPU's flags and
``-march=native``) or from a name: ``x86-64-avx512``, ``x86-64-avx2``, ``x86-64`` (SSE4.2) or ``c``
(portable C: no ``-march``, no explicit SIMD). Extra features follow a ``+``:
``Target("x86-64-avx512+avx512_vnni+avx512_bf16")``; ``+amx_bf16`` and ``+amx_int8`` bring ``amx_tile``.
GPU targets: ``opencl`` (OpenCL C, run through pyopencl) and ``cuda`` (CUDA C, compiled by NVRTC for
``sm_80`` and ``sm_90``); their ``backend`` names the language, and ``gpu_max_threads`` and
``gpu_shared_bytes`` the limits a kernel is checked against (the device's own when it is known at build).
``build`` passes it to the lowering (SIMD width), the C generator (thread clauses) and the compiler
(flags); it is part of every kernel's cache key, so a library for an AVX2-only machine can be built here. ``with Target(...):`` makes it the default of the
code inside (schedules that size tiles by the SIMD width read :func:`current_target`).

This module reads no environment variable itself (see :mod:`tesched.config`) and runs nothing at import.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from tesched.config import settings
from tesched.errors import ConfigError

_BASE_FLAGS = ("-O3", "-fopenmp", "-fno-math-errno", "-w")

# name -> (features, SIMD bytes, -march flags)
_PRESETS: dict[str, tuple[frozenset[str], int, tuple[str, ...]]] = {
    "x86-64-avx512": (frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq",
                                 "avx512vl", "avx512cd"}), 64, ("-march=x86-64-v4",)),
    "x86-64-avx2": (frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"}), 32, ("-march=x86-64-v3",)),
    "x86-64": (frozenset({"sse4_2"}), 16, ("-march=x86-64-v2",)),
    "c": (frozenset(), 0, ()),
}

# GPU name -> (threads per block, shared memory bytes per block): what every device of the kind offers
# (CUDA: 1024 threads, 48 KiB of static shared memory; OpenCL: the minimum work-group size an OpenCL
# device must allow is 1, so the common 256, and the 32 KiB of local memory OpenCL 1.2 guarantees)
GPU_PRESETS: dict[str, tuple[int, int]] = {"opencl": (256, 32 * 1024), "cuda": (1024, 48 * 1024)}

# features a name may add with "+", and the gcc flag that enables each
FEATURE_FLAGS: dict[str, str] = {
    "avx512_vnni": "-mavx512vnni", "avx512_bf16": "-mavx512bf16", "avx512_fp16": "-mavx512fp16",
    "avx512vbmi": "-mavx512vbmi", "avx_vnni": "-mavxvnni", "f16c": "-mf16c", "fma": "-mfma",
    "amx_tile": "-mamx-tile", "amx_bf16": "-mamx-bf16", "amx_int8": "-mamx-int8",
}

# features a "+" name brings along: AMX's bf16 and int8 products need its tile registers
IMPLIED_FEATURES: dict[str, tuple[str, ...]] = {"amx_bf16": ("amx_tile",), "amx_int8": ("amx_tile",)}

# instruction-set features generated code may use (as /proc/cpuinfo names them), each with the name the
# compiler's __builtin_cpu_supports knows it by: an exported library records them and checks the CPU has
# them before it runs (see Target.isa_features)
ISA_FEATURES: dict[str, str] = {
    "sse4_2": "sse4.2", "popcnt": "popcnt", "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
    "bmi1": "bmi", "bmi2": "bmi2", "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512dq": "avx512dq",
    "avx512vl": "avx512vl", "avx512cd": "avx512cd", "avx512ifma": "avx512ifma", "avx512vbmi": "avx512vbmi",
    "avx512_vbmi2": "avx512vbmi2", "avx512_vnni": "avx512vnni", "avx512_bitalg": "avx512bitalg",
    "avx512_vpopcntdq": "avx512vpopcntdq", "avx512_bf16": "avx512bf16", "avx512_fp16": "avx512fp16",
    "avx_vnni": "avxvnni",
}
# AMX (amx_tile, amx_bf16, amx_int8) is not among them: the AMX micro-kernels ask the OS for the tile state
# when they load and take their portable path when it (or the CPU) refuses, so AMX code runs anywhere


@functools.lru_cache(maxsize=None)
def host_features() -> frozenset[str]:
    """The CPU flags of this machine (``/proc/cpuinfo``), empty where they cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _host_vector_bytes(features: frozenset[str]) -> int:
    if "avx512f" in features:
        return 64
    if "avx2" in features:
        return 32
    return 16


def _vector_registers(features: frozenset[str], width: int, base: str) -> int:
    """SIMD registers the generated code may use: 32 with AVX-512 (zmm0-31, and ymm/xmm0-31 with AVX512VL),
    16 with AVX2, AVX or SSE (ymm/xmm0-15), none for portable C and GPU targets."""
    if width == 0 or base == "c" or base in GPU_PRESETS:
        return 0
    return 32 if "avx512f" in features else 16


@dataclass(frozen=True, init=False)
class Target:
    """A code-generation target.

    Parameters
    ----------
    spec : str
        ``"host"`` (default; ``TESCHED_TARGET`` changes the default), ``"x86-64-avx512"``,
        ``"x86-64-avx2"``, ``"x86-64"`` or ``"c"``, optionally followed by ``+feature`` items
        (keys of ``tesched.target.FEATURE_FLAGS``). ``"llvm"`` is accepted as TVM's name for the host.
    threads : int, optional
        If given, every parallel loop uses exactly this many threads; otherwise the number set with
        ``ts.set_num_threads`` (or the OpenMP default) applies at run time.

    Example
    -------
    >>> ts.Target("x86-64-avx2").vector_bytes, ts.Target("x86-64-avx2").vector_registers
    (32, 16)
    """

    name: str
    features: frozenset[str]
    vector_bytes: int
    vector_registers: int              # SIMD registers of vector_bytes each (0: no SIMD register file)
    flags: tuple[str, ...]
    compiler: tuple[str, ...]
    threads: int | None = field(default=None)
    backend: str = "c"                 # the language generated: "c", "opencl" or "cuda"
    gpu_max_threads: int = 0           # GPU targets: threads per block allowed
    gpu_shared_bytes: int = 0          # GPU targets: shared memory per block

    _stack: ClassVar[list["Target"]] = []

    def __init__(self, spec: str = "host", *, threads: int | None = None) -> None:
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"a target is described by a string such as 'host' or 'x86-64-avx2', got {spec!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"Target threads must be a positive int, got {threads!r}")
        base, *extra = [part.strip() for part in spec.strip().split("+")]
        env = settings()
        if base in ("host", "llvm", "native"):
            features = host_features()
            width = env.vector_bytes or _host_vector_bytes(features)
            march: tuple[str, ...] = ("-march=native",)
            base = "host"
        elif base in _PRESETS:
            features, width, march = _PRESETS[base]
        elif base in GPU_PRESETS:     # OpenCL C has vector types (float4): vectorized loops become them
            features, width, march = frozenset(), 16 if base == "opencl" else 0, ()
        else:
            raise ConfigError(f"unknown target {spec!r}; targets: host, {', '.join(_PRESETS)}, {', '.join(GPU_PRESETS)}")
        unknown = [f for f in extra if f not in FEATURE_FLAGS]
        if unknown:
            raise ConfigError(f"target {spec!r}: unknown feature(s) {unknown}; known: {', '.join(FEATURE_FLAGS)}")
        if extra and base in ("c", *GPU_PRESETS):
            what = "portable C" if base == "c" else f"GPU target {base}"
            raise ConfigError(f"target {spec!r}: {what} takes no instruction-set features")
        extra = list(dict.fromkeys([implied for f in extra for implied in IMPLIED_FEATURES.get(f, ())] + extra))
        feature_flags = tuple(FEATURE_FLAGS[f] for f in extra) if base != "host" else ()
        object.__setattr__(self, "name", spec.strip() if base != "host" else "host")
        object.__setattr__(self, "features", frozenset(features) | frozenset(extra))
        object.__setattr__(self, "vector_bytes", width)
        object.__setattr__(self, "vector_registers", _vector_registers(self.features, width, base))
        object.__setattr__(self, "flags", _BASE_FLAGS[:1] + march + feature_flags + _BASE_FLAGS[1:])
        object.__setattr__(self, "compiler", env.compiler)
        object.__setattr__(self, "threads", threads)
        limits = GPU_PRESETS.get(base, (0, 0))
        object.__setattr__(self, "backend", base if base in GPU_PRESETS else "c")
        object.__setattr__(self, "gpu_max_threads", limits[0])
        object.__setattr__(self, "gpu_shared_bytes", limits[1])

    def with_gpu_limits(self, max_threads: int, shared_bytes: int, vector_bytes: int | None = None) -> "Target":
        """This GPU target with a device's own limits (threads per block, shared memory bytes) and, if given,
        another vector width (0: scalar code)."""
        out = Target(self.name, threads=self.threads)
        object.__setattr__(out, "gpu_max_threads", max_threads)
        object.__setattr__(out, "gpu_shared_bytes", shared_bytes)
        if vector_bytes is not None:
            object.__setattr__(out, "vector_bytes", vector_bytes)
            object.__setattr__(out, "vector_registers", 0)
        return out

    def lanes(self, dtype: str = "float32") -> int:
        """How many elements of ``dtype`` one vector register holds: 1 for portable C (no SIMD), so that
        tile sizes derived from it stay valid on every target."""
        return max(1, self.vector_bytes // np.dtype(dtype).itemsize)

    def has(self, *features: str) -> bool:
        """Whether every one of ``features`` (CPU flag names such as ``avx512_vnni``) is available."""
        return set(features) <= self.features

    @property
    def isa_features(self) -> frozenset[str]:
        """The instruction-set features (keys of ``tesched.target.ISA_FEATURES``) that code compiled for this target
        may use, so that a CPU running it must have: the preset's, or for ``"host"`` all of this CPU's."""
        return frozenset(f for f in self.features if f in ISA_FEATURES)

    @property
    def key(self) -> str:
        """A text identifying everything that changes the generated code (part of the cache key)."""
        return "|".join([self.name, ",".join(sorted(self.features)), str(self.vector_bytes), " ".join(self.flags),
                         " ".join(self.compiler), str(self.threads), self.backend, str(self.gpu_max_threads),
                         str(self.gpu_shared_bytes)])

    def __enter__(self) -> "Target":
        Target._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        Target._stack.pop()

    def __repr__(self) -> str:
        extra = f", threads={self.threads}" if self.threads is not None else ""
        return f"Target({self.name!r}{extra})"


def current_target() -> Target:
    """The target of the innermost ``with Target(...)`` block, else the default (``TESCHED_TARGET`` or
    the host)."""
    if Target._stack:
        return Target._stack[-1]
    return _default_target(settings().target, settings().vector_bytes, settings().compiler)


@functools.lru_cache(maxsize=8)
def _default_target(spec: str, vector_bytes: int | None, compiler: tuple[str, ...]) -> Target:
    return Target(spec)


def as_target(target: Target | str | None) -> Target:
    """``target`` as a :class:`Target` (None: :func:`current_target`)."""
    if target is None:
        return current_target()
    if isinstance(target, Target):
        return target
    return Target(target)
