"""Resampling (``F.interpolate``, 1-D pooling) and transposed convolutions (``ConvTranspose1d/2d``) against
PyTorch: the interpreted graph for every form, and compiled kernels for a few."""
import pytest

from tesched import graph as G
from tesched.frontend import UnsupportedOpError, from_torch, supported_ops

from .helpers import TOLERANCE, Case, Lambda, check_case, max_relative_error, rand, torch

F = torch.nn.functional
nn = torch.nn


def image(h=5, w=6):
    return lambda: (rand(1, 3, h, w),)


INTERPOLATE = [
    Case("nearest", lambda: Lambda(lambda x: (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(7, 9)),
                                              F.interpolate(x, scale_factor=1.5), F.interpolate(x, size=(3, 4)),
                                              F.interpolate(x, scale_factor=(1.1, 0.7)))), image()),
    Case("bilinear", lambda: Lambda(lambda x: tuple(
        F.interpolate(x, mode="bilinear", align_corners=corners, **size)
        for corners in (True, False)
        for size in ({"scale_factor": 2}, {"size": (7, 13)}, {"scale_factor": 1.7}, {"size": (3, 4)})) + (
        F.interpolate(x, mode="bilinear", scale_factor=2, recompute_scale_factor=True),)), image()),
    Case("linear_1d_3d", lambda: Lambda(lambda x, v: (F.interpolate(x, scale_factor=2.5, mode="linear"),
                                                      F.interpolate(x, size=4, mode="nearest"),
                                                      F.interpolate(v, scale_factor=2, mode="trilinear",
                                                                    align_corners=True),
                                                      F.interpolate(v, size=(2, 5, 7)))),
         lambda: (rand(1, 2, 7), rand(1, 2, 3, 4, 5)), raw=True),
    Case("nearest_exact", lambda: Lambda(lambda x: (F.interpolate(x, scale_factor=2, mode="nearest-exact"),
                                                    F.interpolate(x, size=(7, 9), mode="nearest-exact"),
                                                    F.interpolate(x, scale_factor=1.7, mode="nearest-exact"),
                                                    F.interpolate(x[0], scale_factor=3, mode="nearest-exact"),
                                                    F.interpolate(x[None], size=(2, 3, 4), mode="nearest-exact"))),
         image(), raw=True),
    Case("upsample_modules", lambda: nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"),
                                                   nn.UpsamplingNearest2d(scale_factor=3)), image(4, 4)),
]

TRANSPOSED = [
    Case("unet_2x2", lambda: nn.ConvTranspose2d(3, 4, 2, stride=2), image()),
    Case("stride2_pad_outpad", lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), image()),
    Case("stride1", lambda: nn.ConvTranspose2d(3, 5, 3, padding=1, bias=False), image()),
    Case("groups_dilation", lambda: nn.ConvTranspose2d(4, 6, 3, stride=(2, 3), padding=(2, 1), groups=2,
                                                       dilation=2, output_padding=(1, 0)), lambda: (rand(1, 4, 5, 4),)),
    Case("large_padding", lambda: nn.ConvTranspose2d(3, 2, 5, stride=2, padding=4), image(6, 7)),
    Case("stride3_kernel4", lambda: nn.ConvTranspose2d(2, 3, 4, stride=3, padding=1, output_padding=2),
         lambda: (rand(2, 2, 3, 4),)),
    Case("transposed_1d", lambda: nn.Sequential(nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
                                                nn.ConvTranspose1d(4, 2, 4, stride=1, groups=2)),
         lambda: (rand(1, 3, 9),)),
    Case("pool_1d", lambda: Lambda(lambda x: (F.max_pool1d(x, 3, 2, 1), F.avg_pool1d(x, 2), F.adaptive_avg_pool1d(x, 4),
                                              F.adaptive_max_pool1d(x, 1), F.adaptive_max_pool1d(x, 3),
                                              F.max_pool1d(x, 5, ceil_mode=True), F.adaptive_max_pool2d(x, (1, 4)))),
         lambda: (rand(1, 3, 12),)),
    Case("conv1d", lambda: nn.Sequential(nn.Conv1d(3, 8, 5, stride=2, padding=2), nn.ReLU(),
                                         nn.Conv1d(8, 4, 3, dilation=2, groups=4)), lambda: (rand(1, 3, 20),)),
]


@pytest.mark.parametrize("case", INTERPOLATE + TRANSPOSED, ids=str)
def test_matches_pytorch(case):
    check_case(case)


@pytest.mark.parametrize("case", [INTERPOLATE[1], TRANSPOSED[1], TRANSPOSED[3], TRANSPOSED[-2]], ids=str)
def test_compiled(case):
    check_case(case, build=True)


def test_from_torch_keeps_the_resampling_that_core_aten_would_turn_into_index_arithmetic():
    model, x = Lambda(lambda v: F.interpolate(v, scale_factor=2.5, mode="linear")), rand(1, 2, 7)
    fn = from_torch(model, (x,))
    assert "nn.upsample(" in str(fn)
    assert max_relative_error(G.interpret(fn, x.numpy()), model(x)) <= TOLERANCE


def test_upsampling_ops_are_listed():
    assert {"aten.upsample_nearest2d.vec", "aten.upsample_bilinear2d.vec"} <= set(supported_ops())


def test_resampling_that_is_not_converted_names_its_op_module_and_line():
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return F.interpolate(self.conv(x), scale_factor=2, mode="bicubic")

    with pytest.raises(UnsupportedOpError, match=r"(?s)aten.upsample_bicubic2d.vec in the model's own forward "
                                                 r"\(Head\).*Nearest supported alternative: aten.upsample_.*"
                                                 r"test_convert_vision.py.*mode=\"bicubic\""):
        from_torch(Head().eval(), (rand(1, 3, 4, 4),))


def test_a_2x2_stride_2_transposed_convolution_is_one_1x1_convolution():
    fn = check_case(TRANSPOSED[0])
    convs = [line for line in str(fn).splitlines() if "nn.conv2d(" in line]
    assert len(convs) == 1, str(fn)
