#!/usr/bin/env python3
"""PyTorch reference for dawnrun's CUDA engine: DAWN_net (configs/page-post3/30ep-cutout.cfg)
and ResNet-9 (configs/resnet9-24ep.cfg) trained with the same recipe on the same CIFAR-10
binary files, as a fair peer on the same GPU: channels_last tensors, fp16 autocast
(BN in fp32), cuDNN autotuning, the data on the GPU and augmented there (reflect pad 4,
random 32x32 crop, flip, 8x8 cutout). Prints the time and accuracy of every epoch.

    python3 bench/pytorch_reference.py --data DIR --net dawn|resnet9 [--epochs N]

The recipe, as in the configs: batch 512; learning rate piecewise linear in the
fractional epoch (DAWN_net 0 -> 0.4 at epoch 8 -> 0 at 30; ResNet-9 0 -> 0.4 at 5 -> 0 at
24); Nesterov momentum 0.9; weight decay 5e-4; summed loss, with Page's scaling (lr /
batch, weight decay x batch). PyTorch's SGD keeps its momentum in gradient units where
dawnrun keeps it in step units; with a changing learning rate the two differ slightly.
--epochs N shortens the schedule proportionally (for timing on synthetic data).
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN = (125.31, 122.95, 113.87)
STD = (62.99, 62.09, 66.70)
RECIPES = {
    "dawn": {"epochs": 30, "knots": [0, 8, 30], "values": [0.0, 0.4, 0.0]},
    "resnet9": {"epochs": 24, "knots": [0, 5, 24], "values": [0.0, 0.4, 0.0]},
}


def load_split(directory, names):
    """uint8 images (n, 3, 32, 32) and int64 labels from CIFAR-10 binary batch files."""
    rec = np.concatenate([np.fromfile(os.path.join(directory, n), dtype=np.uint8).reshape(-1, 3073)
                          for n in names])
    return rec[:, 1:].reshape(-1, 3, 32, 32), rec[:, 0].astype(np.int64)


def conv_bn(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.res = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

    def forward(self, x):
        return x + self.res(x)


class Scale(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, x):
        return x * self.s


def resnet9(width=64):
    """configs/nets/resnet9.cfg"""
    w = width
    return nn.Sequential(
        conv_bn(3, w), conv_bn(w, 2 * w), nn.MaxPool2d(2), Residual(2 * w),
        conv_bn(2 * w, 4 * w), nn.MaxPool2d(2), conv_bn(4 * w, 8 * w), nn.MaxPool2d(2),
        Residual(8 * w), nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(8 * w, 10, bias=False),
        Scale(0.125))


class PreActBlock(nn.Module):
    """res_block of configs/nets/dawn_net.cfg: bn-relu, two 3x3 convs, shortcut from the relu."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.shortcut = None
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False)

    def forward(self, x):
        out = F.relu(self.bn1(x))
        short = self.shortcut(out) if self.shortcut is not None else out
        out = self.conv2(F.relu(self.bn2(self.conv1(out))))
        return short + out


class DawnNet(nn.Module):
    """configs/nets/dawn_net.cfg"""

    def __init__(self, w=64):
        super().__init__()
        self.prep = nn.Conv2d(3, w, 3, padding=1, bias=False)
        spec = [(w, w, 1), (w, w, 1), (w, 2 * w, 2), (2 * w, 2 * w, 1), (2 * w, 4 * w, 2),
                (4 * w, 4 * w, 1), (4 * w, 4 * w, 2), (4 * w, 4 * w, 1)]
        self.blocks = nn.Sequential(*[PreActBlock(*s) for s in spec])
        self.linear = nn.Linear(8 * w, 10, bias=True)

    def forward(self, x):
        x = self.blocks(self.prep(x))
        x = torch.cat([F.max_pool2d(x, 4), F.avg_pool2d(x, 4)], dim=1)
        return self.linear(torch.flatten(x, 1))


def schedule(t, knots, values):
    return float(np.interp(t, knots, values))


