"""``import tesched`` loads the DSL core only: declaration and scheduling, not the lowering pipeline
(islpy), the driver (cffi) or the applications of the compiler, which load on first use."""
import json
import subprocess
import sys

CORE = ("tesched.te", "tesched.schedule")
SMALL = {"tesched", "tesched.config", "tesched.errors", "tesched.target", "tesched.version", "tesched.lower",
         "tesched.lower.hooks", "tesched.ir", "tesched.ir.kinds"}      # the loop kinds a schedule sets, not the IR


def _loaded(code: str) -> set:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_loads_only_the_dsl_core():
    modules = _loaded("import tesched")
    ours = {m for m in modules if m.startswith("tesched")}
    assert ours - SMALL <= {m for m in ours if m.startswith(CORE)}, sorted(ours - SMALL)
    assert len(ours) <= 60, len(ours)
    assert not {"islpy", "cffi", "torch", "matplotlib", "tqdm"} & modules


def test_the_rest_loads_on_first_use():
    modules = _loaded("import tesched as ts\nts.auto_schedule, ts.gradient, ts.lower, ts.load_module")
    assert {"tesched.autoschedule", "tesched.autodiff", "tesched.driver.load"} <= modules
    assert "islpy" in _loaded("import tesched as ts\nA = ts.placeholder((4,), name='A')\n"
                              "B = ts.compute((4,), lambda i: A[i] + 1.0, name='B')\n"
                              "print(ts.lower(ts.create_schedule(B.op), [A, B]))")


def test_loading_the_pipeline_keeps_the_facade_lower_a_function():
    code = ("import tesched as ts\nfrom tesched.lower import hooks, pipeline\n"
            "print(callable(ts.lower), ts.lower.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "tesched"]


def test_to_html_loads_the_viewer_on_the_first_page():
    assert "tesched.viz" not in _loaded("import tesched")
    assert "tesched.viz" in _loaded("from tesched.lower import hooks as h\n"
                                    "try:\n    h.write_page('kernel', object(), 'unused.html')\n"
                                    "except TypeError:\n    pass")
