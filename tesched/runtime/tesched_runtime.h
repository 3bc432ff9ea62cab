/* tesched runtime: helpers that generated kernels include.
 *
 * Floor division and modulo with Python semantics, min/max/abs per type, sigmoid, and aligned heap
 * allocation for buffers too large for the stack. Everything is static inline so gcc can vectorize
 * through it. Nothing here depends on Python.
 */
#ifndef TESCHED_RUNTIME_H
#define TESCHED_RUNTIME_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TS_ALIGN 64

/* Integer // and % with Python's floor semantics. A zero divisor gives 0 (as NumPy, without a trap) and
 * dividing the smallest integer by -1 wraps instead of trapping. */
static inline int64_t ts_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t ts_floormod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* A data-dependent index checked against its extent: outside [0, extent) it records the failure's code in
 * the kernel's status (any thread may, hence atomic) and reads element 0 instead, so no access leaves the
 * buffer; the caller raises the error the code names once the kernel returns. */
static inline int64_t ts_check_index(int64_t i, int64_t extent, int *status, int code) {
  if (__builtin_expect(i < 0 || i >= extent, 0)) {
    __atomic_store_n(status, code, __ATOMIC_RELAXED);
    return 0;
  }
  return i;
}

/* Integer fmod (C's truncated remainder, NumPy's fmod): a zero divisor gives 0, as does -1 (no trap). */
static inline int64_t ts_fmod(int64_t a, int64_t b) {
  return (b == 0 || b == -1) ? 0 : a % b;
}

/* Shifts with NumPy's semantics for any amount: a << b is 0 and a >> b is 0 or -1 (the sign) when b is
 * negative or at least the operand's width; a left shift never overflows a signed type (done unsigned). */
static inline int64_t ts_shl(int64_t a, int64_t b, int bits) {
  return ((uint64_t)b < (uint64_t)bits) ? (int64_t)((uint64_t)a << b) : 0;
}

static inline int64_t ts_shr(int64_t a, int64_t b, int bits) {
  return ((uint64_t)b < (uint64_t)bits) ? (a >> b) : (a < 0 ? -1 : 0);
}

/* min/max propagate NaN as NumPy's minimum/maximum do: a NaN operand gives NaN (a != a only for NaN;
 * for integers it is always false and compiles away). */
#define TS_MINMAX(T, S)                                                                  \
  static inline T ts_min_##S(T a, T b) { return (a < b || a != a) ? a : b; }             \
  static inline T ts_max_##S(T a, T b) { return (a > b || a != a) ? a : b; }
TS_MINMAX(float, f32)
TS_MINMAX(double, f64)
TS_MINMAX(int32_t, i32)
TS_MINMAX(int64_t, i64)
TS_MINMAX(int8_t, bool)
#undef TS_MINMAX

static inline int32_t ts_abs_i32(int32_t a) { return a < 0 ? -a : a; }
static inline int64_t ts_abs_i64(int64_t a) { return a < 0 ? -a : a; }
/* Bit counts of the low `bits` bits of v (the value's own width); 0 has `bits` leading and trailing zeros. */
static inline int64_t ts_popcount(uint64_t v, int bits) { (void)bits; return __builtin_popcountll(v); }
static inline int64_t ts_clz(uint64_t v, int bits) { return v ? __builtin_clzll(v) - (64 - bits) : bits; }
static inline int64_t ts_ctz(uint64_t v, int bits) { return v ? __builtin_ctzll(v) : bits; }
static inline float ts_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline double ts_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Element counts of heap buffers: a * b, or -1 if either is negative or the product overflows int64
 * (then the allocation fails cleanly: the kernel returns an error code, never aborts). */
static inline int64_t ts_mul_checked(int64_t a, int64_t b) {
  int64_t out;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out)) return -1;
  return out;
}

/* An aligned block of count elements of elem bytes, or NULL (count < 0, byte count overflow, no memory). */
static inline void *ts_alloc_elems(size_t elem, int64_t count) {
  if (count < 0 || (uint64_t)count > (SIZE_MAX - TS_ALIGN) / elem) return NULL;
  size_t bytes = (size_t)count * elem;
  size_t rounded = (bytes + TS_ALIGN - 1) / TS_ALIGN * TS_ALIGN;
  return aligned_alloc(TS_ALIGN, rounded ? rounded : TS_ALIGN);
}

static inline void ts_free(void *p) { free(p); }

/* The pointer p as any memory: the compiler forgets which array it points into (see codegen/c.py). */
#define TS_OPAQUE(p) __asm__("" : "+r"(p))

