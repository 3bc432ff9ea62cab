"""Reference PyTorch models for the frontend's tests, tutorial and benchmark: ``WeeNet`` (a depthwise conv +
batch norm + ReLU block), ``resnet18``, ``mobilenet_v2`` and ``squeezenet1_1`` (the architectures of
torchvision's models of those names, layer for layer and parameter for parameter, with torchvision's
random initialisation, so they run where torchvision does not install), ``MLPBlock`` (a transformer-style
feed-forward block), ``LSTMCellStep`` (an LSTM cell with its state as inputs) and
:func:`randomize_batch_norm`.

This module imports torch when it is imported (``pip install tesched[torch]``); ``tesched.frontend`` does
not import it. Module names follow torchvision's, so parameter names (``layer3.1.conv2.weight``) and
state dicts match.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tesched.frontend.lazy_torch import require_torch

torch: Any = require_torch()
nn: Any = torch.nn


class WeeNet(nn.Module):
    """A depthwise 3x3 convolution (with ``nn.Conv2d``'s default bias), batch norm and ReLU over ``planes``
    channels."""

    def __init__(self, planes: int = 64):
        super().__init__()
        self.conv = nn.Conv2d(planes, planes, 3, padding=1, groups=planes)
        self.bn = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


class MLPBlock(nn.Module):
    """A transformer's feed-forward block: ``layer_norm(x + linear2(gelu(linear1(x))))``."""

    def __init__(self, dim: int = 256, hidden: int = 1024):
        super().__init__()
        self.linear1 = nn.Linear(dim, hidden)
        self.gelu = nn.GELU()
        self.linear2 = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.linear2(self.gelu(self.linear1(x))))


class LSTMCellStep(nn.Module):
    """One step of an ``nn.LSTMCell(inputs, hidden)`` with the state passed in: ``(x, h, c) -> (h', c')``."""

    def __init__(self, inputs: int = 128, hidden: int = 128):
        super().__init__()
        self.cell = nn.LSTMCell(inputs, hidden)

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


# ResNet-18 ----------------------------------------------------------------------------------------

class BasicBlock(nn.Module):
    """Two 3x3 conv + batch norm layers with a residual connection (a 1x1 conv + batch norm when the
    shape changes), ReLU after the first layer and after the sum."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18(nn.Module):
    """torchvision's ``resnet18()``: a 7x7 stem, four stages of two basic blocks, global pooling, a linear
    classifier; 11,689,512 parameters for 1000 classes."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        widths = (64, 128, 256, 512)
        for k, planes in enumerate(widths):
            inplanes, stride = widths[max(k - 1, 0)], 1 if k == 0 else 2
            setattr(self, f"layer{k + 1}", nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes)))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# MobileNetV2 --------------------------------------------------------------------------------------

def conv_bn_relu6(inp: int, oup: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    """torchvision's ``Conv2dNormActivation`` with ReLU6: conv (no bias, same padding), batch norm, ReLU6."""
    return nn.Sequential(nn.Conv2d(inp, oup, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(oup), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """1x1 expansion (unless the ratio is 1), 3x3 depthwise, 1x1 linear projection; residual when the
    stride is 1 and the width does not change."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = round(inp * expand_ratio)
        self.use_res_connect = stride == 1 and inp == oup
        layers = [conv_bn_relu6(inp, hidden, kernel=1)] if expand_ratio != 1 else []
        layers += [conv_bn_relu6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's ``mobilenet_v2()`` (width 1.0): 17 inverted residual blocks between a stride-2 stem
    and a 1x1 conv to 1280 channels, global pooling, dropout and a linear classifier; 3,504,872
    parameters for 1000 classes."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers = [conv_bn_relu6(3, 32, stride=2)]
        inp = 32
        for ratio, width, repeats, stride in self.SETTINGS:
            for k in range(repeats):
                layers.append(InvertedResidual(inp, width, stride if k == 0 else 1, ratio))
                inp = width
        layers.append(conv_bn_relu6(inp, 1280, kernel=1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2), nn.Linear(1280, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# SqueezeNet 1.1 -----------------------------------------------------------------------------------

class Fire(nn.Module):
    """A 1x1 squeeze conv, then 1x1 and 3x3 expand convs concatenated, each followed by ReLU."""

    def __init__(self, inplanes: int, squeeze: int, expand1x1: int, expand3x3: int):
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze, 1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet11(nn.Module):
    """torchvision's ``squeezenet1_1()``: a stride-2 3x3 stem, eight Fire modules between three ceil-mode
    max pools, a 1x1 conv classifier and global pooling; 1,235,496 parameters for 1000 classes."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()

        def pool() -> nn.Module:
            return nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(inplace=True), pool(),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
            Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
        final_conv = nn.Conv2d(512, num_classes, 1)
        self.classifier = nn.Sequential(nn.Dropout(p=0.5), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def resnet18(num_classes: int = 1000) -> ResNet18:
    """torchvision's ``resnet18(weights=None)``."""
    return ResNet18(num_classes)


def mobilenet_v2(num_classes: int = 1000) -> MobileNetV2:
    """torchvision's ``mobilenet_v2(weights=None)``."""
    return MobileNetV2(num_classes)


def squeezenet1_1(num_classes: int = 1000) -> SqueezeNet11:
    """torchvision's ``squeezenet1_1(weights=None)``."""
    return SqueezeNet11(num_classes)


def randomize_batch_norm(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every batch norm of ``model`` random running statistics and affine parameters (a freshly
    initialised one is the identity, which would hide a wrong folding); returns ``model`` in eval mode."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(t, low: float, high: float) -> None:
        t.copy_(torch.rand(t.shape, generator=generator) * (high - low) + low)

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                uniform(m.running_mean, -0.2, 0.2)
                uniform(m.running_var, 0.5, 1.5)
                uniform(m.weight, 0.5, 1.5)
                uniform(m.bias, -0.2, 0.2)
    return model.eval()


MODELS: dict[str, Callable[[], nn.Module]] = {
    "weenet": WeeNet, "resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "squeezenet1_1": squeezenet1_1,
}
