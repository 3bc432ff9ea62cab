"""Low-precision workloads: narrow integer and bfloat16 kernels against their float32 and library peers.

Four workloads, each a group of variants timed interleaved round-robin in one process
(:func:`tesched.driver.timing.time_interleaved`: a busy pause before each block, the order turning
every round); every variant's result is checked before it is timed. Printed per variant: the median and
the minimum microseconds per call over the rounds, the spread (interquartile range of the rounds over the
median, from the raw samples) and the ratio of the group's reference median to the variant's median.

1. Halide's 3x3 box blur of a uint16 2048x2048 image (uint16 arithmetic, wrapping, as Halide's app):
   tesched (tiles of 32 x 256 outputs, bands of tiles in parallel, blur_x computed per tile, 32 x uint16
   vectors) vs NumPy slicing, and a
   hand-scheduled Halide blur (Halide's own CPU schedule of apps/blur) when ``halide`` is installed.
2. int8 GEMM 1024 (uint8 x int8 -> int32, weights packed ahead of time as fbgemm does): tesched
   ``dense_packed`` for the host (AMX ``TDPBUSD`` tiles where the CPU and the OS allow it) and for
   ``x86-64-avx512+avx512_vnni+avx512_bf16`` (VNNI dot products, no AMX), tesched's float32 GEMM
   (``nn.matmul``), tesched ``qdense`` with its requantize epilogue (both ways), and PyTorch's
   ``torch.ao.nn.quantized.Linear`` (fbgemm, uint8 output) when torch is installed.
3. bfloat16 GEMM 1024 with float32 accumulation: tesched ``dense_packed`` on bfloat16 for the host (AMX
   ``TDPBF16PS`` tiles where allowed), for the same target without AMX (vdpbf16ps) and for ``x86-64-avx512``
   (the portable form, float32 FMAs on widened pairs), tesched's float32 GEMM, and ``torch.matmul`` on
   bfloat16 tensors.
4. qconv2d 3x3 64->64 on 56x56 (NHWC uint8 in, requantize + relu fused, uint8 out) vs tesched's float32
   conv2d + bias + relu (NCHW, default schedule, fused).

Run:  OMP_WAIT_POLICY=passive python benchmarks/low_precision.py [--rounds 30] [--threads 2] [--quick]
      [--only blur int8 bf16 qconv]
(``--quick``: small sizes, a smoke test; ``--only``: some of the workloads.)
"""
import argparse
import os


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed rounds per workload (default 30)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every library (default 2)")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--only", nargs="+", choices=["blur", "int8", "bf16", "qconv"],
                        help="run only these workloads (default: all)")
    return parser.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # before NumPy's BLAS and the OpenMP runtime start their threads
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TESCHED_NUM_THREADS",
                     "HL_NUM_THREADS"):
        os.environ[variable] = str(ARGS.threads)

import statistics  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

import tesched as ts  # noqa: E402
from tesched import nn  # noqa: E402
from tesched.intrin import amx_usable, os_permits_amx  # noqa: E402
from tesched.nn import quantized_ref  # noqa: E402
from tesched.driver.timing import SETTLE_SECONDS, calls_per_block, round_robin  # noqa: E402

RNG = np.random.default_rng(0)
NO_AMX = "x86-64-avx512+avx512_vnni+avx512_bf16"
"""This CPU's dot-product instructions without AMX: the kernels AMX is compared with."""


