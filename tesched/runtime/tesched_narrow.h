/* tesched runtime, narrow types: 8/16-bit integers, uint32, float16 and bfloat16.
 *
 * Included by tesched_runtime.h after its vector macros. Per integer type: min/max/abs and GCC vector
 * types of 2 to 64 bytes with their loads, stores, broadcasts and selects. float16 and bfloat16 live in
 * memory as their 16 bits (uint16_t) and are computed in float: ts_load_* widens exactly, ts_store_*
 * rounds to nearest even (NaN stays a quiet NaN), ts_round_* rounds a float to the type and back. The
 * vector forms (ts_vload_f16x16 ...) take and give float vectors. The dot products of u8 x s8 quadruples
 * and bf16 pairs into 32-bit lanes (AVX-512 VNNI vpdpbusd, AVX-512 BF16 vdpbf16ps) have portable forms
 * used when the instruction set is not enabled. Nothing here depends on Python.
 */
#ifndef TESCHED_NARROW_H
#define TESCHED_NARROW_H

#if defined(__x86_64__) && (defined(__F16C__) || defined(__AVX512F__))
#include <immintrin.h>
#endif

#define TS_MINMAX_ABS(T, S, ABS)                                                         \
  static inline T ts_min_##S(T a, T b) { return a < b ? a : b; }                         \
  static inline T ts_max_##S(T a, T b) { return a > b ? a : b; }                         \
  static inline T ts_abs_##S(T a) { return ABS; }
TS_MINMAX_ABS(int8_t, i8, (int8_t)(a < 0 ? -a : a))
TS_MINMAX_ABS(int16_t, i16, (int16_t)(a < 0 ? -a : a))
TS_MINMAX_ABS(uint8_t, u8, a)
TS_MINMAX_ABS(uint16_t, u16, a)
TS_MINMAX_ABS(uint32_t, u32, a)
#undef TS_MINMAX_ABS

/* vector types: every power-of-two lane count from 2 up to 64 bytes (the masks first: ops use them) */
#define TS_NARROW_TYPES(T, S)                                                                          \
  TS_VECTOR_TYPE(T, S, 2) TS_VECTOR_TYPE(T, S, 4) TS_VECTOR_TYPE(T, S, 8) TS_VECTOR_TYPE(T, S, 16)
#define TS_NARROW_OPS(T, S, M)                                                                         \
  TS_VECTOR_OPS(T, S, 2, M) TS_VECTOR_OPS(T, S, 4, M) TS_VECTOR_OPS(T, S, 8, M) TS_VECTOR_OPS(T, S, 16, M)
TS_NARROW_TYPES(int8_t, i8) TS_VECTOR_TYPE(int8_t, i8, 32) TS_VECTOR_TYPE(int8_t, i8, 64)
TS_NARROW_TYPES(uint8_t, u8) TS_VECTOR_TYPE(uint8_t, u8, 32) TS_VECTOR_TYPE(uint8_t, u8, 64)
TS_NARROW_TYPES(int16_t, i16) TS_VECTOR_TYPE(int16_t, i16, 32)
TS_NARROW_TYPES(uint16_t, u16) TS_VECTOR_TYPE(uint16_t, u16, 32)
TS_NARROW_TYPES(uint32_t, u32)
TS_VECTOR_TYPE(int32_t, i32, 2) TS_VECTOR_TYPE(float, f32, 2)
TS_NARROW_OPS(int8_t, i8, i8) TS_VECTOR_OPS(int8_t, i8, 32, i8) TS_VECTOR_OPS(int8_t, i8, 64, i8)
TS_NARROW_OPS(uint8_t, u8, i8) TS_VECTOR_OPS(uint8_t, u8, 32, i8) TS_VECTOR_OPS(uint8_t, u8, 64, i8)
TS_NARROW_OPS(int16_t, i16, i16) TS_VECTOR_OPS(int16_t, i16, 32, i16)
TS_NARROW_OPS(uint16_t, u16, i16) TS_VECTOR_OPS(uint16_t, u16, 32, i16)
TS_NARROW_OPS(uint32_t, u32, i32)
TS_VECTOR_OPS(int32_t, i32, 2, i32) TS_VECTOR_OPS(float, f32, 2, i32)
#undef TS_NARROW_TYPES
#undef TS_NARROW_OPS

