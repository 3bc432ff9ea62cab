"""Fixtures of the graph tests: the WeeNet (see helpers.wee_net) built once per session, and its input."""
import numpy as np
import pytest

from tesched import graph as G

from .helpers import wee_net


@pytest.fixture(scope="session")
def wee():
    """``(executable, params)`` of the WeeNet."""
    f, params = wee_net()
    return G.build(f, params), params


@pytest.fixture
def wee_data():
    """An input of the WeeNet: a 1 x 3 x 8 x 8 float32 image."""
    return np.random.default_rng(21).standard_normal((1, 3, 8, 8), dtype=np.float32)
