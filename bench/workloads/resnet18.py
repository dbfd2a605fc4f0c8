#!/usr/bin/env python3
"""ResNet-18 inference for bench/infer: torchvision's resnet18(weights=None)
seeded, or where torchvision is missing the same architecture written
below in plain torch.nn (same parameter names, so either loads the other's
file).  Each step classifies a batch of 224x224 images made on the CPU from
the seed and copies the logits back.

    resnet18.py [-D] [-b batch] [-d device] [-I salt] [-n steps] [-S seed] [-w warmup] model.pt
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False),
                nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + idt)


class ResNet18(nn.Module):
    """torchvision's ResNet-18: [2, 2, 2, 2] basic blocks, 1000 classes."""

    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, cout in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            setattr(self, "layer%d" % (i + 1), nn.Sequential(
                BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)
        # torchvision's initialisation.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out",
                                        nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def main():
    args = common.parse_args("resnet18", batch=8)
    try:
        import torchvision

        def build():
            return torchvision.models.resnet18(weights=None)
        variant = "torchvision"
    except ImportError:
        build = ResNet18
        variant = "builtin"

    def make_input(gen):
        return torch.randn(args.b, 3, 224, 224, generator=gen)

    common.run("resnet18", variant, build, make_input, args, "image")


if __name__ == "__main__":
    main()