/* ---- saturating narrowing (saturate_cast of int32 / int16 lanes): ts_vsat_<source>_<target> ---- */
#define TS_VSAT(S, N, T, TS, LOW, HIGH)                                                                \
  static inline ts_##TS##x##N ts_vsat_##S##x##N##_##TS(ts_##S##x##N v) {                               \
    return __builtin_convertvector(ts_vmin_##S##x##N(ts_vmax_##S##x##N(v, ts_vbcast_##S##x##N(LOW)),   \
                                                     ts_vbcast_##S##x##N(HIGH)), ts_##TS##x##N);       \
  }
#define TS_VSATS32(N)                                                                                 \
  TS_VSAT(i32, N, int8_t, i8, -128, 127) TS_VSAT(i32, N, uint8_t, u8, 0, 255)                          \
  TS_VSAT(i32, N, int16_t, i16, -32768, 32767) TS_VSAT(i32, N, uint16_t, u16, 0, 65535)
#define TS_VSATS16(N) TS_VSAT(i16, N, int8_t, i8, -128, 127) TS_VSAT(i16, N, uint8_t, u8, 0, 255)
TS_VSATS32(2) TS_VSATS32(4) TS_VSATS32(8)
TS_VSATS16(2) TS_VSATS16(4) TS_VSATS16(8) TS_VSATS16(16)
#if defined(__AVX512BW__)
/* AVX-512 packs with signed (vpmovs*) or unsigned (vpmovus*, after max with 0) saturation */
#define TS_VSAT512(S, N, TS, PACK, MAX0)                                                              \
  static inline ts_##TS##x##N ts_vsat_##S##x##N##_##TS(ts_##S##x##N v) {                               \
    return (ts_##TS##x##N)PACK((__m512i)MAX0((__m512i)v));                                            \
  }
#define TS_KEEP(x) (x)
#define TS_MAX0_32(x) _mm512_max_epi32((x), _mm512_setzero_si512())
#define TS_MAX0_16(x) _mm512_max_epi16((x), _mm512_setzero_si512())
TS_VSAT512(i32, 16, i8, _mm512_cvtsepi32_epi8, TS_KEEP) TS_VSAT512(i32, 16, u8, _mm512_cvtusepi32_epi8, TS_MAX0_32)
TS_VSAT512(i32, 16, i16, _mm512_cvtsepi32_epi16, TS_KEEP)
TS_VSAT512(i32, 16, u16, _mm512_cvtusepi32_epi16, TS_MAX0_32)
TS_VSAT512(i16, 32, i8, _mm512_cvtsepi16_epi8, TS_KEEP) TS_VSAT512(i16, 32, u8, _mm512_cvtusepi16_epi8, TS_MAX0_16)
#undef TS_VSAT512
#undef TS_KEEP
#undef TS_MAX0_32
#undef TS_MAX0_16
#else
TS_VSATS32(16) TS_VSATS16(32)
#endif
#undef TS_VSATS32
#undef TS_VSATS16
#undef TS_VSAT

/* ---- float16 and bfloat16 scalars ---- */
static inline uint32_t ts_f32_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }
static inline float ts_f32_from_bits(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }

/* float -> float16 bits, round to nearest even, by integer arithmetic (exact for every input) */
static inline uint16_t ts_f16_bits_soft(float f) {
  uint32_t x = ts_f32_bits(f), a = x & 0x7fffffffu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  if (a > 0x7f800000u) return sign | 0x7e00u;                     /* NaN */
  if (a >= 0x477ff000u) return sign | 0x7c00u;                    /* >= 65520 rounds to infinity */
  if (a >= 0x38800000u) {                                          /* a normal float16 (>= 2^-14) */
    a -= 0x38000000u;                                              /* exponent bias 127 -> 15 */
    return sign | (uint16_t)((a + 0xfffu + ((a >> 13) & 1u)) >> 13);
  }
  if (a <= 0x33000000u) return sign;                               /* <= 2^-25 rounds to zero */
  uint32_t shift = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u;  /* a subnormal float16 */
  uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return sign | (uint16_t)(q + (rest > half || (rest == half && (q & 1u))));
}

static inline float ts_f16_value_soft(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return ts_f32_from_bits(sign | 0x7f800000u | (m << 13));
  if (e) return ts_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
  float v = (float)m * 0x1p-24f;
  return sign ? -v : v;
}

