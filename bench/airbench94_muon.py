#!/usr/bin/env python3
"""An independent PyTorch implementation of the airbench94_muon recipe (the one
configs/airbench94-muon.cfg describes), in fp32 on the CPU, scaled down with the same knobs
as a dawnrun override, to compare the two side by side on the same data and seeds count.
Not used by the tests.

The recipe: a fixed 2x2 patch whitening (24 channels with the negated filters, its bias
trained for the first 3 epochs with its own linearly falling learning rate), GELU, three
groups of conv -> 2x2 max pool -> batch norm -> GELU -> conv -> batch norm -> GELU (dirac
start, frozen batch-norm scales, batch-norm momentum 0.4 and eps 1e-12), a 3x3 max pool,
a bias-free head rescaled to standard deviation 1 at the start and the logits divided by
the last width; summed cross-entropy with label smoothing 0.2; Muon (momentum 0.6,
Nesterov, 3 Newton-Schulz iterations, weights renormalised to norm sqrt(out)) on the
convolution filters and Nesterov SGD (momentum 0.85) on the rest; every learning rate
falling linearly to 0 over the run; 2-pixel reflect translations and alternating flips;
evaluation over mirror and 1-pixel translations.

usage: python3 bench/airbench94_muon.py [--data DIR] [--widths 64,256,256] [--epochs 8]
           [--batch 2000] [--train-subset N] [--test-subset N] [--seeds 5] [--threads 2]
DIR holds CIFAR-10's binary batches (default $DAWNRUN_DATA). The learning rates are the
published ones per step whatever the batch, and the decay wd = 2e-6 * batch, as
configs/airbench94-muon.cfg gives them with its schedules' peaks set to the batch size
(what ctest cli_run_recipe_muon does).
"""
import argparse
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def load_cifar(data_dir, train, subset):
    """(images float (n, 3, 32, 32) normalised, labels long (n)) from the binary batches."""
    files = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
    raw = b"".join(open(os.path.join(data_dir, f), "rb").read() for f in files)
    rec = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, 3073)
    if subset:
        rec = rec[:subset]
    labels = rec[:, 0].long()
    images = rec[:, 1:].view(-1, 3, 32, 32).float() / 255.0
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (images - mean) / std, labels


def newton_schulz(g, steps, eps=1e-7, coeffs=(3.4445, -4.7750, 2.0315)):
    """The quintic iteration on g (rows, cols), transposed when rows > cols."""
    a, b, c = coeffs
    x = g / (g.norm() + eps)
    tall = x.size(0) > x.size(1)
    if tall:
        x = x.t()
    for _ in range(steps):
        s = x @ x.t()
        x = a * x + (b * s + c * (s @ s)) @ x
    return x.t() if tall else x


class Muon:
    """Momentum, Nesterov, renormalised weight, orthogonalised step; no weight decay."""

    def __init__(self, params, lr, momentum, steps):
        self.params, self.lr, self.momentum, self.steps = list(params), lr, momentum, steps
        self.bufs = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, lr):
        for p, buf in zip(self.params, self.bufs):
            g = p.grad
            buf.mul_(self.momentum).add_(g)
            u = g + self.momentum * buf
            p.mul_(math.sqrt(p.size(0)) / p.norm())
            p.sub_(lr * newton_schulz(u.reshape(p.size(0), -1), self.steps).view_as(p))


