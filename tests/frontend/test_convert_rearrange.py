"""repeat/tile, flip, roll (decomposed to index_select by constant fmod arithmetic, and undecomposed),
index_select, pad in every mode and cumsum against PyTorch, at ranks 1 to 5."""
import pytest

from tesched import graph as G
from tesched.frontend import UnsupportedOpError, from_torch

from .helpers import TOLERANCE, Case, Lambda, check_case, max_relative_error, rand, torch

F = torch.nn.functional


def five_d():
    return (rand(2, 3, 4, 5, 2),)


CASES = [
    Case("repeat", lambda: Lambda(lambda x: (x.repeat(1, 2, 1, 1, 3), x.repeat(2, 1, 1, 1, 1, 1), x.tile((2, 1)))),
         five_d),
    Case("flip", lambda: Lambda(lambda x: (x.flip(2), x.flip((0, 3)), x.flip(-1))), five_d),
    Case("roll", lambda: Lambda(lambda x: (torch.roll(x, 2, 3), torch.roll(x, (1, -2), (1, 2)), torch.roll(x, 3),
                                           torch.roll(x, 7, -1))), five_d),
    Case("roll_raw", lambda: Lambda(lambda x: (torch.roll(x, 2, 3), torch.roll(x, (1, -2), (1, 2)),
                                               torch.roll(x, -4))), five_d, raw=True),
    Case("index_select", lambda: Lambda(lambda x, i: (x.index_select(1, i), x.index_select(2, torch.arange(1, 3)),
                                                      x.index_select(0, torch.tensor([1, 0, 1])))),
         lambda: (rand(2, 3, 4), torch.tensor([2, 0, 2, 1]))),
    Case("cumsum", lambda: Lambda(lambda x, i: (x.cumsum(2), x.cumsum(-1), torch.cumsum(x, 0), i.cumsum(1),
                                                torch.cumsum(i, 0, dtype=torch.float32))),
         lambda: (*five_d(), torch.randint(-3, 4, (4, 6)))),
    Case("pad_modes", lambda: Lambda(lambda x: tuple(F.pad(x, (1, 2, 2, 0), mode=mode)
                                                     for mode in ("reflect", "replicate", "circular")) + (
        F.pad(x[0], (2, 1), mode="reflect"), F.pad(x[None], (1, 2, 0, 1, 1, 1), mode="replicate"),
        F.pad(x, (1, -1, 2, 0), value=3.0))), lambda: (rand(2, 3, 4, 5),), raw=True),
    Case("one_d", lambda: Lambda(lambda x: (x.repeat(2), torch.roll(x, 2), x.cumsum(0), x.flip(0))),
         lambda: (rand(7),)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_pytorch(case):
    check_case(case)


@pytest.mark.parametrize("case", [CASES[2], CASES[4], CASES[5]], ids=str)
def test_compiled(case):
    check_case(case, build=True)


def test_roll_is_slices_not_a_gather():
    text = str(check_case(CASES[2]))
    assert "take(" not in text and "concatenate(" in text


def test_from_torch_keeps_pad_whole():
    model, x = Lambda(lambda v: F.pad(v, (2, 1, 1, 1), mode="reflect")), rand(1, 2, 4, 5)
    fn = from_torch(model, (x,))
    assert "take(" in str(fn)
    assert max_relative_error(G.interpret(fn, x.numpy()), model(x)) <= TOLERANCE


def test_fmod_of_a_computed_tensor_is_refused():
    with pytest.raises(UnsupportedOpError, match="aten.fmod.Scalar .* fmod of a computed tensor"):
        from_torch(Lambda(lambda x: torch.fmod(x, 0.5)), (rand(4),))

