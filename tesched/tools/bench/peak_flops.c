/* Peak FP32 fused multiply-add throughput of this machine.
 *
 * Each thread runs CHAINS independent chains acc = acc * m + c on SIMD registers as wide as the
 * compiler targets (-march=native: 64 bytes with AVX-512, 32 with AVX, else 16). With enough
 * independent chains the FMA units never wait for a result, so flops / time is the peak the cores
 * sustain. gcc contracts `acc * m + c` into one FMA instruction (-ffp-contract=fast, the GNU C default).
 *
 * Build:  gcc -O3 -march=native -fopenmp benchmarks/peak_flops.c -o peak_flops
 * Run:    ./peak_flops THREADS [ITERATIONS] [REPEATS]
 * Prints one JSON object: vector bytes, threads, and GFLOP/s of the fastest and the median repeat
 * (one FMA counts as two flops). On a machine shared with other processes, prefer many short repeats
 * (about a millisecond each: ITERATIONS = 500000 with AVX-512): the fastest ran undisturbed.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__AVX512F__)
#define VECTOR_BYTES 64
#elif defined(__AVX__)
#define VECTOR_BYTES 32
#else
#define VECTOR_BYTES 16
#endif
#define LANES (VECTOR_BYTES / 4)
#define CHAINS 16

typedef float vfloat __attribute__((vector_size(VECTOR_BYTES)));

/* CHAINS * LANES * iterations FMAs; returns a value derived from every chain so none is dropped. */
static float fma_chains(long iterations, float seed) {
    vfloat m = {0}, c = {0};
    for (int l = 0; l < LANES; l++) { m[l] = 0.999999f; c[l] = 1e-6f * seed; }
    vfloat a0 = c + 0.f, a1 = c + 1.f, a2 = c + 2.f, a3 = c + 3.f, a4 = c + 4.f, a5 = c + 5.f,
           a6 = c + 6.f, a7 = c + 7.f, a8 = c + 8.f, a9 = c + 9.f, a10 = c + 10.f, a11 = c + 11.f,
           a12 = c + 12.f, a13 = c + 13.f, a14 = c + 14.f, a15 = c + 15.f;
    for (long i = 0; i < iterations; i++) {
        a0 = a0 * m + c;   a1 = a1 * m + c;   a2 = a2 * m + c;   a3 = a3 * m + c;
        a4 = a4 * m + c;   a5 = a5 * m + c;   a6 = a6 * m + c;   a7 = a7 * m + c;
        a8 = a8 * m + c;   a9 = a9 * m + c;   a10 = a10 * m + c; a11 = a11 * m + c;
        a12 = a12 * m + c; a13 = a13 * m + c; a14 = a14 * m + c; a15 = a15 * m + c;
    }
    vfloat s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15;
    float total = 0.f;
    for (int l = 0; l < LANES; l++) total += s[l];
    return total;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    long iterations = argc > 2 ? atol(argv[2]) : 500000L;
    int repeats = argc > 3 ? atoi(argv[3]) : 200;
    if (threads < 1 || iterations < 1 || repeats < 1 || repeats > 1000) {
        fprintf(stderr, "usage: %s THREADS [ITERATIONS] [REPEATS]\n", argv[0]);
        return 2;
    }
    double gflops[1000];
    volatile float sink = 0.f;
    for (int r = 0; r < repeats; r++) {
        double start = omp_get_wtime();
        float partial = 0.f;
        #pragma omp parallel num_threads(threads) reduction(+ : partial)
        partial += fma_chains(iterations, 1.0f + omp_get_thread_num());
        double seconds = omp_get_wtime() - start;
        sink += partial;
        gflops[r] = 2.0 * CHAINS * LANES * (double)iterations * threads / seconds / 1e9;
    }
    qsort(gflops, repeats, sizeof gflops[0], compare);
    printf("{\"vector_bytes\": %d, \"threads\": %d, \"best_gflops\": %.2f, \"median_gflops\": %.2f, "
           "\"check\": %g}\n", VECTOR_BYTES, threads, gflops[repeats - 1], gflops[repeats / 2], (double)sink);
    return 0;
}
