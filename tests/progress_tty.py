#!/usr/bin/env python3
"""The progress line on a terminal (a pseudo-terminal) and its absence elsewhere.

`dawnrun train` and `dawnrun run` of a tiny config under a pty: a line with the epoch,
step/steps, images/s, the epoch's and the run's ETA and the latest known train loss
appears, and once the output is rendered as a terminal shows it (\\r returns to the
line's start, characters overwrite), no line that was followed by other output (an epoch
row, a message, the report) keeps any of it. A run stopped by SIGINT mid-epoch erases it
before its message. With stdout a pipe, no progress bytes appear at all.

usage: progress_tty.py DAWNRUN SOURCE_DIR TMP_DIR     (exit 0 ok, 1 failed)
"""
import os
import pty
import re
import signal
import subprocess
import sys
import time

LINE = re.compile(r"^ *(\d+) \[[# ]{20}\] (\d+)/(\d+)  (\d+|-) img/s  epoch ETA (\S+)  "
                  r"run ETA (\S+)  loss (-|\S+ \(epoch \d+\))$")
DURATION = re.compile(r"^\d+:\d\d(:\d\d)?$")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run_pty(argv, interrupt_when=None):
    """Runs argv on a new pty; returns (exit code, bytes written to the terminal, with
    the terminal's \\r\\n turned back into \\n). interrupt_when(bytes so far) -> True sends
    SIGINT once."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out = b""
    sent = False
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        try:
            data = os.read(fd, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
        if interrupt_when and not sent and interrupt_when(out):
            os.kill(pid, signal.SIGINT)
            sent = True
    else:
        os.kill(pid, signal.SIGKILL)
        fail(f"{' '.join(argv[1:3])}: still running after 150 s")
    os.close(fd)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st), out.replace(b"\r\n", b"\n").decode("utf-8", "replace")


def segments(out):
    """Every text drawn after a \\r (the progress lines, and what follows an erase)."""
    segs = []
    for line in out.split("\n"):
        segs.extend(line.split("\r")[1:])
    return segs


def render(out):
    """The lines as a terminal shows them at the end."""
    lines = []
    for line in out.split("\n"):
        screen = []
        col = 0
        for ch in line:
            if ch == "\r":
                col = 0
                continue
            if col < len(screen):
                screen[col] = ch
            else:
                screen.append(ch)
            col += 1
        lines.append("".join(screen).rstrip(" "))
    return lines


def check_lines(what, out, epochs):
    drawn = [m for m in (LINE.match(s.rstrip(" ")) for s in segments(out)) if m]
    if not drawn:
        fail(f"{what}: no progress line with step/steps, img/s, ETAs and loss; output:\n{out}")
        return
    timed = [m for m in drawn if m.group(4) != "-" and int(m.group(4)) > 0
             and DURATION.match(m.group(5)) and DURATION.match(m.group(6))]
    if not timed:
        fail(f"{what}: no progress line with a rate and both ETAs: {drawn[-1].group(0)}")
    for m in drawn:
        if int(m.group(2)) >= int(m.group(3)) or int(m.group(1)) > epochs:
            fail(f"{what}: a line past its epoch's steps: {m.group(0)}")
    later = [m for m in drawn if int(m.group(1)) >= 2]
    if epochs >= 2 and not any(m.group(7).endswith(f"(epoch {int(m.group(1)) - 1})")
                               for m in later):
        fail(f"{what}: no line of epoch 2 or later shows the previous epoch's loss")
    if any(m.group(7) != "-" for m in drawn if int(m.group(1)) == 1):
        fail(f"{what}: a loss shown during the first epoch, before any is known")
    for i, text in enumerate(render(out)):
        if "img/s" in text or "ETA" in text:
            fail(f"{what}: line {i + 1} as the terminal shows it keeps progress text: {text!r}")


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    dr, src, tmp = argv[1:]
    cfg = os.path.join(src, "tests", "e2e", "tiny.cfg")
    fast = ["--engine", "cpu", "--threads", "1", "--set", "data.train_subset=1280",
            "--set", "data.test_subset=500"]

    rc, out = run_pty([dr, "train", cfg, *fast, "--set", "train.epochs=2"])
    if rc != 0:
        fail(f"train on a terminal exited {rc}:\n{out}")
    check_lines("train", out, 2)
    if not re.search(r"^final test acc ", out.split("\r")[-1], re.M):
        fail("train: no final line after the progress line")

    db = os.path.join(tmp, "progress.db")
    rc, out = run_pty([dr, "run", cfg, *fast, "--set", "train.epochs=2", "--seeds", "2",
                       "--db", db])
    if rc != 0:
        fail(f"run on a terminal exited {rc}:\n{out}")
    check_lines("run", out, 2)

    # SIGINT in the middle of epoch 2: the message comes on a clean line
    def mid_epoch(out):
        return re.search(rb"\r +2 \[[# ]+\] [3-9]/", out) is not None
    rc, out = run_pty([dr, "train", cfg, *fast, "--set", "train.epochs=3",
                       "--set", "data.train_subset=2560"], interrupt_when=mid_epoch)
    if rc != 130:
        fail(f"train interrupted on a terminal exited {rc}, expected 130:\n{out}")
    check_lines("train interrupted", out, 3)

    # not a terminal: nothing of the line
    for cmd in (["train", cfg, *fast, "--set", "train.epochs=2"],
                ["run", cfg, *fast, "--set", "train.epochs=2", "--seeds", "1", "--db",
                 os.path.join(tmp, "pipe.db")]):
        p = subprocess.run([dr, *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=150)
        if p.returncode != 0:
            fail(f"{cmd[0]} into a pipe exited {p.returncode}")
        if b"\r" in p.stdout or b"img/s" in p.stdout or b"ETA" in p.stdout:
            fail(f"{cmd[0]} into a pipe wrote progress bytes:\n{p.stdout!r}")
        if not re.search(rb"^ +2 ", p.stdout, re.M):
            fail(f"{cmd[0]} into a pipe printed no epoch row")

    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
