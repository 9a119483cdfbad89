#!/usr/bin/env python3
"""Independent plain-Python reference of kernels/rng.h, kernels/augment.h and the dropout
mask of kernels/dropout.h.

Writes tests/vectors/augment_vectors.h, the known answers that tests/test_rng.c and
tests/test_augment.c compare the C code against. Needs only the Python standard
library; the tests themselves never run Python.

    python3 tests/vectors/gen_vectors.py > tests/vectors/augment_vectors.h

fp32 arithmetic is reproduced exactly: every value is an fp32 operand, each +, -, *, /
is done in double (exact or correctly rounded, then rounded once to fp32, which gives
the fp32 result because double has more than 2 * 24 + 2 bits).
"""
import struct
import sys

M32 = 0xFFFFFFFF

# ----------------------------------------------------------------------------- Philox
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def mulhilo(a, b):
    p = a * b
    return p >> 32, p & M32


def philox4x32(ctr, key, rounds=10):
    """Philox4x32-R as published: round 1 with the key, the key bumped before rounds 2..R."""
    x = list(ctr)
    k = list(key)
    for r in range(rounds):
        if r > 0:
            k = [(k[0] + PHILOX_W0) & M32, (k[1] + PHILOX_W1) & M32]
        hi0, lo0 = mulhilo(PHILOX_M0, x[0])
        hi1, lo1 = mulhilo(PHILOX_M1, x[2])
        x = [hi1 ^ x[1] ^ k[0], lo1, hi0 ^ x[3] ^ k[1], lo0]
    return x


