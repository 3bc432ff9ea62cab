"""Programs of kernel calls: the C pass that checks buffers and calls kernels, through Kernel and directly."""
import threading

import numpy as np
import pytest

import tesched as ts
from tesched.driver.call import ArgSpec, Program, StepFailed, address


@pytest.fixture(scope="module")
def add_kernel():
    a, b = ts.placeholder((3, 4), name="A"), ts.placeholder((3, 4), name="B")
    c = ts.compute((3, 4), lambda i, j: a[i, j] + b[i, j], name="C")
    return ts.build(ts.create_schedule(c.op), [a, b, c], name="add34")


def test_a_program_checks_every_argument_before_calling(add_kernel):
    specs = [ArgSpec(np.dtype("float32"), (3, 4), k == 2, k) for k in range(3)]
    program = Program(specs, [0, 0, 0], [(add_kernel.address, [0, 1, 2])])
    a, b, c = (np.full((3, 4), v, np.float32) for v in (1, 2, 0))
    assert program.run((a, b, c)) is True
    np.testing.assert_array_equal(c, 3)
    readonly = c.copy()
    readonly.setflags(write=False)
    bad = [(a.astype(np.float64), b, c), (a[:, :2], b, c), (a, b, c.T), (a, b, a), (a, b), (a, b, readonly),
           (a, b, "c"), (a, b, c[:, ::2])]
    for args in bad:
        before = c.copy()
        assert program.run(args) is False
        np.testing.assert_array_equal(c, before)


def test_fixed_slots_and_words_make_a_prepared_call(add_kernel):
    a, b, c = (np.full((3, 4), v, np.float32) for v in (1, 5, 0))
    program = Program([], [address(a), address(b), address(c)], [(add_kernel.address, [0, 1, 2])], keep=(a, b, c))
    program.runner()()
    np.testing.assert_array_equal(c, 6)


def test_an_exclusive_program_refuses_a_second_thread(add_kernel):
    n = 1 << 22
    x = ts.placeholder((n,), name="x")
    y = ts.compute((n,), lambda i: ts.exp(ts.exp(x[i])), name="y")
    slow = ts.build(ts.create_schedule(y.op), [x, y], name="exp_exp_4m")
    data, out = np.zeros(n, np.float32), np.empty(n, np.float32)
    program = Program([], [address(data), address(out)], [(slow.address, [0, 1])] * 40, exclusive=True,
                      keep=(data, out))
    errors = []

    def second():
        try:
            program.run(())
        except RuntimeError as err:
            errors.append(str(err))

    thread = threading.Thread(target=program.run, args=((),))
    thread.start()
    other = threading.Thread(target=second)
    other.start()
    thread.join()
    other.join()
    assert not errors or "already running in another thread" in errors[0]
    np.testing.assert_allclose(out, np.exp(np.exp(np.float32(0))), rtol=1e-6)


def test_symbolic_sizes_are_bound_from_the_buffers():
    n = ts.var("n")
    a = ts.placeholder((n,), name="A")
    b = ts.compute((n,), lambda i: a[i] * 2.0, name="B")
    kernel = ts.build(ts.create_schedule(b.op), [a, b], name="twice_n")
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), 2 * x)
    out = np.empty(5, np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(ValueError, match="dimension 0 is 4, but size n is 5"):
        kernel(x, np.empty(4, np.float32))


def test_a_step_reporting_a_failure_stops_the_program(tmp_path):
    """A step that returns a nonzero status raises StepFailed naming it; the steps after it do not run."""
    import importlib.util

    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int count_or_fail(void *const *); int count(void *const *);")
    ffi.set_source("_status_steps", "#include <stdint.h>\n"
                   "int count_or_fail(void *const *a) { int64_t *n = a[0]; n[1] += 1; return n[1] >= 2 ? 7 : 0; }\n"
                   "int count(void *const *a) { int64_t *n = a[0]; n[0] += 100; return 0; }\n")
    spec = importlib.util.spec_from_file_location("_status_steps", ffi.compile(tmpdir=str(tmp_path)))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lib = module.lib
    fail = int(module.ffi.cast("uintptr_t", module.ffi.addressof(lib, "count_or_fail")))
    plain = int(module.ffi.cast("uintptr_t", module.ffi.addressof(lib, "count")))
    n = np.zeros(2, np.int64)
    program = Program([], [address(n)], [(plain, [0]), (fail, [0]), (fail, [0]), (plain, [0])], keep=n)
    with pytest.raises(StepFailed) as failure:
        program.runner()()
    assert (failure.value.step, failure.value.status) == (2, 7)
    assert list(n) == [100, 2]      # the plain step, then two counting steps, not the last one


@pytest.mark.parametrize("count", [1, 17, 25, 70])
def test_kernels_take_any_number_of_arguments_and_sizes(count):
    """No argument limit: ``count`` inputs, each of its own symbolic length, summed into one output; called
    plainly, prepared, and as one step of a program (the C call path passes every kernel one array)."""
    sizes = [ts.var(f"n{k}") for k in range(count)]
    inputs = [ts.placeholder((n, 3), name=f"x{k}") for k, n in enumerate(sizes)]
    total = ts.compute((3,), lambda i: sum((x[n - 1, i] * float(k + 1) for k, (x, n) in enumerate(zip(inputs, sizes))),
                                           ts.const(0.0)), name="total")
    kernel = ts.build(ts.create_schedule(total.op), [*inputs, total], name=f"sum_of_{count}")
    rng = np.random.default_rng(count)
    arrays = [rng.standard_normal((1 + k % 5, 3)).astype(np.float32) for k in range(count)]
    expected = sum((a[-1].astype(np.float64) * (k + 1) for k, a in enumerate(arrays)), np.zeros(3))
    np.testing.assert_allclose(kernel(*arrays), expected, rtol=1e-5, atol=1e-5)
    out = np.empty(3, np.float32)
    kernel.prepare(*arrays, out)()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=f"x{count - 1}"):
        kernel(*arrays[:-1], np.zeros(2, np.float64))
