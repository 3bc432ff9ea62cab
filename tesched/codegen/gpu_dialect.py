"""The two GPU languages the kernel printer writes: OpenCL C and CUDA C, as a table of spellings.

A :class:`Dialect` says how one language spells a kernel's definition, its buffer qualifiers, shared
memory, the barrier and the GPU indices, and carries the prelude every kernel source starts with: the
fixed-width integer names, the runtime header's scalar helpers (``ts_floordiv``, ``ts_min_f32`` ...) with
the CPU semantics, and for OpenCL the vector helpers over its built-in vector types (CUDA kernels are
scalar). :class:`OpenCLExpr` prints the vector expressions OpenCL C spells otherwise than GCC's
extensions. It prints no statement and knows nothing of loops or launches (:mod:`tesched.codegen.gpu`).
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.codegen.c_expr import CExpr
from tesched.ir import nodes as ir
from tesched.te import dtype as dt

GPU_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")

# the C type names the expression printer writes, for each dialect
_OPENCL_TYPES = """typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;
#define INT64_C(x) x##L
#define TS_FN static inline
#define TS_POPCOUNT64(v) ((int64_t)popcount(v))
#define TS_CLZ64(v) ((int64_t)clz(v))
"""
_CUDA_TYPES = """typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(x) x##LL
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define TS_FN static __device__ __forceinline__
#define TS_POPCOUNT64(v) ((int64_t)__popcll(v))
#define TS_CLZ64(v) ((int64_t)__clzll(v))
"""
# OpenCL C spells the single-precision functions without the f suffix (they are overloaded)
_OPENCL_FLOAT_FUNCTIONS = "".join(
    f"#define {fn}f {fn}\n" for fn in ("exp", "log", "log2", "log1p", "erf", "sqrt", "tanh", "floor", "ceil", "fabs",
                                       "rint", "trunc", "pow", "fmod", "sin", "cos", "tan", "asin", "acos", "atan",
                                       "sinh", "cosh", "atan2"))

# the helpers of the runtime header a scalar expression may call, with the same semantics
_HELPERS = """TS_FN int64_t ts_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
TS_FN int64_t ts_floormod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TS_FN int64_t ts_fmod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
TS_FN int64_t ts_shl(int64_t a, int64_t b, int bits) {
  return ((uint64_t)b < (uint64_t)bits) ? (int64_t)((uint64_t)a << b) : 0;
}
TS_FN int64_t ts_shr(int64_t a, int64_t b, int bits) {
  return ((uint64_t)b < (uint64_t)bits) ? (a >> b) : (a < 0 ? -1 : 0);
}
TS_FN int64_t ts_popcount(uint64_t v, int bits) { return TS_POPCOUNT64(v); }
TS_FN int64_t ts_clz(uint64_t v, int bits) { return v ? (int64_t)TS_CLZ64(v) - (64 - bits) : bits; }
TS_FN int64_t ts_ctz(uint64_t v, int bits) { return v ? TS_POPCOUNT64((v & (0 - v)) - 1) : bits; }
#define TS_MINMAX(T, S) \\
  TS_FN T ts_min_##S(T a, T b) { return (a < b || a != a) ? a : b; } \\
  TS_FN T ts_max_##S(T a, T b) { return (a > b || a != a) ? a : b; }
