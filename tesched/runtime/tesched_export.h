/* tesched export runtime: helpers of the entry points of an exported library.
 *
 * Included by exactly one translation unit per exported library (its entry points), which is compiled
 * without the target's instruction-set flags so that its checks run on any CPU of the architecture:
 * the error message of the last failed call (one per thread), byte counts with overflow checks, overlap
 * of two buffers, and a simple checksum of constants. The generated kernels do not include it, and
 * nothing here depends on Python.
 */
#ifndef TESCHED_EXPORT_H
#define TESCHED_EXPORT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TS_PUBLIC __attribute__((visibility("default")))
#define TS_HIDDEN __attribute__((visibility("hidden")))

/* The message of the last call that failed in this thread ("" after a call that succeeded). */
static _Thread_local char ts_message[1024];

/* Record a message (printf-style) and return code, so that an entry point can `return ts_fail(...)`. */
static int ts_fail(int code, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int ts_fail(int code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(ts_message, sizeof ts_message, format, args);
  va_end(args);
  return code;
}

/* elem * dims[0] * ... * dims[n - 1], or -1 if a dimension is negative or the product overflows int64. */
static int64_t ts_bytes(int64_t elem, int n, const int64_t *dims) {
  int64_t total = elem;
  for (int k = 0; k < n; k++)
    if (dims[k] < 0 || __builtin_mul_overflow(total, dims[k], &total)) return -1;
  return total;
}

/* Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte. */
static int ts_overlap(const void *a, int64_t a_bytes, const void *b, int64_t b_bytes) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return a_bytes > 0 && b_bytes > 0 && x < y + (uint64_t)b_bytes && y < x + (uint64_t)a_bytes;
}

/* A checksum of n bytes (n a multiple of 8): the sum of the 64-bit words, and the sum of each word times
 * its position (from 1), both modulo 2^64, mixed. The exporter computes the same with NumPy. */
static uint64_t ts_checksum(const unsigned char *data, uint64_t n) {
  uint64_t plain = 0, weighted = 0;
  for (uint64_t k = 0; k < n / 8; k++) {
    uint64_t word;
    memcpy(&word, data + 8 * k, 8);
    plain += word;
    weighted += word * (k + 1);
  }
  return plain ^ (weighted * UINT64_C(0x9E3779B97F4A7C15));
}

#endif
