"""GPU kernels on the host: compile generated OpenCL C (pyopencl) or CUDA C (NVRTC), and run them.

:func:`build_gpu` finishes a lowered function for a GPU :class:`~tesched.target.Target`, generates its
kernels (:mod:`tesched.codegen.gpu`), compiles them and returns a :class:`GpuKernel`. OpenCL runs on the
current :class:`Device` (by default the first GPU, or the first device: pocl gives a CPU device where there
is none), whose limits (threads per block, local memory) the kernels are checked against. CUDA C is compiled by NVRTC for
``sm_80`` and ``sm_90`` whether or not a GPU is present; it runs through the CUDA driver API
(cuda-bindings) where one is.

A kernel takes NumPy arrays (copied to the device and the outputs back) or device arrays without copies:
pyopencl arrays of the kernel's context for OpenCL; objects with ``__cuda_array_interface__`` (torch CUDA
tensors, CuPy arrays) for CUDA. Shapes and dtypes are checked as for CPU kernels. pyopencl and
cuda-bindings are imported when a GPU target is built; without them the error names ``tesched[gpu]``.
"""
from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any, Sequence

import numpy as np

from tesched.codegen.extern import extern_calls
from tesched.codegen.gpu import ScalarOnly, generate_gpu
from tesched.codegen.gpu_launch import GpuSource
from tesched.codegen.signature import signature_of
from tesched.driver.allocations import Allocations, evaluate_size
from tesched.driver.arrays import as_array
from tesched.driver.arguments import KernelArguments
from tesched.driver.scalars import ScalarParams
from tesched.errors import BuildError, TeschedError
from tesched.lower.func import LoweredFunc
from tesched.lower.pipeline import lower_for_target
from tesched.target import Target

CUDA_ARCHES = ("sm_80", "sm_90")
_PACKAGES = {"pyopencl": "pyopencl (with pocl for a CPU device)", "cuda.bindings": "cuda-bindings and NVRTC"}