#if defined(__F16C__)
static inline uint16_t ts_store_f16(float f) { return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
static inline float ts_load_f16(uint16_t h) { return _cvtsh_ss(h); }
#else
static inline uint16_t ts_store_f16(float f) { return ts_f16_bits_soft(f); }
static inline float ts_load_f16(uint16_t h) { return ts_f16_value_soft(h); }
#endif

static inline uint16_t ts_store_bf16(float f) {
  uint32_t x = ts_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);   /* NaN stays quiet */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
static inline float ts_load_bf16(uint16_t h) { return ts_f32_from_bits((uint32_t)h << 16); }

static inline float ts_round_f16(float f) { return ts_load_f16(ts_store_f16(f)); }
static inline float ts_round_bf16(float f) { return ts_load_bf16(ts_store_bf16(f)); }

/* double -> a float type with p significand bits and smallest normal exponent emin in one rounding, as
 * NumPy converts float64 to float16 (ml_dtypes converts float64 to bfloat16 through float: ts_round_bf16) */
static inline double ts_round_f64_to(double x, int p, int emin, int emax) {
  if (!isfinite(x) || x == 0.0) return x;
  int e;
  frexp(x, &e);
  int unit = (e > emin + 1 ? e : emin + 1) - p;
  double r = ldexp(nearbyint(ldexp(x, -unit)), unit);
  return fabs(r) >= ldexp(1.0, emax + 1) ? copysign(INFINITY, x) : r;
}
static inline float ts_round_f16_f64(double x) { return (float)ts_round_f64_to(x, 11, -14, 15); }

/* ---- float16 and bfloat16 vectors: float lanes in registers, 16 bits in memory ---- */
#define TS_HALF_VECTORS(S, N)                                                                         \
  static inline ts_f32x##N ts_vload_##S##x##N(const uint16_t *p) {                                    \
    ts_f32x##N v;                                                                                     \
    for (int i = 0; i < N; i++) v[i] = ts_load_##S(p[i]);                                            \
    return v;                                                                                         \
  }                                                                                                   \
  static inline void ts_vstore_##S##x##N(uint16_t *p, ts_f32x##N v) {                                 \
    for (int i = 0; i < N; i++) p[i] = ts_store_##S(v[i]);                                           \
  }                                                                                                   \
  static inline ts_f32x##N ts_vround_##S##x##N(ts_f32x##N v) {                                        \
    for (int i = 0; i < N; i++) v[i] = ts_round_##S(v[i]);                                           \
    return v;                                                                                         \
  }
TS_HALF_VECTORS(f16, 2) TS_HALF_VECTORS(f16, 4) TS_HALF_VECTORS(f16, 8) TS_HALF_VECTORS(f16, 16)
#undef TS_HALF_VECTORS

/* bfloat16 vectors by integer lane arithmetic (gcc keeps them in SIMD registers) */
#define TS_BF16_VECTORS(N)                                                                            \
  static inline ts_f32x##N ts_vload_bf16x##N(const uint16_t *p) {                                     \
    ts_u32x##N w = __builtin_convertvector(ts_vload_u16x##N(p), ts_u32x##N) << 16;                    \
    ts_f32x##N v;                                                                                     \
    memcpy(&v, &w, sizeof v);                                                                         \
    return v;                                                                                         \
  }                                                                                                   \
  static inline ts_u32x##N ts_bf16_bits_##N(ts_f32x##N v) {                                           \
    ts_u32x##N x;                                                                                     \
    memcpy(&x, &v, sizeof x);                                                                         \
    ts_u32x##N rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;                                      \
    ts_u32x##N quiet = (x >> 16) | 0x40u;                                                             \
    return (ts_u32x##N)ts_vsel_u32x##N((x & 0x7fffffffu) > 0x7f800000u, quiet, rounded);              \
  }                                                                                                   \
  static inline void ts_vstore_bf16x##N(uint16_t *p, ts_f32x##N v) {                                  \
    ts_vstore_u16x##N(p, __builtin_convertvector(ts_bf16_bits_##N(v), ts_u16x##N));                   \
  }                                                                                                   \
  static inline ts_f32x##N ts_vround_bf16x##N(ts_f32x##N v) {                                         \
    ts_u32x##N w = ts_bf16_bits_##N(v) << 16;                                                         \
    memcpy(&v, &w, sizeof v);                                                                         \
    return v;                                                                                         \
  }
TS_BF16_VECTORS(2) TS_BF16_VECTORS(4) TS_BF16_VECTORS(8) TS_BF16_VECTORS(16)
#undef TS_BF16_VECTORS

#include "tesched_dot.h"

#endif
