"""Tests of tesched.driver.manifest: the build record of an exported library (what it holds and what it
was built for) survives JSON; a host lacking one of its CPU features, or a record of another module ABI,
is refused with a message naming the library and the cause."""
import json
from pathlib import Path

import pytest

import tesched as ts
from tesched.driver import manifest
from tesched.driver.manifest import BuildRecord, check_host, content_hash

LIBRARY = Path("lib.so")


def record(target: str = "x86-64-avx2") -> BuildRecord:
    return BuildRecord.for_target("kernel", "k", "k", ts.Target(target), "gcc 12", "ab" * 32, {"signature": {}})


def test_for_target_records_the_targets_features_and_flags():
    r = record()
    assert r.features == ("avx", "avx2", "f16c", "fma", "sse4_2") and r.vector_bytes == 32
    assert "-march=x86-64-v3" in r.flags and r.abi == manifest.EXPORT_ABI and r.tesched_version == ts.__version__


def test_json_round_trip():
    r = record("x86-64-avx512+avx512_vnni")
    assert BuildRecord.from_json(r.to_json(), LIBRARY) == r
    assert json.loads(r.to_json())["format"] == "tesched-module"


@pytest.mark.parametrize("host, missing", [
    ({"sse4_2", "avx", "fma", "f16c"}, "avx2; this CPU lacks it"),
    ({"sse4_2"}, "avx, avx2, f16c, fma; this CPU lacks them"),
])
def test_a_host_lacking_features_is_refused(host, missing):
    with pytest.raises(ts.ModuleLoadError, match=f"lib.so: kernel k was compiled for target x86-64-avx2, which "
                                                 f"uses {missing}"):
        check_host(record(), LIBRARY, frozenset(host))


def test_a_host_with_the_features_or_unknown_features_passes():
    check_host(record(), LIBRARY, frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f"}))
    check_host(record(), LIBRARY, frozenset())      # unreadable: the entry point checks the CPU itself
    check_host(record("c"), LIBRARY, frozenset({"sse2"}))


def test_another_abi_or_a_malformed_record_is_refused():
    text = record().to_json().replace(f'"abi":{manifest.EXPORT_ABI}', '"abi":99')
    with pytest.raises(ts.ModuleLoadError, match="with module ABI 99; this tesched .* loads module ABI"):
        BuildRecord.from_json(text, LIBRARY)
    with pytest.raises(ts.ModuleLoadError, match="build record is malformed"):
        BuildRecord.from_json(f'{{"format": "tesched-module", "abi": {manifest.EXPORT_ABI}}}', LIBRARY)
    with pytest.raises(ts.ModuleLoadError, match="build record is malformed"):
        BuildRecord.from_json("not json", LIBRARY)


def test_content_hash_separates_its_parts():
    assert content_hash(["ab", "c"]) != content_hash(["a", "bc"]) and len(content_hash([b"x"])) == 64