def optional(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None


def time_group(variants: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds per call of every variant, one sample per round, interleaved (the order turns each round)."""
    calls = {label: calls_per_block(call) for label, call in variants.items()}
    # busy settling before each block: the previous library's threads wind down
    samples = round_robin(variants, rounds, calls, rotate=True, settle=SETTLE_SECONDS, wake=True)
    return {label: s.wall for label, s in samples.items()}


def report(title: str, samples: dict[str, list[float]], reference: str, work: float, unit: str) -> None:
    print(f"\n{title}  (ratio = {reference} median / variant median)")
    base = statistics.median(samples[reference])
    for label, times in samples.items():
        median = statistics.median(times)
        q = statistics.quantiles(times, n=4)
        rate = f"{work / median / 1e9:8.1f} {unit}" if work else ""
        print(f"  {label:34s} {median * 1e6:10.1f} us  (min {min(times) * 1e6:9.1f}, spread "
              f"{(q[2] - q[0]) / median * 100:4.1f}%)  {rate}  ratio {base / median:6.2f}x")


def compare(samples: dict[str, list[float]], fast: str, slow: str) -> None:
    """One more ratio of medians, ``slow`` over ``fast``, when both were timed."""
    if fast in samples and slow in samples:
        ratio = statistics.median(samples[slow]) / statistics.median(samples[fast])
        print(f"  {fast} vs {slow}: {ratio:.2f}x")


def amx_label(data_dtype: str, weight_dtype: str) -> str:
    return "AMX" if amx_usable(data_dtype, weight_dtype, "host") else "no AMX here"


# 1. blur ---------------------------------------------------------------------------------------------
def blur(size: int, rounds: int) -> None:
    inp = ts.placeholder((size + 2, size + 2), "uint16", name="input")
    bx = ts.compute((size + 2, size), lambda y, x: (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) // 3, name="blur_x")
    by = ts.compute((size, size), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) // 3, name="blur_y")
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    yo, xo, yi, xi = s[by].tile(y, x, min(32, size), min(256, size))
    s[by].vectorize(xi)
    s[by].parallel(yo)
    s[bx].compute_at(s[by], xo)          # 34 x 256 uint16 of blur_x per tile: stays in L1
    s[bx].vectorize(s[bx].op.axis[1])
    kernel = ts.build(s, [inp, by], name="blur_u16")
    image = RNG.integers(0, 20000, (size + 2, size + 2)).astype(np.uint16)

    def numpy_blur() -> np.ndarray:
        b = (image[:, :-2] + image[:, 1:-1] + image[:, 2:]) // 3
        return (b[:-2] + b[1:-1] + b[2:]) // 3

    expected = numpy_blur()
    out = np.empty((size, size), np.uint16)
    kernel(image, out)
    np.testing.assert_array_equal(out, expected)
    variants = {"NumPy": numpy_blur, "tesched": kernel.prepare(image, out)}
    halide = halide_blur(image, size, expected)
    if halide is not None:
        variants["Halide 21 (hand-scheduled)"] = halide
    report(f"uint16 3x3 blur {size}x{size}", time_group(variants, rounds), "NumPy", 0, "")


def halide_blur(image: np.ndarray, size: int, expected: np.ndarray) -> Callable[[], object] | None:
    """Halide's apps/blur pipeline and CPU schedule, JIT-compiled; None when halide is missing."""
    hl = optional("halide")
    if hl is None:
        print("  (halide not installed: pip install halide==21.0.0 to compare)")
        return None
    source = hl.Buffer(image)           # numpy [y, x] -> Halide (x, y)
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.Func("input")
    inp[x, y] = source[x, y]
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) / 3
    vector = hl.get_host_target().natural_vector_size(hl.UInt(16))
    blur_y.split(y, y, yi, 8).parallel(y).vectorize(x, vector)
    blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, vector)
    blur_y.compile_jit()
    out = hl.Buffer(hl.UInt(16), [size, size])
    blur_y.realize(out)
    np.testing.assert_array_equal(np.asarray(out), expected)
    return lambda: blur_y.realize(out)


