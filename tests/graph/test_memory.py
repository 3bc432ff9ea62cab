"""Memory planning: buffers live at the same step never overlap, reuse lowers the peak, offsets align."""
from hypothesis import given, settings
from hypothesis import strategies as st

from tesched.graph.memory import ALIGNMENT, Buffer, plan_memory


def test_a_chain_reuses_the_buffer_two_steps_back():
    plan = plan_memory([Buffer(100, k, k + 1) for k in range(4)])
    assert plan.offsets == [0, 128, 0, 128]
    assert plan.peak_bytes == 256 and plan.unshared_bytes == 512
    assert "4 intermediate buffers in 256 bytes (512 without reuse, 50% saved)" == str(plan)


@st.composite
def buffers(draw):
    count = draw(st.integers(1, 12))
    out = []
    for _ in range(count):
        first = draw(st.integers(0, 10))
        out.append(Buffer(draw(st.integers(0, 5000)), first, first + draw(st.integers(0, 6))))
    return out


@given(buffers())
@settings(max_examples=200, deadline=None)
def test_live_buffers_never_overlap(bufs):
    plan = plan_memory(bufs)
    spans = [(o, o + max(b.nbytes, 1)) for b, o in zip(bufs, plan.offsets)]
    for k, (a, b) in enumerate(zip(bufs, spans)):
        assert b[0] % ALIGNMENT == 0 and b[1] <= plan.peak_bytes
        for c, d in zip(bufs[k + 1:], spans[k + 1:]):
            live_together = a.first <= c.last and c.first <= a.last
            if live_together:
                assert b[1] <= d[0] or d[1] <= b[0], (a, c, plan.offsets)
    assert plan.peak_bytes <= plan.unshared_bytes
