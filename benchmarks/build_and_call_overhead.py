"""What building and calling a kernel costs, apart from the kernel's own work.

Prints, for a tiny kernel (``C = A + B`` on 4 float32 elements):

- cold build: lower + generate C + compile, with a fresh, empty ``TESCHED_CACHE_DIR``;
- cached build in the same process: the same kernel declared and built again (lowering runs again,
  the compiled module is reused, the compiler does not run);
- cached build in a new process: a fresh Python process builds the same kernel from the disk cache
  (timed inside that process: declaring and building, and apart, the imports of this script);
- per-call overhead: median time of one call of the built kernel (inputs and output given), over many
  calls, next to ``np.add(a, b, out=c)`` on the same arrays, and the call that allocates its output.

Run:  python benchmarks/build_and_call_overhead.py [--calls N]
"""
import time

IMPORT_START = time.perf_counter()
import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402

import tesched as ts  # noqa: E402
from tesched.driver.timing import time_calls  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - IMPORT_START


def build_tiny_kernel():
    """Declare, schedule and build the 4-element add; return the kernel and the seconds it took."""
    start = time.perf_counter()
    A = ts.placeholder((4,), name="A")
    B = ts.placeholder((4,), name="B")
    C = ts.compute((4,), lambda i: A[i] + B[i], name="C")
    kernel = ts.build(ts.create_schedule(C.op), [A, B, C], name="add4")
    return kernel, time.perf_counter() - start


def per_call_seconds(call, calls: int, rounds: int = 15) -> float:
    """Median over ``rounds`` of the mean time of one call in a batch of ``calls`` calls."""
    return time_calls(call, repeat=rounds, number=calls).median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per timed batch (default 20000)")
    parser.add_argument("--build-only", action="store_true",
                        help="build the kernel once and print the times as JSON (used for the new process)")
    args = parser.parse_args()
    if args.build_only:
        kernel, seconds = build_tiny_kernel()
        print(json.dumps({"import": IMPORT_SECONDS, "build": seconds, "compiled": kernel.compiled}))
        return

    with tempfile.TemporaryDirectory(prefix="tesched-bench-") as cache:
        os.environ["TESCHED_CACHE_DIR"] = cache
        kernel, cold = build_tiny_kernel()
        assert kernel.compiled, "a build with an empty cache must compile"
        again, warm_same = build_tiny_kernel()
        assert not again.compiled, "a second build of the same kernel must not call the compiler"
        child = subprocess.run([sys.executable, __file__, "--build-only"], capture_output=True, text=True,
                               check=True, env=dict(os.environ))
        fresh = json.loads(child.stdout.strip().splitlines()[-1])
        assert not fresh["compiled"], "a new process must find the kernel in the disk cache"

    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    c = np.empty(4, dtype=np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b)
    call_in_place = per_call_seconds(lambda: kernel(a, b, c), args.calls)
    call_allocating = per_call_seconds(lambda: kernel(a, b), args.calls)
    numpy_add = per_call_seconds(lambda: np.add(a, b, out=c), args.calls)

    print(f"tesched {ts.__version__}, Python {sys.version.split()[0]}, NumPy {np.__version__}")
    print("build of a 4-element add kernel:")
    print(f"  cold (empty cache, compiler runs)          {cold * 1e3:9.1f} ms")
    print(f"  cached, same process                       {warm_same * 1e3:9.1f} ms")
    print(f"  cached, new process: ts.build              {fresh['build'] * 1e3:9.1f} ms")
    print(f"  cached, new process: imports (numpy, tesched) {fresh['import'] * 1e3:6.1f} ms")
    print(f"per call (median of 15 batches of {args.calls} calls):")
    print(f"  kernel(a, b, c)                            {call_in_place * 1e6:9.2f} us")
    print(f"  kernel(a, b) (allocates c)                 {call_allocating * 1e6:9.2f} us")
    print(f"  np.add(a, b, out=c)                        {numpy_add * 1e6:9.2f} us")
    print(f"  kernel overhead over np.add                {(call_in_place - numpy_add) * 1e6:9.2f} us")


if __name__ == "__main__":
    main()
