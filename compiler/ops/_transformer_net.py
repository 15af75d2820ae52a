"""Johnson et al.'s fast style-transfer network, as in PyTorch's examples
(fast_neural_style/neural_style/transformer_net.py), so that its released state dicts
(candy.pth, mosaic.pth, udnie.pth, ...) load by the same parameter names.

A separate module (not a plugin: its name starts with "_") because it imports torch at import
time, and the op registry must stay cheap to import; image_style imports it on first use.
"""

from __future__ import annotations

import torch
from torch import nn


class ConvLayer(nn.Module):
    """Reflection padding then a convolution: keeps borders free of zero-padding artefacts."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.conv2d(self.reflection_pad(x))  # (Module calls are typed Any)
        return out


class ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.in1(self.conv1(x)))
        out2: torch.Tensor = self.in2(self.conv2(out))
        return out2 + x


class UpsampleConvLayer(nn.Module):
    """Nearest-neighbour upsampling then a convolution (instead of a transposed convolution,
    which leaves checkerboard artefacts)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int,
                 upsample: int | None = None) -> None:
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.upsample:
            x = nn.functional.interpolate(x, mode="nearest", scale_factor=self.upsample)
        out: torch.Tensor = self.conv2d(self.reflection_pad(x))
        return out


class TransformerNet(nn.Module):
    """RGB in [0, 255] (N x 3 x H x W) -> stylised RGB, about [0, 255], sides rounded up to x4."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = ConvLayer(3, 32, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(32, affine=True)
        self.conv2 = ConvLayer(32, 64, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(64, affine=True)
        self.conv3 = ConvLayer(64, 128, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(128, affine=True)
        self.res1 = ResidualBlock(128)
        self.res2 = ResidualBlock(128)
        self.res3 = ResidualBlock(128)
        self.res4 = ResidualBlock(128)
        self.res5 = ResidualBlock(128)
        self.deconv1 = UpsampleConvLayer(128, 64, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(64, affine=True)
        self.deconv2 = UpsampleConvLayer(64, 32, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(32, affine=True)
        self.deconv3 = ConvLayer(32, 3, kernel_size=9, stride=1)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.relu(self.in1(self.conv1(x)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res5(self.res4(self.res3(self.res2(self.res1(y)))))
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        out: torch.Tensor = self.deconv3(y)
        return out
