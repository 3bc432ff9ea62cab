/* tesched runtime, narrow dot products (included by tesched_narrow.h).
 *
 * ts_<kind>_<layout>_<acc>x<N>(acc, a, b) adds to each of the N lanes of acc the dot product of G narrow
 * elements of a and b: layout "bv" reads a[0..G) for every lane (broadcast) and b[G*j .. G*j+G) for lane j,
 * "vb" the other way round. Kinds: dot4_u8s8 (uint8 x int8 -> int32), dot4_s8s8 (int8 x int8 -> int32),
 * dot2_bf16 (bfloat16 pairs -> float). The portable forms compute each lane in order, like the scalar code
 * (bfloat16 pairs with vector shifts, masks and multiply-adds);
 * ts_vnni_* use AVX-512 VNNI vpdpbusd (int8 x int8 with the offset trick (a + 128) * b - 128 * b) and
 * ts_bf16_* AVX-512 BF16 vdpbf16ps; they exist only when the compiler flags enable those instructions.
 */
#ifndef TESCHED_DOT_H
#define TESCHED_DOT_H

#define TS_DOT_PORTABLE(NAME, ACC, TA, TB, G, N, SA, SB, WIDEN)                                        \
  static inline ts_##ACC##x##N ts_##NAME##_##ACC##x##N(ts_##ACC##x##N acc, const TA *a, const TB *b) {  \
    for (int j = 0; j < N; j++)                                                                       \
      for (int t = 0; t < G; t++) acc[j] += WIDEN(a[SA * j + t]) * WIDEN(b[SB * j + t]);               \
    return acc;                                                                                       \
  }
#define TS_AS_I32(x) ((int32_t)(x))
#define TS_DOTS_PORTABLE(N)                                                                           \
  TS_DOT_PORTABLE(dot4_u8s8_bv, i32, uint8_t, int8_t, 4, N, 0, 4, TS_AS_I32)                           \
  TS_DOT_PORTABLE(dot4_u8s8_vb, i32, uint8_t, int8_t, 4, N, 4, 0, TS_AS_I32)                           \
  TS_DOT_PORTABLE(dot4_s8s8_bv, i32, int8_t, int8_t, 4, N, 0, 4, TS_AS_I32)                            \
  TS_DOT_PORTABLE(dot4_s8s8_vb, i32, int8_t, int8_t, 4, N, 4, 0, TS_AS_I32)
TS_DOTS_PORTABLE(4) TS_DOTS_PORTABLE(8) TS_DOTS_PORTABLE(16)
#undef TS_DOTS_PORTABLE
#undef TS_DOT_PORTABLE
#undef TS_AS_I32

static inline int32_t ts_word(const void *p) { int32_t w; memcpy(&w, p, 4); return w; }

/* bfloat16 pairs: each 32-bit lane of the packed operand holds an even (low half) and an odd (high half)
 * element; widened by shifts and masks, then two multiply-adds in the order of the scalar code */
#define TS_BF16_PORTABLE(N)                                                                           \
  static inline ts_f32x##N ts_bf16_pairs_##N(const uint16_t *p, ts_f32x##N *odd) {                     \
    ts_u32x##N w = ts_vload_u32x##N((const uint32_t *)p), lo = w << 16, hi = w & 0xffff0000u;        \
    ts_f32x##N even;                                                                                  \
    memcpy(&even, &lo, sizeof even);                                                                  \
    memcpy(odd, &hi, sizeof *odd);                                                                    \
    return even;                                                                                      \
  }                                                                                                   \
  static inline ts_f32x##N ts_dot2_bf16_bv_f32x##N(ts_f32x##N acc, const uint16_t *a, const uint16_t *b) { \
    ts_f32x##N odd, even = ts_bf16_pairs_##N(b, &odd);                                                \
    acc += ts_load_bf16(a[0]) * even;                                                                 \
    return acc + ts_load_bf16(a[1]) * odd;                                                            \
  }                                                                                                   \
  static inline ts_f32x##N ts_dot2_bf16_vb_f32x##N(ts_f32x##N acc, const uint16_t *a, const uint16_t *b) { \
    ts_f32x##N odd, even = ts_bf16_pairs_##N(a, &odd);                                                \
    acc += even * ts_load_bf16(b[0]);                                                                 \
    return acc + odd * ts_load_bf16(b[1]);                                                            \
  }
