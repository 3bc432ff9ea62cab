"""Small present-day architectures in plain ``torch.nn`` for the frontend's tests and benchmark: a transformer
encoder layer and stack, a GPT-style causal block with tied embeddings, ViT-tiny, MLP-Mixer, a U-Net with
nearest and bilinear upsampling and a ``ConvTranspose2d``, stacked GRU/LSTM, and DenseNet and ResNeXt blocks.

Each is written here (not taken from a model hub) and sized for batch-1 benchmarks; ``MODERN`` maps a name
to ``(make model, make example inputs)``. This module does not say which of them tesched imports: the
benchmark reports an unsupported op by name. It imports torch when imported (``pip install tesched[torch]``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tesched.frontend.lazy_torch import require_torch

torch: Any = require_torch()
nn: Any = torch.nn
F: Any = torch.nn.functional


class EncoderLayer(nn.Module):
    """Post-norm transformer encoder layer: self-attention (``scaled_dot_product_attention``) + GELU MLP."""

    def __init__(self, dim: int = 256, heads: int = 4, hidden: int = 1024, causal: bool = False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = self.norm1(x + self.out(attended.transpose(1, 2).reshape(batch, seq, dim)))
        return self.norm2(x + self.mlp(x))


class EncoderStack(nn.Module):
    """``layers`` :class:`EncoderLayer` in sequence."""

    def __init__(self, layers: int = 4, dim: int = 256, heads: int = 4):
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer(dim, heads) for _ in range(layers)])

    def forward(self, x):
        return self.layers(x)


class GPTBlock(nn.Module):
    """Token embedding + learned positions, one causal :class:`EncoderLayer`, a final norm and a language-model
    head whose weight is the embedding's (tied)."""

    def __init__(self, vocab: int = 1000, seq: int = 128, dim: int = 256, heads: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.block = EncoderLayer(dim, heads, causal=True)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(self.norm(self.block(self.embed(tokens) + self.position[:, :tokens.shape[1]])))


class ViTTiny(nn.Module):
    """ViT-tiny: 16x16 patches of a 224x224 image, dim 192, 3 heads, ``depth`` layers, class token, head."""

    def __init__(self, image: int = 224, patch: int = 16, dim: int = 192, depth: int = 12, heads: int = 3,
                 classes: int = 1000):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.layers = nn.Sequential(*[EncoderLayer(dim, heads, 4 * dim) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.position
        return self.head(self.norm(self.layers(x))[:, 0])


class MixerLayer(nn.Module):
    """MLP-Mixer layer: token mixing (a Linear over the transposed patches) then channel mixing."""

    def __init__(self, tokens: int, dim: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.tokens = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.channels = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.norm2(x))


class MLPMixer(nn.Module):
    """MLP-Mixer over 16x16 patches of a 128x128 image: dim 256, ``depth`` layers, mean-pooled head."""

    def __init__(self, image: int = 128, patch: int = 16, dim: int = 256, depth: int = 4, classes: int = 100):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.layers = nn.Sequential(*[MixerLayer((image // patch) ** 2, dim) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.layers(self.patch(x).flatten(2).transpose(1, 2))
        return self.head(self.norm(x).mean(dim=1))


def double_conv(inp: int, out: int) -> Any:
    return nn.Sequential(nn.Conv2d(inp, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU(),
                         nn.Conv2d(out, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU())


class UNet(nn.Module):
    """Three-level U-Net: max-pool down; up by nearest interpolation, bilinear interpolation
    (``align_corners=True``) and a stride-2 ``ConvTranspose2d``; skip connections by concatenation."""

    def __init__(self, channels: int = 3, width: int = 16, classes: int = 2):
        super().__init__()
        w = width
        self.down = nn.ModuleList([double_conv(channels, w), double_conv(w, 2 * w), double_conv(2 * w, 4 * w)])
        self.bottom = double_conv(4 * w, 8 * w)
        self.transpose = nn.ConvTranspose2d(8 * w, 8 * w, 2, stride=2)
        self.up = nn.ModuleList([double_conv(12 * w, 4 * w), double_conv(6 * w, 2 * w), double_conv(3 * w, w)])
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        x = self.up[0](torch.cat([self.transpose(x), skips[2]], dim=1))
        x = self.up[1](torch.cat([F.interpolate(x, scale_factor=2, mode="nearest"), skips[1]], dim=1))
        x = self.up[2](torch.cat([F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                                  skips[0]], dim=1))
        return self.head(x)


class StackedRNN(nn.Module):
    """A 2-layer ``nn.GRU`` or ``nn.LSTM`` (``kind``) over a batch-first sequence; returns the outputs."""

    def __init__(self, kind: str = "gru", inputs: int = 128, hidden: int = 128, layers: int = 2):
        super().__init__()
        self.rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[kind](inputs, hidden, layers, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class DenseBlock(nn.Module):
    """DenseNet block: ``layers`` BN-ReLU-conv1x1-BN-ReLU-conv3x3 layers, each concatenating ``growth``
    channels onto its input."""

    def __init__(self, channels: int = 64, growth: int = 32, layers: int = 4):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(channels + i * growth), nn.ReLU(),
                          nn.Conv2d(channels + i * growth, 4 * growth, 1, bias=False),
                          nn.BatchNorm2d(4 * growth), nn.ReLU(), nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))
            for i in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], dim=1)
        return x


class ResNeXtBlock(nn.Module):
    """ResNeXt bottleneck: conv1x1, grouped conv3x3 (``groups`` groups), conv1x1, identity residual, ReLU."""

    def __init__(self, channels: int = 256, width: int = 128, groups: int = 32):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(channels, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.Conv2d(width, width, 3, padding=1, groups=groups, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.Conv2d(width, channels, 1, bias=False), nn.BatchNorm2d(channels))

    def forward(self, x):
        return F.relu(x + self.body(x))


def _image(size: int, channels: int = 3) -> Callable[[], tuple]:
    return lambda: (torch.rand(1, channels, size, size),)


MODERN: dict[str, tuple[Callable[[], Any], Callable[[], tuple]]] = {
    "encoder_layer": (EncoderLayer, lambda: (torch.rand(1, 128, 256),)),
    "encoder_stack4": (EncoderStack, lambda: (torch.rand(1, 128, 256),)),
    "gpt_block": (GPTBlock, lambda: (torch.randint(0, 1000, (1, 128)),)),
    "vit_tiny": (ViTTiny, _image(224)),
    "mlp_mixer": (MLPMixer, _image(128)),
    "unet": (UNet, _image(64)),
    "gru2": (lambda: StackedRNN("gru"), lambda: (torch.rand(1, 32, 128),)),
    "lstm2": (lambda: StackedRNN("lstm"), lambda: (torch.rand(1, 32, 128),)),
    "dense_block": (DenseBlock, _image(28, 64)),
    "resnext_block": (ResNeXtBlock, _image(28, 256)),
}
"""Benchmark name -> ``(make the model, make batch-1 example inputs)``; models are in train mode until
``.eval()``."""