TS_MINMAX(float, f32)
TS_MINMAX(int32_t, i32)
TS_MINMAX(int64_t, i64)
TS_MINMAX(int8_t, bool)
TS_FN int32_t ts_abs_i32(int32_t a) { return a < 0 ? -a : a; }
TS_FN int64_t ts_abs_i64(int64_t a) { return a < 0 ? -a : a; }
TS_FN float ts_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }
"""
_DOUBLE_HELPERS = """TS_MINMAX(double, f64)
TS_FN double ts_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }
"""


_OPENCL_VECTOR_TYPES = {"f32": "float", "f64": "double", "i8": "char", "u8": "uchar", "i16": "short", "u16": "ushort",
                        "i32": "int", "u32": "uint", "i64": "long", "u64": "ulong"}
_LANES = (2, 4, 8, 16)
_COMPONENTS = "0123456789abcdef"


def _opencl_vectors() -> tuple[str, frozenset[str]]:
    """OpenCL C for the vector helpers the expression printer calls (``ts_vload_f32x4`` ...), with the
    names it defines: the runtime header's semantics over OpenCL's built-in vector types."""
    lines, names = [], set()
    for suffix, scalar in _OPENCL_VECTOR_TYPES.items():
        for n in _LANES:
            v, t = f"{suffix}x{n}", f"{scalar}{n}"
            lanes = [f"(v).s{_COMPONENTS[k]}" for k in range(n)]
            nan = " || isnan(a)" if suffix.startswith("f") else ""
            lines += [f"typedef {t} ts_{v};",
                      f"#define ts_vload_{v}(p) vload{n}(0, p)",
                      f"#define ts_vstore_{v}(p, x) vstore{n}(x, 0, p)",
                      f"#define ts_vbcast_{v}(x) (({t})(x))",
                      f"#define ts_vsel_{v}(c, a, b) select(b, a, c)",
                      f"#define ts_vmin_{v}(a, b) select(b, a, (a) < (b){nan})",
                      f"#define ts_vmax_{v}(a, b) select(b, a, (a) > (b){nan})",
                      f"#define ts_hadd_{v}(v) ({' + '.join(lanes)})",
                      f"#define ts_hmul_{v}(v) ({' * '.join(lanes)})"]
            names |= {f"ts_{h}_{v}" for h in ("vload", "vstore", "vbcast", "vsel", "vmin", "vmax", "hadd", "hmul")}
            if not suffix.startswith("f"):
                ramp = ", ".join(str(k) for k in range(n))
                lines.append(f"#define ts_vramp_{v}(b) (({t})(b) + ({t})({ramp}))")
                names.add(f"ts_vramp_{v}")
    return "\n".join(lines) + "\n", frozenset(names)


_OPENCL_VECTOR_PRELUDE, OPENCL_VECTOR_HELPERS = _opencl_vectors()


@dataclass(frozen=True)
class Dialect:
    """How one GPU language spells what the kernels need."""

    name: str
    kernel: str                 # what precedes a kernel's name in its definition
    pointer: str                # qualifier of a buffer argument's elements
    restrict: str
    shared: str                 # qualifier of a shared-memory array
    barrier: str
    index: dict[str, str]       # GPU index tag -> its expression; blockDim/threadDim.d: the launch's sizes
    prelude: str
    double_prelude: str         # what float64 needs first
    vector_helpers: frozenset[str] = frozenset()   # the vector helpers its prelude defines (none: scalar code)


OPENCL = Dialect("opencl", "__kernel void", "__global ", "restrict", "__local ", "barrier(CLK_LOCAL_MEM_FENCE);",
                 {f"{k}.{d}": f"get_{fn}({i})" for k, fn in (("blockIdx", "group_id"), ("threadIdx", "local_id"),
                                                            ("blockDim", "num_groups"), ("threadDim", "local_size"))
                  for i, d in enumerate("xyz")},
                 _OPENCL_TYPES + _OPENCL_FLOAT_FUNCTIONS + _OPENCL_VECTOR_PRELUDE,
                 "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n", OPENCL_VECTOR_HELPERS)
CUDA = Dialect("cuda", 'extern "C" __global__ void', "", "__restrict__", "__shared__ ", "__syncthreads();",
               {**{f"{k}.{d}": f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz"},
                **{f"blockDim.{d}": f"gridDim.{d}" for d in "xyz"}, **{f"threadDim.{d}": f"blockDim.{d}" for d in "xyz"}},
               _CUDA_TYPES, "")
DIALECTS = {"opencl": OPENCL, "cuda": CUDA}


class OpenCLExpr(CExpr):
    """OpenCL C spellings of the vector expressions GCC's extensions write otherwise."""

    def visit_VCast(self, e: ir.VCast) -> str:
        base, lanes = ir.split_dtype(e.dtype)
        return f"convert_{_OPENCL_VECTOR_TYPES[dt.info(base).suffix]}{lanes}({self.text(e.value)})"

    def visit_Lane(self, e: ir.Lane) -> str:
        return f"({self.text(e.value)}).s{_COMPONENTS[e.index]}"


def prelude(dialect: Dialect, doubles: bool) -> str:
    """What a kernel source of ``dialect`` starts with; ``doubles``: whether it uses float64."""
    return (dialect.double_prelude if doubles else "") + dialect.prelude + _HELPERS + (_DOUBLE_HELPERS if doubles else "")