# 2. int8 GEMM ----------------------------------------------------------------------------------------
def float_gemm(n: int) -> Callable[[], object]:
    a_t, b_t = ts.placeholder((n, n), name="A"), ts.placeholder((n, n), name="B")
    c_t = nn.matmul(a_t, b_t)
    kernel = ts.build(nn.default_schedule(c_t), [a_t, b_t, c_t], name="gemm_f32")
    a, b = RNG.standard_normal((n, n)).astype(np.float32), RNG.standard_normal((n, n)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    return kernel.prepare(a, b)


def int8_gemm(n: int, rounds: int) -> None:
    x_t = ts.placeholder((n, n), "uint8", name="x")
    w_t = ts.placeholder((n // 4, n, 4), "int8", name="w")
    acc_t = nn.dense_packed(x_t, w_t)
    x = RNG.integers(0, 256, (n, n)).astype(np.uint8)
    w = RNG.integers(-127, 128, (n, n)).astype(np.int8)
    packed = nn.pack_dense_weight(w)
    variants = {"tesched float32 GEMM": float_gemm(n)}
    amx = f"tesched int8 GEMM, {amx_label('uint8', 'int8')}"
    for label, target in ((amx, "host"), ("tesched int8 GEMM, VNNI", NO_AMX)):
        with ts.Target(target):
            gemm = ts.build(nn.default_schedule(acc_t), [x_t, w_t, acc_t], name="gemm_u8s8")
        np.testing.assert_array_equal(gemm(x, packed), quantized_ref.dense(x, w))
        variants[label] = gemm.prepare(x, packed)

    x_scale, x_zp, out_scale, out_zp = 0.02, 128, 4.0, 3
    w_scales = RNG.uniform(0.001, 0.01, n)
    bias = RNG.standard_normal(n).astype(np.float32)
    packed, offset, multiplier = nn.quantized_dense_params(w, w_scales, bias, x_scale, x_zp, out_scale)
    o_t, m_t = ts.placeholder((n,), "int32", name="offset"), ts.placeholder((n,), "float32", name="multiplier")
    out_t = nn.qdense(x_t, w_t, o_t, m_t, out_zp, "uint8")
    expected = quantized_ref.requantize(quantized_ref.dense(x, w), multiplier, out_zp, "uint8", offset)
    qdense_amx = f"tesched qdense (u8 out), {amx_label('uint8', 'int8')}"
    for label, target in ((qdense_amx, "host"), ("tesched qdense (u8 out), VNNI", NO_AMX)):
        with ts.Target(target):
            qdense = ts.build(nn.default_schedule(out_t), [x_t, w_t, o_t, m_t, out_t], name="qdense")
        np.testing.assert_array_equal(qdense(x, packed, offset, multiplier), expected)
        variants[label] = qdense.prepare(x, packed, offset, multiplier)
    torch = optional("torch")
    if torch is not None:
        variants["torch.ao quantized Linear (fbgemm)"] = torch_qlinear(torch, x, w, w_scales, bias, x_scale, x_zp,
                                                                        out_scale, out_zp, expected)
    samples = time_group(variants, rounds)
    report(f"int8 GEMM {n} (u8 x s8 -> s32)", samples, "tesched float32 GEMM", 2.0 * n ** 3, "GOP/s")
    compare(samples, amx, "tesched int8 GEMM, VNNI")
    compare(samples, qdense_amx, "torch.ao quantized Linear (fbgemm)")


def torch_qlinear(torch, x, w, w_scales, bias, x_scale, x_zp, out_scale, out_zp, expected):
    torch.set_num_threads(ARGS.threads if ARGS else 2)
    torch.backends.quantized.engine = "fbgemm"
    n, k = w.shape
    linear = torch.ao.nn.quantized.Linear(k, n, dtype=torch.qint8)
    qw = torch._make_per_channel_quantized_tensor(torch.from_numpy(w.astype(np.int8)),
                                                  torch.from_numpy(w_scales), torch.zeros(n, dtype=torch.long), 0)
    linear.set_weight_bias(qw, torch.from_numpy(bias))
    linear.scale, linear.zero_point = out_scale, out_zp
    qx = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), x_scale, x_zp)
    got = linear(qx).int_repr().numpy()
    mismatch = np.abs(got.astype(np.int32) - expected) > 1
    print(f"  torch qlinear vs tesched qdense: {mismatch.mean() * 100:.3f}% of outputs differ by more than 1")
    return lambda: linear(qx)


# 3. bfloat16 GEMM ------------------------------------------------------------------------------------
def bf16_gemm(n: int, rounds: int) -> None:
    ml_dtypes = optional("ml_dtypes")
    if ml_dtypes is None:
        print("\nbfloat16 GEMM skipped: pip install tesched[bf16]")
        return
    x_t = ts.placeholder((n, n), "bfloat16", name="x")
    w_t = ts.placeholder((n // 2, n, 2), "bfloat16", name="w")
    acc_t = nn.dense_packed(x_t, w_t)
    x = RNG.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    w = RNG.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    packed = nn.pack_dense_weight(w)
    exact = quantized_ref.dense(x, w)
    variants = {"tesched float32 GEMM": float_gemm(n)}
    amx = f"tesched bfloat16 GEMM, {amx_label('bfloat16', 'bfloat16')}"
    # x86-64-avx512: the same kernel without vdpbf16ps (shifts, masks and FMAs)
    for label, target in ((amx, "host"), ("tesched bfloat16 GEMM, vdpbf16ps", NO_AMX),
                          ("tesched bfloat16 GEMM, portable form", "x86-64-avx512")):
        with ts.Target(target):
            gemm = ts.build(nn.default_schedule(acc_t), [x_t, w_t, acc_t], name="gemm_bf16")
        np.testing.assert_allclose(gemm(x, packed), exact, rtol=1e-3, atol=1e-4 * np.sqrt(n))
        variants[label] = gemm.prepare(x, packed)
    torch = optional("torch")
    if torch is not None:
        tx = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
        tw = torch.from_numpy(np.ascontiguousarray(w.T).view(np.int16)).view(torch.bfloat16)
        np.testing.assert_allclose(torch.matmul(tx, tw).float().numpy(), exact, rtol=2e-2, atol=2e-2 * np.sqrt(n))
        variants["torch.matmul bfloat16"] = lambda: torch.matmul(tx, tw)
    samples = time_group(variants, rounds)
    report(f"bfloat16 GEMM {n} (f32 accumulate)", samples, "tesched float32 GEMM", 2.0 * n ** 3, "GFLOP/s")
    compare(samples, amx, "tesched bfloat16 GEMM, vdpbf16ps")
    compare(samples, amx, "torch.matmul bfloat16")


# 4. qconv2d ------------------------------------------------------------------------------------------
def qconv(channels: int, size: int, rounds: int) -> None:
    x = RNG.integers(0, 256, (1, size, size, channels)).astype(np.uint8)
    w = RNG.integers(-127, 128, (channels, channels, 3, 3)).astype(np.int8)
    packed, offset, multiplier = nn.quantized_conv_params(w, RNG.uniform(0.001, 0.01, channels),
                                                          RNG.standard_normal(channels), 0.02, 128, 0.5)
    x_t = ts.placeholder(x.shape, "uint8", name="x")
    w_t = ts.placeholder(packed.shape, "int8", name="w")
    o_t, m_t = ts.placeholder((channels,), "int32", name="offset"), ts.placeholder((channels,), name="multiplier")
    out_t = nn.qconv2d(x_t, w_t, o_t, m_t, 3, "uint8", relu=True, padding=1, data_zero_point=128)
    qconv2d = ts.build(nn.default_schedule(out_t), [x_t, w_t, o_t, m_t, out_t], name="qconv2d")
    acc = quantized_ref.conv2d_nhwc(x, w, padding=(1, 1), pad_value=128)
    np.testing.assert_array_equal(qconv2d(x, packed, offset, multiplier),
                                  quantized_ref.requantize(acc, multiplier, 3, "uint8", offset, relu=True))

    xf_t = ts.placeholder((1, channels, size, size), name="xf")
    wf_t, bf_t = ts.placeholder((channels, channels, 3, 3), name="wf"), ts.placeholder((channels,), name="bias")
    of_t = nn.relu(nn.bias_add(nn.conv2d(xf_t, wf_t, padding=1), bf_t, axis=1))
    fconv = ts.build(nn.default_schedule(of_t), [xf_t, wf_t, bf_t, of_t], name="conv_f32")
    xf, wf = np.ascontiguousarray(x.transpose(0, 3, 1, 2), np.float32) - 128, w.astype(np.float32)
    bias = RNG.standard_normal(channels).astype(np.float32)
    expected = np.maximum(acc.transpose(0, 3, 1, 2) - 128 * wf.sum(axis=(1, 2, 3))[None, :, None, None]
                          + bias[None, :, None, None], 0)
    np.testing.assert_allclose(fconv(xf, wf, bias), expected, rtol=1e-4, atol=1e-2)
    variants = {"tesched float32 conv+bias+relu": fconv.prepare(xf, wf, bias),
                "tesched qconv2d+requantize+relu": qconv2d.prepare(x, packed, offset, multiplier)}
    report(f"qconv2d 3x3 {channels}->{channels} {size}x{size}", time_group(variants, rounds),
           "tesched float32 conv+bias+relu", 2.0 * channels * channels * 9 * size * size, "GOP/s")


def main() -> None:
    ts.set_num_threads(ARGS.threads)
    features = ts.Target("host").features & {"avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"}
    print(f"tesched {ts.__version__}, host features {sorted(features)}, OS grants AMX: {os_permits_amx()}, "
          f"{ARGS.threads} threads, {ARGS.rounds} rounds")
    rounds = 3 if ARGS.quick else ARGS.rounds
    workloads = {"blur": lambda: blur(256 if ARGS.quick else 2048, rounds),
                 "int8": lambda: int8_gemm(128 if ARGS.quick else 1024, rounds),
                 "bf16": lambda: bf16_gemm(128 if ARGS.quick else 1024, rounds),
                 "qconv": lambda: qconv(64, 14 if ARGS.quick else 56, rounds)}
    for name, run in workloads.items():
        if not ARGS.only or name in ARGS.only:
            run()


if __name__ == "__main__":
    main()