def augment(images, idx, gen):
    """Reflect-padded, normalised images (N, 3, 40, 40) -> augmented batch (B, 3, 32, 32)."""
    b, dev = idx.numel(), images.device
    base = torch.arange(32, device=dev)
    oy = torch.randint(0, 9, (b,), device=dev, generator=gen)
    ox = torch.randint(0, 9, (b,), device=dev, generator=gen)
    flip = torch.randint(0, 2, (b,), device=dev, generator=gen).bool()
    rows = oy[:, None] + base
    cols = torch.where(flip[:, None], ox[:, None] + 31 - base, ox[:, None] + base)
    ch = torch.arange(3, device=dev)
    x = images[idx[:, None, None, None], ch[None, :, None, None], rows[:, None, :, None],
               cols[:, None, None, :]]
    cy = torch.randint(0, 25, (b,), device=dev, generator=gen)
    cx = torch.randint(0, 25, (b,), device=dev, generator=gen)
    ys, xs = base[None, :, None], base[None, None, :]
    cy, cx = cy[:, None, None], cx[:, None, None]
    inside = (ys >= cy) & (ys < cy + 8) & (xs >= cx) & (xs < cx + 8)
    return x * (~inside)[:, None].to(x.dtype)


def main():
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.environ.get("DAWNRUN_DATA", "data/cifar-10-batches-bin"))
    ap.add_argument("--net", choices=sorted(RECIPES), default="dawn")
    ap.add_argument("--epochs", type=int, default=0, help="0: the recipe's")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--precision", choices=sorted(dtypes), default="fp16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a quick test of this script")
    ap.add_argument("--subset", type=int, default=0, help="keep the first N training images")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    recipe = RECIPES[args.net]
    epochs = args.epochs or recipe["epochs"]
    stretch = recipe["epochs"] / epochs
    dtype = dtypes[args.precision]

    train_x, train_y = load_split(args.data, ["data_batch_%d.bin" % i for i in range(1, 6)])
    if args.subset:
        train_x, train_y = train_x[:args.subset], train_y[:args.subset]
    test_x, test_y = load_split(args.data, ["test_batch.bin"])
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
    tx = (torch.from_numpy(train_x).to(dev).float() - mean) / std
    tx = F.pad(tx, (4, 4, 4, 4), mode="reflect").to(dtype)
    ty = torch.from_numpy(train_y).to(dev)
    vx = ((torch.from_numpy(test_x).to(dev).float() - mean) / std).to(dtype)
    vx = vx.contiguous(memory_format=torch.channels_last)
    vy = torch.from_numpy(test_y).to(dev)

    model = (DawnNet() if args.net == "dawn" else resnet9()).to(dev)
    model = model.to(memory_format=torch.channels_last)
    run = torch.compile(model) if args.compile else model
    b = args.batch
    opt = torch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9, nesterov=True,
                          weight_decay=5e-4 * b)
    autocast = torch.autocast(dev.type, dtype=dtype, enabled=dtype != torch.float32)
    gen = torch.Generator(device=dev)
    gen.manual_seed(args.seed)
    n = tx.shape[0]
    steps = n // b
    print("net %s  precision %s  epochs %d  batch %d  device %s  torch %s  cudnn %s" %
          (args.net, args.precision, epochs, b,
           torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", torch.__version__,
           torch.backends.cudnn.version()))
    print("%5s %9s %10s %10s %9s %9s %9s %10s" % ("epoch", "lr", "train time", "train loss",
                                                  "train acc", "test time", "test acc", "total"))
    total = 0.0
    for ep in range(epochs):
        model.train()
        sync()
        t0 = time.perf_counter()
        perm = torch.randperm(n, device=dev, generator=gen)
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), device=dev)
        lr = 0.0
        for s in range(steps):
            lr = schedule((ep + s / steps) * stretch, recipe["knots"], recipe["values"])
            for g in opt.param_groups:
                g["lr"] = lr / b
            idx = perm[s * b:(s + 1) * b]
            x = augment(tx, idx, gen).contiguous(memory_format=torch.channels_last)
            y = ty[idx]
            with autocast:
                out = run(x)
                loss = F.cross_entropy(out.float(), y, reduction="sum")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
            correct += (out.argmax(1) == y).sum()
        sync()
        train_time = time.perf_counter() - t0
        model.eval()
        t1 = time.perf_counter()
        hits = torch.zeros((), device=dev)
        with torch.no_grad(), autocast:
            for i in range(0, vx.shape[0], 512):
                hits += (run(vx[i:i + 512]).argmax(1) == vy[i:i + 512]).sum()
        sync()
        test_time = time.perf_counter() - t1
        total += train_time + test_time
        print("%5d %9.4f %10.2f %10.4f %9.4f %9.2f %9.4f %10.2f" %
              (ep + 1, lr, train_time, loss_sum.item() / (steps * b), correct.item() / (steps * b),
               test_time, hits.item() / vx.shape[0], total), flush=True)
    print("total %.2f s for %d epochs (train + eval), final test acc %.4f" %
          (total, epochs, hits.item() / vx.shape[0]))


if __name__ == "__main__":
    main()