def gpu_module(name: str, target: str) -> ModuleType:
    """Import ``name`` (``pyopencl``, ``cuda.bindings``) for a ``target`` build, or say how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise ImportError(f"target {target!r} needs {_PACKAGES.get(name, name)}: pip install tesched[gpu]") from err


class Device:
    """The GPU device kernels are built for and run on: ``ts.Device("opencl", 1)`` is the second OpenCL
    device (in the order of ``pyopencl.get_platforms()`` and their devices), ``ts.Device("cuda", 0)`` the
    first CUDA GPU. ``with ts.Device(...):`` makes it the default of the builds inside; without one, OpenCL
    takes the first GPU, else the first device (pocl's CPU device where there is no GPU), and CUDA device 0.

    Parameters
    ----------
    kind : str
        ``"opencl"`` or ``"cuda"``.
    index : int, optional
        Which device of that kind (default: the choice described above).
    """

    _stack: list["Device"] = []

    def __init__(self, kind: str = "opencl", index: int | None = None) -> None:
        if kind not in ("opencl", "cuda"):
            raise ValueError(f"Device: kind must be 'opencl' or 'cuda', got {kind!r}")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
            raise ValueError(f"Device: index must be a non-negative int, got {index!r}")
        self.kind, self.index = kind, index

    def __repr__(self) -> str:
        return f"Device({self.kind!r}{'' if self.index is None else f', {self.index}'})"

    def __enter__(self) -> "Device":
        Device._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        Device._stack.pop()

    def queue(self) -> Any:
        """The OpenCL command queue of this device (made once per device)."""
        return _opencl_queue(self.index)


def current_device(kind: str) -> Device:
    """The device of the innermost ``with ts.Device(kind, ...)`` block, else the default one of ``kind``."""
    return next((d for d in reversed(Device._stack) if d.kind == kind), Device(kind))


def opencl_queue() -> Any:
    """The command queue of the current OpenCL device (see :class:`Device`)."""
    return current_device("opencl").queue()


@functools.lru_cache(maxsize=None)
def _opencl_queue(index: int | None) -> Any:
    cl = gpu_module("pyopencl", "opencl")
    try:
        platforms = cl.get_platforms()
    except cl.Error as err:       # "platform not found" when no ICD is installed
        platforms, reason = [], str(err)
    else:
        reason = ""
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        raise TeschedError("no OpenCL platform or device was found" + (f" ({reason})" if reason else "") +
                           "; pip install tesched[gpu] installs pocl, a CPU OpenCL device")
    if index is None:
        device = next((d for d in devices if d.type & cl.device_type.GPU), devices[0])
    elif index < len(devices):
        device = devices[index]
    else:
        raise ValueError(f"Device('opencl', {index}): there are {len(devices)} OpenCL devices: "
                         + "; ".join(f"{k}: {d.name.strip()}" for k, d in enumerate(devices)))
    return cl.CommandQueue(cl.Context([device]))


def compile_opencl(src: GpuSource, queue: Any) -> Any:
    """The pyopencl program of ``src`` built for ``queue``'s device; a compile error is a ``BuildError`` with
    the log and the source."""
    cl = gpu_module("pyopencl", "opencl")
    try:
        return cl.Program(queue.context, src.source).build()
    except cl.Error as err:
        raise BuildError(f"the OpenCL compiler rejected the generated kernel:\n{err}\n--- source ---\n"
                         f"{src.source}") from None


def compile_cuda(source: str, arch: str) -> bytes:
    """PTX of CUDA C ``source`` for ``arch`` (``sm_90``) from NVRTC; an error is a ``BuildError`` with
    NVRTC's log and the source."""
    nvrtc = gpu_module("cuda.bindings.nvrtc", "cuda")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"tesched.cu", 0, [], [])
    _check_nvrtc(nvrtc, err, "nvrtcCreateProgram")
    try:
        option = f"--gpu-architecture=compute_{arch.removeprefix('sm_')}".encode()
        (status,) = nvrtc.nvrtcCompileProgram(prog, 1, [option])
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            err, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise BuildError(f"NVRTC rejected the generated kernel for {arch}:\n"
                             f"{log.decode(errors='replace').rstrip(chr(0))}\n--- source ---\n{source}")
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check_nvrtc(nvrtc, err, "nvrtcGetPTXSize")
        ptx = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, ptx)
        _check_nvrtc(nvrtc, err, "nvrtcGetPTX")
        return ptx
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _check_nvrtc(nvrtc: Any, err: Any, call: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise BuildError(f"NVRTC: {call} failed ({err})")


class GpuKernel:
    """A callable GPU kernel (several launches, in order). ``source`` is its OpenCL or CUDA C, ``lowered``
    its loop IR, ``ptx`` (CUDA) the PTX per architecture."""

    def __init__(self, func: LoweredFunc, src: GpuSource, target: Target, program: Any = None,
                 ptx: dict[str, bytes] | None = None, queue: Any = None, device: Device | None = None):
        self.lowered, self.target, self.program = func, target, program
        self.queue = queue                  # OpenCL: the command queue of the device it was built for
        self.device = device or Device(target.backend)
        self.gpu = src
        self.source = src.source
        self.ptx = ptx or {}
        self.name = func.name
        signature = signature_of(func)
        self._args = KernelArguments(func.name, signature, Allocations(func.name, (), evaluate_size))
        self._specs = self._args.specs
        self._scalars = ScalarParams(func.name, func.scalars, len(self._specs))
        self._cuda: Any = None
        self._opencl_kernels = [] if program is None else \
            [gpu_module("pyopencl", "opencl").Kernel(program, k.name) for k in src.kernels]

    def __repr__(self) -> str:
        return f"GpuKernel({self.name!r}, target={self.target.name!r}, kernels={len(self.gpu.kernels)})"

    def _sizes(self, arrays: Sequence[Any]) -> list[int]:
        """The size parameters bound by ``arrays`` (all arguments), after checking each one."""
        values = self._args.bind(list(arrays)) if self._args.params else []
        for spec, arr in zip(self._specs, arrays):
            if np.dtype(arr.dtype) != spec.dtype:
                raise TypeError(f"argument {spec.name}: expected dtype {spec.dtype}, got {arr.dtype}")
            shape = self._args.expected_shape(spec, values)
            if tuple(arr.shape) != shape:
                raise ValueError(f"argument {spec.name}: expected shape {shape}, got {tuple(arr.shape)}")
        return values

    def _geometry(self, values: list[int]) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
        known = self._args.value_map(values)
        return [k.geometry(lambda e: evaluate_size(e, known)) for k in self.gpu.kernels]

    def _scratch_shapes(self, values: list[int]) -> list[tuple[tuple[int, ...], np.dtype]]:
        known = self._args.value_map(values)
        return [(tuple(d if isinstance(d, int) else evaluate_size(d, known) for d in b.shape), np.dtype(b.dtype))
                for b in self.gpu.scratch]

    def __call__(self, *arrays: Any, **params: Any) -> Any:
        """``f(inputs..., outputs...)``: NumPy arrays are copied in and the outputs back; device arrays
        (pyopencl arrays, CUDA array-interface objects) are used in place. ``f(inputs...)`` returns new
        outputs (pyopencl arrays when an input is one, else NumPy arrays). Runtime parameters follow the
        arrays or are passed by keyword, as for CPU kernels."""
        arrays, scalars = self._scalars.split(arrays, params)
        args = self._args
        if len(arrays) == args.n_inputs < len(self._specs) and args.inputs_first:
            values = args.bind(list(arrays) + [None] * (len(self._specs) - len(arrays))) if args.params else []
            cla = gpu_module("pyopencl.array", "opencl") if self.target.backend == "opencl" else None
            shapes = [(args.expected_shape(spec, values), spec.dtype) for spec in self._specs[len(arrays):]]
            if cla is not None and any(isinstance(a, cla.Array) for a in arrays):
                outputs = [cla.empty(self.queue, shape, dtype) for shape, dtype in shapes]
            else:
                outputs = [np.empty(shape, dtype) for shape, dtype in shapes]
            self._run(arrays + tuple(outputs), scalars)
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        if len(arrays) != len(self._specs):
            raise TypeError(f"{self.name} takes {len(self._specs)} arrays ({', '.join(s.name for s in self._specs)})"
                            f" or its {args.n_inputs} inputs, got {len(arrays)}")
        self._run(arrays, scalars)
        return None

    def _run(self, arrays: tuple, values: tuple[np.ndarray, ...]) -> None:
        """Run on all the arrays and the parameters' values (0-d arrays of their dtypes)."""
        scalars = [(v.astype(np.int8) if v.dtype == np.bool_ else v)[()] for v in values]   # bool: int8_t in C
        if self.target.backend == "opencl":
            self._run_opencl(arrays, scalars)
        else:
            self._run_cuda(arrays, scalars)

    # OpenCL -----------------------------------------------------------------------------------------
    def _run_opencl(self, arrays: tuple, scalars: Sequence[Any]) -> None:
        cla = gpu_module("pyopencl.array", "opencl")
        queue = self.queue
        for spec, arr in zip(self._specs, arrays):
            if isinstance(arr, cla.Array):
                if arr.context != queue.context:
                    raise ValueError(f"argument {spec.name}: a pyopencl array of another context (device); "
                                     f"{self.name} runs on {queue.device.name}")
                if not arr.flags.c_contiguous:
                    raise ValueError(f"argument {spec.name}: array is not C-contiguous")
        arrays = tuple(a if isinstance(a, cla.Array) else as_array(a, f"argument {spec.name}")
                       for spec, a in zip(self._specs, arrays))
        values = self._sizes(arrays)
        device = [a if isinstance(a, cla.Array) else cla.to_device(queue, np.ascontiguousarray(a).reshape(a.shape))
                  for a in arrays]     # (ascontiguousarray makes a 0-d array 1-d)
        scratch = [cla.empty(queue, shape, dtype) for shape, dtype in self._scratch_shapes(values)]
        buffers = [d.data for d in device + scratch]
        sizes = [np.int64(v) for v in values]
        for kernel, (blocks, threads) in zip(self._opencl_kernels, self._geometry(values)):
            kernel(queue, tuple(b * t for b, t in zip(blocks, threads)), threads, *buffers, *sizes, *scalars)
        for spec, arr, dev in zip(self._specs, arrays, device):
            if spec.is_output and isinstance(arr, np.ndarray):
                dev.get(queue, ary=arr)
        queue.finish()

    # CUDA -------------------------------------------------------------------------------------------
    def _run_cuda(self, arrays: tuple, scalars: Sequence[Any]) -> None:
        runtime = self._cuda or CudaRuntime.on(self.device.index or 0)
        self._cuda = runtime
        values = self._sizes(arrays)
        runtime.run(self, arrays, values, scalars)


class CudaRuntime:
    """The CUDA driver API (cuda-bindings) on the first device: context, module loading, launches."""

    def __init__(self, index: int = 0) -> None:
        try:
            cuda = gpu_module("cuda.bindings.driver", "cuda")
        except RuntimeError as missing:     # the bindings load the driver library, absent without a GPU
            raise TeschedError(f"no CUDA driver: {missing}; target 'cuda' compiles here but runs only where a "
                               "CUDA GPU and its driver are") from None
        self.cuda = cuda
        (err,) = cuda.cuInit(0)
        count = 0
        if err == cuda.CUresult.CUDA_SUCCESS:
            err, count = cuda.cuDeviceGetCount()
        if err != cuda.CUresult.CUDA_SUCCESS or count == 0:
            raise TeschedError(f"no CUDA device is available ({err}); target 'cuda' compiles here but runs only "
                               "where a CUDA GPU and its driver are")
        if index >= count:
            raise ValueError(f"Device('cuda', {index}): there are {count} CUDA devices")
        self.index = index
        self.device = self._ok(cuda.cuDeviceGet(index))
        major = self._ok(cuda.cuDeviceGetAttribute(
            cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device))
        self.arch = f"sm_{major}0"
        self.context = self._ok(cuda.cuDevicePrimaryCtxRetain(self.device))
        self._ok(cuda.cuCtxSetCurrent(self.context))
        self.modules: dict[int, Any] = {}

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def on(index: int) -> "CudaRuntime":
        """The runtime of CUDA device ``index`` (made once)."""
        return CudaRuntime(index)

    def _ok(self, result: Any) -> Any:
        err, *rest = result if isinstance(result, tuple) else (result,)
        if err != self.cuda.CUresult.CUDA_SUCCESS:
            raise TeschedError(f"CUDA driver call failed: {err}")
        return rest[0] if len(rest) == 1 else tuple(rest)

    def run(self, kernel: GpuKernel, arrays: tuple, values: list[int], scalars: Sequence[Any] = ()) -> None:
        cuda = self.cuda
        if id(kernel) not in self.modules:
            ptx = kernel.ptx.get(self.arch) or compile_cuda(kernel.source, self.arch)
            self.modules[id(kernel)] = self._ok(cuda.cuModuleLoadData(ptx))
        module = self.modules[id(kernel)]
        owned, pointers, copies = [], [], []
        for spec, arr in zip(kernel._specs, arrays):
            interface = getattr(arr, "__cuda_array_interface__", None)
            if interface is not None:
                where = arr.__dlpack_device__() if hasattr(arr, "__dlpack_device__") else None
                if where is not None and int(where[1]) != self.index:
                    raise ValueError(f"argument {spec.name}: an array on CUDA device {int(where[1])}; {kernel.name} "
                                     f"runs on device {self.index}")
                pointers.append(int(interface["data"][0]))
                continue
            arr = as_array(arr, f"argument {spec.name}")
            host = np.ascontiguousarray(arr)
            ptr = self._ok(cuda.cuMemAlloc(max(host.nbytes, 1)))
            owned.append(ptr)
            self._ok(cuda.cuMemcpyHtoD(ptr, host.ctypes.data, host.nbytes))
            pointers.append(int(ptr))
            if spec.is_output:
                copies.append((arr, ptr))
        for shape, dtype in kernel._scratch_shapes(values):
            ptr = self._ok(cuda.cuMemAlloc(max(int(np.prod(shape)) * dtype.itemsize, 1)))
            owned.append(ptr)
            pointers.append(int(ptr))
        try:
            args = [np.array([p], dtype=np.uint64) for p in pointers] + [np.array([v], np.int64) for v in values] \
                + [np.array([v]) for v in scalars]
            argv = np.array([a.ctypes.data for a in args], dtype=np.uint64)
            for launch, (blocks, threads) in zip(kernel.gpu.kernels, kernel._geometry(values)):
                function = self._ok(cuda.cuModuleGetFunction(module, launch.name.encode()))
                self._ok(cuda.cuLaunchKernel(function, *blocks, *threads, 0, 0, argv.ctypes.data, 0))
            self._ok(cuda.cuCtxSynchronize())
            for arr, ptr in copies:
                self._ok(cuda.cuMemcpyDtoH(arr.ctypes.data, ptr, arr.nbytes))
        finally:
            for ptr in owned:
                cuda.cuMemFree(ptr)


def build_gpu(func: LoweredFunc, target: Target) -> GpuKernel:
    """Finish ``func`` for GPU ``target``, generate its kernels and compile them (OpenCL: for the default
    device, against its limits; CUDA: PTX for each of :data:`CUDA_ARCHES`)."""
    externs = extern_calls(func)
    if externs:
        raise BuildError(f"{func.name}: calls of extern C functions ({', '.join(e.name for e in externs)}) run on "
                         f"CPU targets only, not on {target.backend}")
    if target.backend == "opencl":
        queue = opencl_queue()
        device = queue.device
        target = target.with_gpu_limits(int(device.max_work_group_size), int(device.local_mem_size))
        try:
            src = generate_gpu(lower_for_target(func, target), target)
        except ScalarOnly:          # a vector operation OpenCL C is not given here: vectorized loops stay loops
            target = target.with_gpu_limits(target.gpu_max_threads, target.gpu_shared_bytes, 0)
            src = generate_gpu(lower_for_target(func, target), target)
        return GpuKernel(func, src, target, program=compile_opencl(src, queue), queue=queue,
                         device=current_device("opencl"))
    finished = lower_for_target(func, target)
    src = generate_gpu(finished, target)
    return GpuKernel(func, src, target, ptx={arch: compile_cuda(src.source, arch) for arch in CUDA_ARCHES},
                     device=current_device("cuda"))
