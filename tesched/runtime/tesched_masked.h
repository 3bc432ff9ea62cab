/* tesched runtime, masked vector loads: ts_vloadm_<type>x<lanes>(p, at, m) reads p[at + i] in the lanes i
 * whose mask m[i] is set (-1) and gives 0 in the others (0), for 32- and 64-bit elements.
 *
 * The lanes off the mask may lie outside the buffer (padding: the first lane's element before it, the last
 * ones past it), so nothing reads them: AVX-512 (vmovups with a mask register) and AVX2 (vmaskmov)
 * suppress the faults of masked-off elements; elsewhere each lane reads either its element or a zero
 * constant, the address chosen without a branch. The buffer and the offset are passed apart and lane
 * addresses are computed as integers, so no pointer outside the buffer is formed either (and none is
 * dereferenced). Included by tesched_runtime.h after the vector types (tesched_narrow.h
 * declares the 8-byte ones). Nothing here depends on Python.
 */
#ifndef TESCHED_MASKED_H
#define TESCHED_MASKED_H

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>
#endif

/* The address of p[at] as an integer computation: it may lie outside the buffer (only read under a mask). */
static inline const void *ts_lane_address(const void *p, int64_t at, size_t size) {
  return (const void *)((uintptr_t)p + (uintptr_t)at * (uintptr_t)size);
}

/* Lane i reads p[at + i] where m[i] is -1, the constant 0 at *zero where it is 0: the address is picked with
   bit operations (a branch on a random mask mispredicts half the time). */
static inline uintptr_t ts_lane_pick(const void *p, int64_t at, size_t size, int64_t m, const void *zero) {
  uintptr_t mask = (uintptr_t)m;
  return ((uintptr_t)ts_lane_address(p, at, size) & mask) | ((uintptr_t)zero & ~mask);
}

#define TS_VLOADM_PORTABLE(T, S, N, M)                                                                  \
  static inline ts_##S##x##N ts_vloadm_##S##x##N(const T *p, int64_t at, ts_##M##x##N m) {              \
    static const T zero = 0;                                                                            \
    ts_##S##x##N v;                                                                                     \
    for (int i = 0; i < N; i++) v[i] = *(const T *)ts_lane_pick(p, at + i, sizeof(T), m[i], &zero);   \
    return v;                                                                                           \
  }

/* one instruction: W is the intrinsics' width prefix ("", 256, 512), V the integer vector type of that width,
   E the element bits, SUF the intrinsics' element suffix */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512VL__)
#define TS_VLOADM_X86(T, S, N, M, W, V, E, SUF)                                                         \
  static inline ts_##S##x##N ts_vloadm_##S##x##N(const T *p, int64_t at, ts_##M##x##N m) {              \
    return (ts_##S##x##N)_mm##W##_maskz_loadu_##SUF(_mm##W##_test_epi##E##_mask((V)m, (V)m),            \
                                                   ts_lane_address(p, at, sizeof(T)));                  \
  }
#define TS_VLOADM_512(T, S, N, M, E, SUF) TS_VLOADM_X86(T, S, N, M, 512, __m512i, E, SUF)
#elif defined(__x86_64__) && defined(__AVX2__)
#define TS_VLOADM_X86(T, S, N, M, W, V, E, SUF)                                                         \
  static inline ts_##S##x##N ts_vloadm_##S##x##N(const T *p, int64_t at, ts_##M##x##N m) {              \
    return (ts_##S##x##N)_mm##W##_maskload_##SUF(ts_lane_address(p, at, sizeof(T)), (V)m);              \
  }
#define TS_VLOADM_512(T, S, N, M, E, SUF) TS_VLOADM_PORTABLE(T, S, N, M)
#else
#define TS_VLOADM_X86(T, S, N, M, W, V, E, SUF) TS_VLOADM_PORTABLE(T, S, N, M)
#define TS_VLOADM_512(T, S, N, M, E, SUF) TS_VLOADM_PORTABLE(T, S, N, M)
#endif

#define TS_VLOADMS(T, S, M, N1, N2, N3, E, SUF)                                                        \
  TS_VLOADM_X86(T, S, N1, M, , __m128i, E, SUF) TS_VLOADM_X86(T, S, N2, M, 256, __m256i, E, SUF)       \
  TS_VLOADM_512(T, S, N3, M, E, SUF)
TS_VLOADM_PORTABLE(float, f32, 2, i32)
TS_VLOADM_PORTABLE(int32_t, i32, 2, i32)
TS_VLOADMS(float, f32, i32, 4, 8, 16, 32, ps)
TS_VLOADMS(int32_t, i32, i32, 4, 8, 16, 32, epi32)
TS_VLOADMS(double, f64, i64, 2, 4, 8, 64, pd)
TS_VLOADMS(int64_t, i64, i64, 2, 4, 8, 64, epi64)
#undef TS_VLOADMS
#undef TS_VLOADM_X86
#undef TS_VLOADM_512
#undef TS_VLOADM_PORTABLE

#endif
