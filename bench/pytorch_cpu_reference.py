#!/usr/bin/env python3
"""Times one fp32 training step of Page's ResNet-9 and DAWN_net in PyTorch on the CPU, as
the peer that `dawnrun bench --engine cpu` is compared with (docs/benchmarks.md).

usage: python3 bench/pytorch_cpu_reference.py [--net resnet9|dawn_net] [--batch 128]
                                             [--threads 2] [--steps 3] [--warmup 1]
                                             [--memory-format nchw|channels_last]
Synthetic inputs (speed does not depend on pixel values); SGD with Nesterov momentum and
weight decay, summed cross-entropy, as in the recipe. channels_last converts the model and
the input batch (PyTorch's NHWC path through oneDNN); bench/cpu-compare.sh times both.
The instruction set follows PyTorch's own choice, capped by ATEN_CPU_CAPABILITY and
DNNL_MAX_CPU_ISA when set.
"""
import argparse
import time

import torch
import torch.nn as nn


def conv_bn(c_in, c_out):
    return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(*conv_bn(c, c), *conv_bn(c, c))

    def forward(self, x):
        return x + self.body(x)


class Scale(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, x):
        return x * self.s


def resnet9():
    return nn.Sequential(
        *conv_bn(3, 64),
        *conv_bn(64, 128), nn.MaxPool2d(2), Residual(128),
        *conv_bn(128, 256), nn.MaxPool2d(2),
        *conv_bn(256, 512), nn.MaxPool2d(2), Residual(512),
        nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(512, 10, bias=False), Scale(0.125))


class ResBlock(nn.Module):
    """Pre-activation block: bn -> relu, branch of two 3x3 convs, shortcut from the relu."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.bn1, self.relu = nn.BatchNorm2d(c_in), nn.ReLU()
        self.branch = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(),
            nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False))
        self.short = (nn.Conv2d(c_in, c_out, 1, stride, bias=False)
                      if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x):
        a = self.relu(self.bn1(x))
        return self.short(a) + self.branch(a)


class Head(nn.Module):
    def forward(self, x):
        return torch.cat([nn.functional.max_pool2d(x, 4), nn.functional.avg_pool2d(x, 4)], 1)


def dawn_net():
    layers = [nn.Conv2d(3, 64, 3, padding=1, bias=False)]
    for c_in, c_out, stride in [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 256, 2)]:
        layers += [ResBlock(c_in, c_out, stride), ResBlock(c_out, c_out, 1)]
    return nn.Sequential(*layers, Head(), nn.Flatten(), nn.Linear(512, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", default="resnet9", choices=["resnet9", "dawn_net"])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--memory-format", default="nchw", choices=["nchw", "channels_last"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = resnet9() if a.net == "resnet9" else dawn_net()
    print("parameters", sum(p.numel() for p in model.parameters()))
    opt = torch.optim.SGD(model.parameters(), lr=0.4 / a.batch, momentum=0.9, nesterov=True,
                          weight_decay=5e-4 * a.batch)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    x = torch.randn(a.batch, 3, 32, 32)
    if a.memory_format == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (a.batch,))

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = (time.perf_counter() - t0) / a.steps
    print(f"pytorch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}, "
          f"{a.memory_format}) {a.net} batch {a.batch}, {a.threads} threads: "
          f"{dt * 1e3:.1f} ms/step, {a.batch / dt:.1f} images/s")


if __name__ == "__main__":
    main()
