"""The index from fused groups to their kernels' C: a graph built again in a fresh process state reuses it
without lowering, computes the same results, lowers a group only when its loop IR is read, and treats a
damaged entry as missing."""
import numpy as np
import pytest

import tesched as ts
from tesched import graph as G
from tesched.graph import kernel_index, lower
from tesched.graph.kernel_index import RecalledKernel

from .helpers import ATOL, RTOL, vgg_block, vgg_reference

pytestmark = pytest.mark.usefixtures("isolated_cache")


def built_fresh(monkeypatch, f, params):
    """``G.build`` as a new process would: no kernel remembered in memory."""
    monkeypatch.setattr(lower, "_KERNELS", {})
    return G.build(f, params)


def test_a_graph_built_again_reads_its_kernels_c_without_lowering(monkeypatch, rand):
    f, params = vgg_block(channels=3, out_channels=5, size=7)
    x = rand((1, 3, 7, 7), low=-1)
    lowered = []
    original = lower._lower_default
    monkeypatch.setattr(lower, "_lower_default", lambda fn: lowered.append(fn.name) or original(fn))
    first = built_fresh(monkeypatch, f, params)
    assert lowered and not any(isinstance(g.kernel, RecalledKernel) for g in first.kernels)
    count = len(lowered)
    again = built_fresh(monkeypatch, f, params)
    assert len(lowered) == count                                             # nothing lowered
    assert all(isinstance(g.kernel, RecalledKernel) and not g.kernel.compiled for g in again.kernels)
    np.testing.assert_allclose(again(x), vgg_reference(x, params), rtol=RTOL, atol=ATOL)
    assert [g.kernel.c_source for g in again.kernels] == [g.kernel.c_source for g in first.kernels]
    group = again.kernels[0]
    assert group.lowered.name == first.kernels[0].lowered.name and len(lowered) == count + 1   # read: lowered


def test_a_damaged_entry_is_rebuilt_and_written_again(monkeypatch, rand):
    f, params = vgg_block(channels=2, out_channels=3, size=5)
    before = set(ts.driver.cache.cache_dir().glob("group-*.json"))
    built_fresh(monkeypatch, f, params)
    entries = sorted(set(ts.driver.cache.cache_dir().glob("group-*.json")) - before)    # this graph's
    assert entries
    for path in entries:
        path.write_text("{not json")
    exe = built_fresh(monkeypatch, f, params)
    x = rand((1, 2, 5, 5), low=-1)
    np.testing.assert_allclose(exe(x), vgg_reference(x, params), rtol=RTOL, atol=ATOL)
    assert not any(isinstance(g.kernel, RecalledKernel) for g in exe.kernels)
    assert all(kernel_index.recall(p.stem[len("group-"):]) is not None for p in entries)


def test_clearing_the_cache_removes_the_entries(monkeypatch, tmp_path):
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path))
    (tmp_path / "group-0123.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("not tesched's")
    assert ts.driver.cache.clear() == 1 and [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_the_key_changes_with_the_group_target_and_code(monkeypatch):
    host, avx2 = ts.Target("host"), ts.Target("x86-64-avx2")
    key = kernel_index.group_key("default:None:relu", host)
    assert key == kernel_index.group_key("default:None:relu", host)
    assert key != kernel_index.group_key("default:None:exp", host) != kernel_index.group_key("default:None:relu", avx2)
    monkeypatch.setattr(kernel_index, "code_fingerprint", lambda: "another version of tesched")
    assert kernel_index.group_key("default:None:relu", host) != key