# Random123 known answers (kat_vectors, philox4x32 10): counter, key, expected.
KAT = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([M32, M32, M32, M32], [M32, M32], [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]

STREAM_INIT, STREAM_SHUFFLE, STREAM_AUGMENT, STREAM_DROPOUT = 1, 2, 3, 4


def draw(seed, stream, epoch, index, sub):
    return philox4x32([index & M32, epoch & M32, stream, sub],
                      [seed & M32, (seed >> 32) & M32])


def below(u, n):
    return (u * n) >> 32


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def unit(u):
    return f32((u >> 8) / 16777216.0)


def dropout_keep(seed, step, layer, i, p):
    """Whether element i (canonical NCHW index) of layer `layer` is kept at `step`."""
    return unit(draw(seed, STREAM_DROPOUT, step, i // 4, layer)[i % 4]) >= f32(p)


def shuffle(n, seed, epoch):
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        j = below(draw(seed, STREAM_SHUFFLE, epoch, i, 0)[0], i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def init_uniform(count, seed, ordinal, bound):
    b = f32(bound)
    out = []
    for e in range(count):
        u = draw(seed, STREAM_INIT, ordinal, e // 4, 0)[e % 4]
        t = f32(f32(2.0 * unit(u)) - 1.0)
        out.append(f32(t * b))
    return out


# ----------------------------------------------------------------------- augmentation
IMG = 32
MEAN = [f32(125.31), f32(122.95), f32(113.87)]
STD = [f32(62.99), f32(62.09), f32(66.70)]


class Params:
    def __init__(self, pad, reflect, crop, flip, cutout):
        self.pad, self.reflect, self.crop, self.flip, self.cutout = pad, reflect, crop, flip, cutout


def augment_draw(p, seed, epoch, row):
    cx = cy = p.pad
    flip = cutx = cuty = 0
    r = draw(seed, STREAM_AUGMENT, epoch, row, 0)
    if p.crop:
        cx = below(r[0], 2 * p.pad + 1)
        cy = below(r[1], 2 * p.pad + 1)
    if p.flip:
        flip = r[2] >> 31
    if p.cutout > 0:
        s = draw(seed, STREAM_AUGMENT, epoch, row, 1)
        cutx = below(s[0], IMG - p.cutout + 1)
        cuty = below(s[1], IMG - p.cutout + 1)
    return (cx, cy, flip, cutx, cuty)


def normalise(v, c):
    return f32(f32(v - MEAN[c]) / STD[c])


def augment_image(img, p, seed, epoch, row):
    """img: list of 3072 ints in plane order. Returns 3072 floats (3, 32, 32)."""
    norm = [[[normalise(img[c * 1024 + y * 32 + x], c) for x in range(IMG)] for y in range(IMG)]
            for c in range(3)]
    if p is None:
        return [norm[c][y][x] for c in range(3) for y in range(IMG) for x in range(IMG)]
    size = IMG + 2 * p.pad

    def src(i):  # padded coordinate -> image coordinate, None = zero padding
        i -= p.pad
        if 0 <= i < IMG:
            return i
        if not p.reflect:
            return None
        return -i if i < 0 else 2 * (IMG - 1) - i

    padded = [[[0.0] * size for _ in range(size)] for _ in range(3)]
    for c in range(3):
        for py in range(size):
            for px in range(size):
                sy, sx = src(py), src(px)
                if sy is not None and sx is not None:
                    padded[c][py][px] = norm[c][sy][sx]
    cx, cy, flip, cutx, cuty = augment_draw(p, seed, epoch, row)
    out = [[[padded[c][cy + y][cx + x] for x in range(IMG)] for y in range(IMG)] for c in range(3)]
    if flip:
        out = [[list(reversed(line)) for line in plane] for plane in out]
    if p.cutout > 0:
        for c in range(3):
            for y in range(cuty, cuty + p.cutout):
                for x in range(cutx, cutx + p.cutout):
                    out[c][y][x] = 0.0
    return [out[c][y][x] for c in range(3) for y in range(IMG) for x in range(IMG)]


def synthetic_image(which):
    """The two synthetic test images, also built by tests/test_augment.c."""
    if which == 0:   # asymmetric ramps: value depends on channel, row and column
        return [(c * 80 + y * 7 + x * 3 + (x * y) % 5) & 255
                for c in range(3) for y in range(IMG) for x in range(IMG)]
    s = 2463534242   # noise: a 32-bit LCG, top byte
    out = []
    for _ in range(3 * IMG * IMG):
        s = (s * 1664525 + 1013904223) & M32
        out.append(s >> 24)
    return out


def batch(images, rows, p, seed, epoch):
    """(3, n, 32, 32) output of augment_batch_cpu for dataset `images` and batch `rows`."""
    per = [augment_image(images[r], p, seed, epoch, r) for r in rows]
    n = len(rows)
    return [per[i][c * 1024 + k] for c in range(3) for i in range(n) for k in range(1024)]


def fnv1a64_floats(vals):
    h = 0xCBF29CE484222325
    for v in vals:
        for byte in struct.pack("<f", v):
            h ^= byte
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# ------------------------------------------------------------------------------ output
SEEDS = [0, 1, 12345678901]
EPOCHS = [0, 3]
ROWS = [0, 1, 2, 7, 1000, 49999]
SHUFFLE_N = 50000
SHUFFLE_HEAD = 20
PAGE = Params(4, True, True, True, 8)        # Page's DAWN recipe
PARAM_SETS = [
    ("pad 4 reflect, crop, flip, cutout 8", "{4, PAD_REFLECT, 1, 1, 8}", PAGE),
    ("pad 4 zero, crop, flip, cutout 8", "{4, PAD_ZERO, 1, 1, 8}", Params(4, False, True, True, 8)),
    ("pad 2 reflect, crop only", "{2, PAD_REFLECT, 1, 0, 0}", Params(2, True, True, False, 0)),
    ("pad 16 reflect, crop, flip, cutout 5", "{16, PAD_REFLECT, 1, 1, 5}",
     Params(16, True, True, True, 5)),
    ("test batch: normalise only", None, None),
]
FULL_SEED, FULL_EPOCH = 12345678901, 3


def hexlist(vals, per_line, fmt):
    lines = []
    for i in range(0, len(vals), per_line):
        lines.append("    " + ", ".join(fmt % v for v in vals[i:i + per_line]) + ",")
    return "\n".join(lines)


def main():
    for ctr, key, want in KAT:
        got = philox4x32(ctr, key)
        if got != want:
            sys.exit("Philox KAT mismatch: %s %s -> %s, expected %s" % (ctr, key, got, want))
    out = []
    w = out.append
    w("/* Known answers for kernels/rng.h, kernels/augment.h and the dropout mask, generated by")
    w(" * tests/vectors/gen_vectors.py (an independent plain-Python implementation). Do not")
    w(" * edit: regenerate with  python3 tests/vectors/gen_vectors.py > tests/vectors/augment_vectors.h")
    w(" * Used by tests/test_rng.c and tests/test_augment.c. */")
    w("#ifndef DAWNRUN_TESTS_AUGMENT_VECTORS_H")
    w("#define DAWNRUN_TESTS_AUGMENT_VECTORS_H")
    w("")
    w("#include <stdint.h>")
    w("")
    w("/* Random123 kat_vectors, philox4x32 10: counter[4], key[2], expected[4]. */")
    w("static const uint32_t VEC_PHILOX_KAT[%d][10] = {" % len(KAT))
    for ctr, key, want in KAT:
        w("    {" + ", ".join("0x%08x" % v for v in ctr + key + want) + "},")
    w("};")
    w("")
    # rng_draw for each stream
    w("/* rng_draw(seed, stream, epoch, index, sub) -> 4 words. */")
    w("struct vec_draw { uint64_t seed; uint32_t stream, epoch, index, sub; uint32_t v[4]; };")
    cases = []
    for seed in SEEDS:
        for stream in (STREAM_INIT, STREAM_SHUFFLE, STREAM_AUGMENT):
            for (epoch, index, sub) in ((0, 0, 0), (3, 49999, 1), (7, 123, 0)):
                cases.append((seed, stream, epoch, index, sub, draw(seed, stream, epoch, index, sub)))
    w("static const struct vec_draw VEC_DRAW[%d] = {" % len(cases))
    for seed, stream, epoch, index, sub, v in cases:
        w("    {%duLL, %d, %d, %d, %d, {%s}}," % (seed, stream, epoch, index, sub,
                                               ", ".join("0x%08x" % x for x in v)))
    w("};")
    w("")
    # rng_below / rng_unit
    us = [0, 1, 0x7FFFFFFF, 0x80000000, 0xDEADBEEF, 0xFFFFFFFF, 0x12345678, 0x9E3779B9]
    ns = [1, 2, 9, 10, 25, 50000]
    w("/* rng_below(u, n) and rng_unit(u) (float bits). */")
    w("struct vec_below { uint32_t u, n, r; };")
    bel = [(u, n, below(u, n)) for u in us for n in ns]
    w("static const struct vec_below VEC_BELOW[%d] = {" % len(bel))
    w(hexlist(bel, 3, "{0x%08x, %u, %u}"))
    w("};")
    w("struct vec_unit { uint32_t u, bits; };")
    w("static const struct vec_unit VEC_UNIT[%d] = {" % len(us))
    w(hexlist([(u, f32_bits(unit(u))) for u in us], 4, "{0x%08x, 0x%08x}"))
    w("};")
    w("")
    # shuffle
    w("/* shuffle_epoch(perm, %d, seed, epoch): the first %d entries. */" % (SHUFFLE_N, SHUFFLE_HEAD))
    w("#define VEC_SHUFFLE_N %d" % SHUFFLE_N)
    w("#define VEC_SHUFFLE_HEAD %d" % SHUFFLE_HEAD)
    w("struct vec_shuffle { uint64_t seed; int epoch; int32_t head[VEC_SHUFFLE_HEAD]; };")
    sh = [(seed, epoch, shuffle(SHUFFLE_N, seed, epoch)[:SHUFFLE_HEAD])
          for seed in SEEDS for epoch in EPOCHS]
    w("static const struct vec_shuffle VEC_SHUFFLE[%d] = {" % len(sh))
    for seed, epoch, head in sh:
        w("    {%duLL, %d, {%s}}," % (seed, epoch, ", ".join(str(v) for v in head)))
    w("};")
    small = [(seed, epoch, shuffle(10, seed, epoch)) for seed in SEEDS for epoch in EPOCHS]
    w("/* shuffle_epoch(perm, 10, seed, epoch): the whole permutation. */")
    w("struct vec_shuffle10 { uint64_t seed; int epoch; int32_t perm[10]; };")
    w("static const struct vec_shuffle10 VEC_SHUFFLE10[%d] = {" % len(small))
    for seed, epoch, perm in small:
        w("    {%duLL, %d, {%s}}," % (seed, epoch, ", ".join(str(v) for v in perm)))
    w("};")
    w("")
    # init_uniform
    inits = [(seed, ordinal, bound, init_uniform(10, seed, ordinal, bound))
             for seed in SEEDS for ordinal, bound in ((0, 0.125), (5, 0.0589255650988789))]
    w("/* init_uniform(w, 10, seed, ordinal, bound): float bits of the 10 values. */")
    w("struct vec_init { uint64_t seed; int ordinal; float bound; uint32_t bits[10]; };")
    w("static const struct vec_init VEC_INIT[%d] = {" % len(inits))
    for seed, ordinal, bound, vals in inits:
        w("    {%duLL, %d, %sf, {%s}}," % (seed, ordinal, repr(f32(bound)), ", ".join(
            "0x%08x" % f32_bits(v) for v in vals)))
    w("};")
    w("")
    # augment_draw
    w("/* augment_draw(p, seed, epoch, row) with p = {4, PAD_REFLECT, 1, 1, 8} and with")
    w(" * p = {16, PAD_ZERO, 1, 1, 5}: crop_x, crop_y, flip, cut_x, cut_y. */")
    w("struct vec_choice { int pad16; uint64_t seed; int epoch, row; int crop_x, crop_y, flip, cut_x, cut_y; };")
    ch = []
    for pad16, p in ((0, PAGE), (1, Params(16, False, True, True, 5))):
        for seed in SEEDS:
            for epoch in EPOCHS:
                for row in ROWS:
                    ch.append((pad16, seed, epoch, row) + augment_draw(p, seed, epoch, row))
    w("static const struct vec_choice VEC_CHOICE[%d] = {" % len(ch))
    for c in ch:
        w("    {%d, %duLL, %d, %d, %d, %d, %d, %d, %d}," % c)
    w("};")
    w("")
    # full pixels
    imgs = [synthetic_image(0), synthetic_image(1)]
    rows = [1, 0]
    full = batch(imgs, rows, PAGE, FULL_SEED, FULL_EPOCH)
    choices = [augment_draw(PAGE, FULL_SEED, FULL_EPOCH, r) for r in rows]
    w("/* The synthetic dataset of two images (see synthetic_image() in gen_vectors.py and")
    w(" * its twin in tests/test_augment.c), batch rows {1, 0}, p = {4, PAD_REFLECT, 1, 1, 8},")
    w(" * seed %d, epoch %d; choices (crop_x, crop_y, flip, cut_x, cut_y) per batch item:" % (FULL_SEED, FULL_EPOCH))
    for r, c in zip(rows, choices):
        w(" *   row %d: %s" % (r, c))
    w(" * The whole (3, 2, 32, 32) output as float bits. */")
    w("#define VEC_FULL_SEED %duLL" % FULL_SEED)
    w("#define VEC_FULL_EPOCH %d" % FULL_EPOCH)
    w("static const int32_t VEC_FULL_ROWS[2] = {1, 0};")
    w("static const uint32_t VEC_FULL[%d] = {" % len(full))
    w(hexlist([f32_bits(v) for v in full], 8, "0x%08x"))
    w("};")
    w("")
    w("/* The dropout mask (kernels/dropout.h): bit i of keep = element i (NCHW index) kept, for")
    w(" * elements 0 .. 63 at (seed, step, layer, p). */")
    w("struct vec_dropout { uint64_t seed; uint32_t step, layer; float p; uint64_t keep; };")
    drops = []
    for seed in (0, 0x0123456789ABCDEF):
        for step, layer, p in ((0, 1, 0.5), (123457, 5, 0.3), (0x7FFFFFFF, 17, 0.9)):
            keep = sum(1 << i for i in range(64) if dropout_keep(seed, step, layer, i, p))
            drops.append((seed, step, layer, p, keep))
    w("static const struct vec_dropout VEC_DROPOUT[%d] = {" % len(drops))
    for seed, step, layer, p, keep in drops:
        w("    {0x%016xuLL, %u, %u, %gf, 0x%016xuLL}," % (seed, step, layer, p, keep))
    w("};")
    w("/* FNV-1a 64 of the little-endian float bytes of augment_batch_cpu's whole output for")
    w(" * the synthetic dataset, batch rows {1, 0, 1}, over parameter sets, seeds and epochs. */")
    w("static const int32_t VEC_SUM_ROWS[3] = {1, 0, 1};")
    w("struct vec_sum { int params; uint64_t seed; int epoch; uint64_t fnv; };")
    sums = []
    for k, (_, _, p) in enumerate(PARAM_SETS):
        for seed in SEEDS:
            for epoch in EPOCHS:
                sums.append((k, seed, epoch, fnv1a64_floats(batch(imgs, [1, 0, 1], p, seed, epoch))))
    w("/* params index: " + "; ".join("%d = %s" % (k, d) for k, (d, _, _) in enumerate(PARAM_SETS)) + " */")
    w("static const struct vec_sum VEC_SUM[%d] = {" % len(sums))
    for s in sums:
        w("    {%d, %duLL, %d, 0x%016xuLL}," % s)
    w("};")
    w("")
    w("#endif")
    print("\n".join(out))


if __name__ == "__main__":
    main()