/* A function whose selects or ifs branch on data is compiled without gcc's loop if-conversion: GCC 12.2
   vectorizes a group of reads under such conditions with the wrong part of the mask for all but the first
   vector (see codegen/data_conditions.py). Its SLP vectorizer also miscompiled such a function without
   AVX-512: an any() over a comparison came out all false (tests/graph/test_ops_logic.py under
   TESCHED_TARGET=c, x86-64 or x86-64-avx2), so it is off in these functions too. Other compilers get
   nothing. */
#if defined(__GNUC__) && !defined(__clang__)
#define TS_NO_IF_CONVERT __attribute__((optimize("no-tree-loop-if-convert", "no-tree-slp-vectorize")))
#else
#define TS_NO_IF_CONVERT
#endif

/* SIMD: GCC vector types ts_<type>x<lanes>, unaligned (strided) loads, stores, broadcasts and lane-wise
   selects; ramps (x, x + 1, ...) for loop variables used as values. Masked loads: tesched_masked.h. */
#define TS_VECTOR_TYPE(T, S, N) typedef T ts_##S##x##N __attribute__((vector_size(sizeof(T) * N)));
#define TS_VECTOR_OPS(T, S, N, M)                                                                      \
  static inline ts_##S##x##N ts_vload_##S##x##N(const T *p) {                                           \
    ts_##S##x##N v;                                                                                     \
    memcpy(&v, p, sizeof v);                                                                            \
    return v;                                                                                           \
  }                                                                                                     \
  static inline void ts_vstore_##S##x##N(T *p, ts_##S##x##N v) { memcpy(p, &v, sizeof v); }            \
  static inline ts_##S##x##N ts_vloads_##S##x##N(const T *p, int64_t stride) {                          \
    ts_##S##x##N v;                                                                                     \
    for (int i = 0; i < N; i++) v[i] = p[i * stride];                                                   \
    return v;                                                                                           \
  }                                                                                                     \
  static inline ts_##S##x##N ts_vbcast_##S##x##N(T x) { return x - (ts_##S##x##N){}; }                  \
  static inline ts_##S##x##N ts_vramp_##S##x##N(T x) { /* a broadcast plus constant lanes */          \
    ts_##S##x##N v;                                                                                     \
    for (int i = 0; i < N; i++) v[i] = (T)i;                                                            \
    return ts_vbcast_##S##x##N(x) + v;                                                                  \
  }                                                                                                     \
  static inline ts_##S##x##N ts_vsel_##S##x##N(ts_##M##x##N m, ts_##S##x##N a, ts_##S##x##N b) {        \
    return (ts_##S##x##N)((m & (ts_##M##x##N)a) | (~m & (ts_##M##x##N)b));                              \
  }                                                                                                     \
  static inline ts_##S##x##N ts_vmax_##S##x##N(ts_##S##x##N a, ts_##S##x##N b) {                        \
    return ts_vsel_##S##x##N((a > b) | (a != a), a, b);                                                 \
  }                                                                                                     \
  static inline ts_##S##x##N ts_vmin_##S##x##N(ts_##S##x##N a, ts_##S##x##N b) {                        \
    return ts_vsel_##S##x##N((a < b) | (a != a), a, b);                                                 \
  }                                                                                                     \
  static inline T ts_hadd_##S##x##N(ts_##S##x##N v) {                                                   \
    T s = v[0];                                                                                         \
    for (int i = 1; i < N; i++) s += v[i];                                                              \
    return s;                                                                                           \
  }                                                                                                     \
  static inline T ts_hmul_##S##x##N(ts_##S##x##N v) {                                                   \
    T s = v[0];                                                                                         \
    for (int i = 1; i < N; i++) s *= v[i];                                                              \
    return s;                                                                                           \
  }                                                                                                     \
  static inline T ts_hmax_##S##x##N(ts_##S##x##N v) {                                                   \
    T s = v[0];                                                                                         \
    for (int i = 1; i < N; i++) s = (v[i] > s || v[i] != v[i]) ? v[i] : s;                              \
    return s;                                                                                           \
  }                                                                                                     \
  static inline T ts_hmin_##S##x##N(ts_##S##x##N v) {                                                   \
    T s = v[0];                                                                                         \
    for (int i = 1; i < N; i++) s = (v[i] < s || v[i] != v[i]) ? v[i] : s;                              \
    return s;                                                                                           \
  }