TS_BF16_PORTABLE(4) TS_BF16_PORTABLE(8) TS_BF16_PORTABLE(16)
#undef TS_BF16_PORTABLE

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
/* MM: the intrinsics' prefix for N lanes; VI: the integer vector type */
#define TS_VNNI(N, MM, VI)                                                                            \
  static inline ts_i32x##N ts_vnni_dpbusd_##N(ts_i32x##N acc, ts_i32x##N u, ts_i32x##N s) {           \
    return (ts_i32x##N)MM##_dpbusd_epi32((VI)acc, (VI)u, (VI)s);                                      \
  }                                                                                                   \
  static inline ts_i32x##N ts_vnni_dot4_u8s8_bv_i32x##N(ts_i32x##N acc, const uint8_t *a, const int8_t *b) { \
    return ts_vnni_dpbusd_##N(acc, ts_vbcast_i32x##N(ts_word(a)), ts_vload_i32x##N((const int32_t *)b)); \
  }                                                                                                   \
  static inline ts_i32x##N ts_vnni_dot4_u8s8_vb_i32x##N(ts_i32x##N acc, const uint8_t *a, const int8_t *b) { \
    return ts_vnni_dpbusd_##N(acc, ts_vload_i32x##N((const int32_t *)a), ts_vbcast_i32x##N(ts_word(b))); \
  }                                                                                                   \
  static inline ts_i32x##N ts_vnni_s8s8_##N(ts_i32x##N acc, ts_i32x##N a, ts_i32x##N b) {             \
    ts_i32x##N offset = ts_vbcast_i32x##N((int32_t)0x80808080u);                                      \
    return ts_vnni_dpbusd_##N(acc, a ^ offset, b) - ts_vnni_dpbusd_##N(acc - acc, offset, b);          \
  }                                                                                                   \
  static inline ts_i32x##N ts_vnni_dot4_s8s8_bv_i32x##N(ts_i32x##N acc, const int8_t *a, const int8_t *b) { \
    return ts_vnni_s8s8_##N(acc, ts_vbcast_i32x##N(ts_word(a)), ts_vload_i32x##N((const int32_t *)b)); \
  }                                                                                                   \
  static inline ts_i32x##N ts_vnni_dot4_s8s8_vb_i32x##N(ts_i32x##N acc, const int8_t *a, const int8_t *b) { \
    return ts_vnni_s8s8_##N(acc, ts_vload_i32x##N((const int32_t *)a), ts_vbcast_i32x##N(ts_word(b))); \
  }
TS_VNNI(4, _mm, __m128i) TS_VNNI(8, _mm256, __m256i) TS_VNNI(16, _mm512, __m512i)
#undef TS_VNNI
#endif

#if defined(__AVX512BF16__) && defined(__AVX512VL__)
/* MM: the intrinsics' prefix for N lanes; VF: the float vector type; VB: the bfloat16 pair vector type */
#define TS_BF16_DOT(N, MM, VF, VB)                                                                    \
  static inline ts_f32x##N ts_bf16_dot2_bf16_bv_f32x##N(ts_f32x##N acc, const uint16_t *a, const uint16_t *b) { \
    return (ts_f32x##N)MM##_dpbf16_ps((VF)acc, (VB)ts_vbcast_i32x##N(ts_word(a)),                       \
                                      (VB)ts_vload_i32x##N((const int32_t *)b));                     \
  }                                                                                                   \
  static inline ts_f32x##N ts_bf16_dot2_bf16_vb_f32x##N(ts_f32x##N acc, const uint16_t *a, const uint16_t *b) { \
    return (ts_f32x##N)MM##_dpbf16_ps((VF)acc, (VB)ts_vload_i32x##N((const int32_t *)a),               \
                                      (VB)ts_vbcast_i32x##N(ts_word(b)));                             \
  }
TS_BF16_DOT(4, _mm, __m128, __m128bh) TS_BF16_DOT(8, _mm256, __m256, __m256bh)
TS_BF16_DOT(16, _mm512, __m512, __m512bh)
#undef TS_BF16_DOT
#endif

#endif
