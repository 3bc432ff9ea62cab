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
    program = Program(specs, [0, 0, 0], [(add_kernel.address, [0, 1, 2], True)])
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
    program = Program([], [address(a), address(b), address(c)], [(add_kernel.address, [0, 1, 2], True)], keep=(a, b, c))
    program.runner()()
    np.testing.assert_array_equal(c, 6)


def test_an_exclusive_program_refuses_a_second_thread(add_kernel):
    n = 1 << 22
    x = ts.placeholder((n,), name="x")
    y = ts.compute((n,), lambda i: ts.exp(ts.exp(x[i])), name="y")
    slow = ts.build(ts.create_schedule(y.op), [x, y], name="exp_exp_4m")
    data, out = np.zeros(n, np.float32), np.empty(n, np.float32)
    program = Program([], [address(data), address(out)], [(slow.address, [0, 1], True)] * 40, exclusive=True,
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
    """A step that returns a nonzero status raises StepFailed naming it; the steps after it do not run;
    a step declared without a status is never read as failing."""
    import importlib.util

    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int count_or_fail(int64_t *); void count(int64_t *);")
    ffi.set_source("_status_steps", "#include <stdint.h>\n"
                   "int count_or_fail(int64_t *n) { n[1] += 1; return n[1] >= 2 ? 7 : 0; }\n"
                   "void count(int64_t *n) { n[0] += 100; }\n")
    spec = importlib.util.spec_from_file_location("_status_steps", ffi.compile(tmpdir=str(tmp_path)))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lib = module.lib
    fail = int(module.ffi.cast("uintptr_t", module.ffi.addressof(lib, "count_or_fail")))
    plain = int(module.ffi.cast("uintptr_t", module.ffi.addressof(lib, "count")))
    n = np.zeros(2, np.int64)
    program = Program([], [address(n)], [(plain, [0], False), (fail, [0], True), (fail, [0], True),
                                         (plain, [0], False)], keep=n)
    with pytest.raises(StepFailed) as failure:
        program.runner()()
    assert (failure.value.step, failure.value.status) == (2, 7)
    assert list(n) == [100, 2]      # the plain step, then two counting steps, not the last one