#define TS_VECTORS(T, S, M, N1, N2, N3)                                                                \
  TS_VECTOR_TYPE(T, S, N1) TS_VECTOR_TYPE(T, S, N2) TS_VECTOR_TYPE(T, S, N3)
#define TS_VECTORS_OPS(T, S, M, N1, N2, N3)                                                            \
  TS_VECTOR_OPS(T, S, N1, M) TS_VECTOR_OPS(T, S, N2, M) TS_VECTOR_OPS(T, S, N3, M)
TS_VECTORS(int32_t, i32, i32, 4, 8, 16)
TS_VECTORS(int64_t, i64, i64, 2, 4, 8)
TS_VECTORS(float, f32, i32, 4, 8, 16)
TS_VECTORS(double, f64, i64, 2, 4, 8)
TS_VECTORS_OPS(int32_t, i32, i32, 4, 8, 16)
TS_VECTORS_OPS(int64_t, i64, i64, 2, 4, 8)
TS_VECTORS_OPS(float, f32, i32, 4, 8, 16)
TS_VECTORS_OPS(double, f64, i64, 2, 4, 8)
/* Gathers: each lane read at its own int32 element offset (a lookup at computed indices); gcc picks the
   instructions (masked broadcasts or a hardware gather). */
#define TS_GATHER(T, S, N)                                                                             \
  static inline ts_##S##x##N ts_vgather_##S##x##N(const T *p, ts_i32x##N idx) {                         \
    ts_##S##x##N v;                                                                                     \
    for (int i = 0; i < N; i++) v[i] = p[idx[i]];                                                       \
    return v;                                                                                           \
  }
TS_GATHER(float, f32, 4) TS_GATHER(float, f32, 8) TS_GATHER(float, f32, 16)
TS_GATHER(int32_t, i32, 4) TS_GATHER(int32_t, i32, 8) TS_GATHER(int32_t, i32, 16)
TS_GATHER(double, f64, 4) TS_GATHER(double, f64, 8)
TS_GATHER(int64_t, i64, 4) TS_GATHER(int64_t, i64, 8)
#undef TS_GATHER
/* exp of float32 lanes: Cephes' expf (range reduction by ln 2 in two parts, a degree-5 polynomial, the
   exponent added to the bits; within 2 ulp of expf), and expf lane by lane when a lane is outside
   [-87, 88] or NaN, so that overflow, underflow, denormals and NaN are expf's. */
#define TS_VEXP(N)                                                                                     \
  static inline ts_f32x##N ts_exp_f32x##N(ts_f32x##N x) {                                               \
    ts_i32x##N odd = (x < -87.0f) | (x > 88.0f) | (x != x);                                             \
    int32_t any = 0;                                                                                    \
    for (int i = 0; i < N; i++) any |= odd[i];                                                          \
    if (__builtin_expect(any != 0, 0)) {                                                                \
      ts_f32x##N v;                                                                                     \
      for (int i = 0; i < N; i++) v[i] = expf(x[i]);                                                    \
      return v;                                                                                         \
    }                                                                                                   \
    ts_f32x##N t = x * 1.44269504088896341f + 0.5f;                                                     \
    ts_i32x##N n = __builtin_convertvector(t, ts_i32x##N);                                              \
    ts_f32x##N fn = __builtin_convertvector(n, ts_f32x##N);                                             \
    ts_i32x##N above = fn > t;                      /* truncated up (t < 0): floor is one less */        \
    n = n + above;                                                                                      \
    fn = fn + __builtin_convertvector(above, ts_f32x##N);                                               \
    ts_f32x##N r = x - fn * 0.693359375f + fn * 2.12194440e-4f;                                         \
    ts_f32x##N p = 1.9875691500e-4f * r + 1.3981999507e-3f;                                             \
    p = p * r + 8.3334519073e-3f;                                                                       \
    p = p * r + 4.1665795894e-2f;                                                                       \
    p = p * r + 1.6666665459e-1f;                                                                       \
    p = p * r + 5.0000001201e-1f;                                                                       \
    p = p * (r * r) + r + 1.0f;                                                                         \
    return p * (ts_f32x##N)((n + 127) << 23);                                                           \
  }
TS_VEXP(4) TS_VEXP(8) TS_VEXP(16)
#undef TS_VEXP
#include "tesched_narrow.h"
#include "tesched_masked.h"
#undef TS_VECTORS
#undef TS_VECTORS_OPS
#undef TS_VECTOR_TYPE
#undef TS_VECTOR_OPS

#endif