class GroupNet(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.whiten = nn.Conv2d(3, 24, 2, bias=True)
        self.whiten.weight.requires_grad_(False)
        blocks, c_in = [], 24
        for w in widths:
            blocks += [self._conv(c_in, w), nn.MaxPool2d(2), self._bn(w), nn.GELU(),
                       self._conv(w, w), self._bn(w), nn.GELU()]
            c_in = w
        self.body = nn.Sequential(nn.GELU(), *blocks, nn.MaxPool2d(3))
        self.head = nn.Linear(c_in, 10, bias=False)
        with torch.no_grad():
            self.head.weight.div_(self.head.weight.std())

    @staticmethod
    def _conv(c_in, c_out):
        conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        with torch.no_grad():
            nn.init.dirac_(conv.weight[:c_in])
        return conv

    @staticmethod
    def _bn(c):
        bn = nn.BatchNorm2d(c, eps=1e-12, momentum=0.4)
        bn.weight.requires_grad_(False)
        return bn

    def init_whiten(self, images, eps=5e-4):
        patches = images.unfold(2, 2, 1).unfold(3, 2, 1).permute(0, 2, 3, 1, 4, 5)
        flat = patches.reshape(-1, 12).double()
        cov = flat.t() @ flat / len(flat)
        vals, vecs = torch.linalg.eigh(cov)
        filt = (vecs.t() / torch.sqrt(vals.view(-1, 1) + eps)).view(12, 3, 2, 2).float()
        with torch.no_grad():
            self.whiten.weight.copy_(torch.cat([filt, -filt]))

    def forward(self, x):
        x = self.body(self.whiten(x)).flatten(1)
        return self.head(x) / x.size(1)


def batches(images, labels, batch, epoch, flips, gen):
    """The epoch's shuffled full batches: alternating flips, random 2-pixel translations."""
    imgs = torch.where(flips.view(-1, 1, 1, 1) ^ bool(epoch % 2), images.flip(-1), images)
    padded = F.pad(imgs, (2, 2, 2, 2), mode="reflect")
    dx = torch.randint(0, 5, (len(imgs),), generator=gen)
    dy = torch.randint(0, 5, (len(imgs),), generator=gen)
    order = torch.randperm(len(imgs), generator=gen)
    for i in range(len(imgs) // batch):
        idx = order[i * batch:(i + 1) * batch]
        crops = torch.stack([padded[j, :, dy[j]:dy[j] + 32, dx[j]:dx[j] + 32] for j in idx])
        yield crops, labels[idx]


@torch.no_grad()
def evaluate(net, images, labels):
    net.eval()
    correct = 0
    for i in range(0, len(images), 1000):
        x = images[i:i + 1000]
        pad = F.pad(x, (1, 1, 1, 1), mode="reflect")
        views = [(x, 0.25), (pad[:, :, :32, :32], 0.125), (pad[:, :, 2:, 2:], 0.125)]
        logits = sum(w * (net(v) + net(v.flip(-1))) for v, w in views)
        correct += (logits.argmax(1) == labels[i:i + 1000]).sum().item()
    net.train()
    return correct / len(images)


def run(seed, args, train, test):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = GroupNet(args.widths)
    net.init_whiten(train[0][:5000])
    steps_per_epoch = len(train[0]) // args.batch
    total = args.epochs * steps_per_epoch
    whiten_steps = 3 * steps_per_epoch
    wd = 2e-6 * args.batch
    bn_biases = [m.bias for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    groups = [dict(params=[net.whiten.bias], lr=0.053, weight_decay=wd / 0.053),
              dict(params=bn_biases, lr=0.053, weight_decay=wd / 0.053),
              dict(params=[net.head.weight], lr=0.67, weight_decay=wd / 0.67)]
    sgd = torch.optim.SGD(groups, momentum=0.85, nesterov=True)
    base = [g["lr"] for g in sgd.param_groups]
    filters = [p for n, p in net.named_parameters() if p.ndim == 4 and p.requires_grad]
    muon = Muon(filters, 0.24, 0.6, args.ns_steps)
    flips = torch.rand(len(train[0]), generator=gen) < 0.5
    step, t0 = 0, time.time()
    for epoch in range(args.epochs):
        for x, y in batches(*train, args.batch, epoch, flips, gen):
            net.whiten.bias.requires_grad_(step < whiten_steps)
            loss = F.cross_entropy(net(x), y, label_smoothing=0.2, reduction="sum")
            loss.backward()
            sgd.param_groups[0]["lr"] = base[0] * max(0.0, 1 - step / whiten_steps)
            for g, b in zip(sgd.param_groups[1:], base[1:]):
                g["lr"] = b * (1 - step / total)
            sgd.step()
            muon.step(0.24 * (1 - step / total))
            net.zero_grad(set_to_none=True)
            step += 1
    acc = evaluate(net, *test)
    print(f"seed {seed}: test accuracy {100 * acc:.2f} % ({time.time() - t0:.1f} s)", flush=True)
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("DAWNRUN_DATA", "data/cifar-10-batches-bin"))
    ap.add_argument("--widths", default="64,256,256")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--ns-steps", type=int, default=3)
    ap.add_argument("--train-subset", type=int, default=0)
    ap.add_argument("--test-subset", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    args.widths = [int(w) for w in args.widths.split(",")]
    torch.set_num_threads(args.threads)
    train = load_cifar(args.data, True, args.train_subset)
    test = load_cifar(args.data, False, args.test_subset)
    accs = [run(s, args, train, test) for s in range(args.seeds)]
    print(f"median {100 * statistics.median(accs):.2f} % over {len(accs)} seeds "
          f"(min {100 * min(accs):.2f}, max {100 * max(accs):.2f})")


if __name__ == "__main__":
    main()
