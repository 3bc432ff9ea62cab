"""Pattern kinds: their order, names, and how stages carry them."""
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.pattern import Pattern


def test_patterns_are_ordered_from_easiest_to_fuse():
    assert Pattern.ELEMWISE < Pattern.BROADCAST < Pattern.INJECTIVE < Pattern.COMM_REDUCE
    assert Pattern.COMM_REDUCE < Pattern.OUT_ELEMWISE_FUSABLE < Pattern.OPAQUE
    assert max(Pattern.BROADCAST, Pattern.INJECTIVE) is Pattern.INJECTIVE


def test_parse_and_print_lower_case_names():
    assert Pattern.parse("out_elemwise_fusable") is Pattern.OUT_ELEMWISE_FUSABLE
    assert Pattern.parse(Pattern.OPAQUE) is Pattern.OPAQUE
    assert str(Pattern.COMM_REDUCE) == "comm_reduce"
    with pytest.raises(ValueError, match="unknown op pattern 'fancy'"):
        Pattern.parse("fancy")


def test_stages_carry_pattern_and_op():
    x = ts.placeholder((2, 2), name="x")
    y = nn.dense(x, x)
    assert nn.pattern_of(y) is Pattern.OUT_ELEMWISE_FUSABLE and nn.op_of(y) == "dense"
    plain = ts.compute((2,), lambda i: x[i, i], name="diag")
    assert nn.pattern_of(plain) is Pattern.OPAQUE and nn.op_of(plain) is None
