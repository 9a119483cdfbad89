#!/usr/bin/env python3
"""File handling of the GPU protocol (docs/gpu.md), in Python's standard library only, so
that it works on a GPU machine that has python3 but perhaps no xz, dpkg or sha256sum.

  gpu_unpack.py pack DIR ARCHIVE NAME... pack DIR/NAME... into ARCHIVE (.tar.xz)
  gpu_unpack.py tar ARCHIVE DEST         unpack a .tar.xz / .tar.gz / .tar into DEST
  gpu_unpack.py deb DEST DEB...          unpack .deb files (their data.tar.*) into DEST
  gpu_unpack.py split SRC_DIR OUT_DIR MIB FILE...
                                         pack FILE... of SRC_DIR into one uncompressed tar,
                                         cut it into pieces of at most MIB MiB, written as
                                         OUT_DIR/part-K/chunk with OUT_DIR/part-K/MANIFEST
                                         (the pieces' and the files' SHA-256 sums)
  gpu_unpack.py join PARTS_DIR DEST      when PARTS_DIR holds every piece named in a
                                         MANIFEST: checks each piece's sum, joins them,
                                         unpacks into DEST and checks each file's sum;
                                         exit 0 done, 3 pieces missing, 1 a sum differs
  gpu_unpack.py sums FILE...             SHA-256 of each file, as sha256sum prints it
"""
import hashlib
import io
import os
import shutil
import sys
import tarfile


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# Python 3.12 warns unless told how to treat members; the "data" filter refuses paths that
# leave DEST (older Pythons lack it and extract as before).
SAFE = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}


def untar(archive, dest):
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive) as t:
        t.extractall(dest, **SAFE)


def pack(src, archive, names):
    with tarfile.open(archive, "w:xz", preset=6) as t:
        for n in names:
            t.add(os.path.join(src, n), arcname=n)


def undeb(dest, debs):
    """A .deb is an ar archive: a 60-byte header per member, data padded to even size."""
    os.makedirs(dest, exist_ok=True)
    for deb in debs:
        with open(deb, "rb") as f:
            if f.read(8) != b"!<arch>\n":
                sys.exit("%s: not a .deb" % deb)
            while True:
                head = f.read(60)
                if len(head) < 60:
                    sys.exit("%s: no data.tar member" % deb)
                name = head[:16].decode().strip().rstrip("/")
                size = int(head[48:58].decode().strip())
                data = f.read(size)
                if size % 2:
                    f.read(1)
                if name.startswith("data.tar"):
                    with tarfile.open(fileobj=io.BytesIO(data)) as t:
                        t.extractall(dest, **SAFE)
                    break


def split(src, out, mib, names):
    limit = int(mib) << 20
    os.makedirs(out, exist_ok=True)
    file_sums = [(n, sha256(os.path.join(src, n))) for n in names]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for n in names:
            info = t.gettarinfo(os.path.join(src, n), arcname=n)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(os.path.join(src, n), "rb") as f:
                t.addfile(info, f)
    blob = buf.getvalue()
    count = (len(blob) + limit - 1) // limit
    pieces = [blob[i * limit:(i + 1) * limit] for i in range(count)]
    lines = ["pieces %d" % count]
    lines += ["piece %d %s %d" % (k + 1, hashlib.sha256(p).hexdigest(), len(p))
              for k, p in enumerate(pieces)]
    lines += ["file %s %s" % (n, s) for n, s in file_sums]
    for k, p in enumerate(pieces):
        d = os.path.join(out, "part-%d" % (k + 1))
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "chunk"), "wb") as f:
            f.write(p)
        with open(os.path.join(d, "MANIFEST"), "w") as f:
            f.write("\n".join(lines + ["this %d" % (k + 1)]) + "\n")
        print("%s/chunk: %.1f MiB" % (d, len(p) / 1048576.0))


def join(parts, dest):
    manifests = [os.path.join(parts, d, "MANIFEST") for d in sorted(os.listdir(parts))
                 if os.path.isfile(os.path.join(parts, d, "MANIFEST"))]
    if not manifests:
        print("no pieces yet in %s" % parts)
        return 3
    pieces, files = {}, []
    for line in open(manifests[0]):
        w = line.split()
        if w[0] == "piece":
            pieces[int(w[1])] = (w[2], int(w[3]))
        elif w[0] == "file":
            files.append((w[1], w[2]))
    missing = [k for k in pieces
               if not os.path.isfile(os.path.join(parts, "part-%d" % k, "chunk"))]
    if missing:
        print("pieces %s of %d still missing" % (" ".join(map(str, missing)), len(pieces)))
        return 3
    buf = io.BytesIO()
    for k in sorted(pieces):
        data = open(os.path.join(parts, "part-%d" % k, "chunk"), "rb").read()
        if hashlib.sha256(data).hexdigest() != pieces[k][0] or len(data) != pieces[k][1]:
            print("piece %d: SHA-256 or size differs from the manifest" % k)
            return 1
        buf.write(data)
    buf.seek(0)
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(fileobj=buf) as t:
        t.extractall(dest, **SAFE)
    bad = 0
    for n, s in files:
        ok = sha256(os.path.join(dest, n)) == s
        bad += not ok
        print("%s  %s  %s" % (s, n, "ok" if ok else "DIFFERS"))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "pack":
        pack(argv[2], argv[3], argv[4:])
    elif len(argv) >= 4 and argv[1] == "tar":
        untar(argv[2], argv[3])
    elif len(argv) >= 4 and argv[1] == "deb":
        undeb(argv[2], argv[3:])
    elif len(argv) >= 6 and argv[1] == "split":
        split(argv[2], argv[3], argv[4], argv[5:])
    elif len(argv) == 4 and argv[1] == "join":
        return join(argv[2], argv[3])
    elif len(argv) >= 3 and argv[1] == "sums":
        for p in argv[2:]:
            print("%s  %s" % (sha256(p), p))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
