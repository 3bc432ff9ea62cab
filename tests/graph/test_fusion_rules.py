"""FusionRules: TVM's defaults, and changes a user makes."""
import pytest

from tesched import graph as G
from tesched.nn.pattern import Pattern


def test_defaults_follow_tvm():
    rules = G.FusionRules()
    assert rules.allows(Pattern.OUT_ELEMWISE_FUSABLE, Pattern.BROADCAST)
    assert not rules.allows(Pattern.OUT_ELEMWISE_FUSABLE, Pattern.INJECTIVE)
    assert not rules.allows(Pattern.OUT_ELEMWISE_FUSABLE, Pattern.OUT_ELEMWISE_FUSABLE)
    assert rules.allows(Pattern.INJECTIVE, Pattern.COMM_REDUCE)
    assert not rules.allows(Pattern.COMM_REDUCE, Pattern.ELEMWISE)
    assert not any(rules.allows(Pattern.OPAQUE, p) or rules.allows(p, Pattern.OPAQUE) for p in Pattern)
    assert rules.max_group_size == 256 and not rules.never_fuse


def test_allow_and_disallow_take_names_and_chain():
    rules = G.FusionRules().allow("out_elemwise_fusable", ["injective"]).disallow(Pattern.ELEMWISE, "broadcast")
    assert rules.allows(Pattern.OUT_ELEMWISE_FUSABLE, Pattern.INJECTIVE)
    assert not rules.allows(Pattern.ELEMWISE, Pattern.BROADCAST)
    assert "after out_elemwise_fusable: elemwise, broadcast, injective" in str(rules)


def test_constructor_accepts_names_and_validates():
    rules = G.FusionRules(may_follow={"elemwise": ["elemwise"]}, never_fuse={"nn.softmax"})
    assert rules.allows(Pattern.ELEMWISE, Pattern.ELEMWISE) and not rules.allows(Pattern.BROADCAST, Pattern.ELEMWISE)
    with pytest.raises(ValueError, match="nn.conv3d"):
        G.FusionRules(never_fuse={"nn.conv3d"})
    with pytest.raises(ValueError, match="max_group_size"):
        G.FusionRules(max_group_size=0)
    with pytest.raises(ValueError, match="unknown op pattern"):
        G.FusionRules(may_follow={"elementwise": []})


def test_no_fusion_allows_nothing():
    rules = G.FusionRules.no_fusion()
    assert not any(rules.allows(a, b) for a in Pattern for b in Pattern)


@pytest.mark.parametrize("kwargs, named", [
    (dict(never_fuse={"nosuch"}), "never_fuse names an unknown op: no op named 'nosuch'"),
    (dict(may_follow={"nosuch": ["elemwise"]}), "unknown op pattern 'nosuch'"),
    (dict(may_follow={"elemwise": ["nosuch"]}), "unknown op pattern 'nosuch'"),
    (dict(shared_values="nosuch"), "shared_values must be one of"),
])
def test_unknown_names_are_value_errors_that_name_them(kwargs, named):
    with pytest.raises(ValueError, match=named) as info:
        G.FusionRules(**kwargs)
    assert not isinstance(info.value, KeyError) and not str(info.value).startswith('"')
