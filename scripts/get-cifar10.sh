#!/bin/sh
# Downloads the CIFAR-10 binary version into DEST (default: data), giving
# DEST/cifar-10-batches-bin, the directory dawnrun reads by default. Verifies the
# archive's MD5, and does nothing when a complete copy is already there.
#
#   scripts/get-cifar10.sh [DEST]
#
# Without network access, point dawnrun at an existing copy instead:
#   export DAWNRUN_DATA=/path/to/cifar-10-batches-bin
# DAWNRUN_CIFAR10_URL overrides the download address (a mirror, or a file:// URL).
set -eu

URL=${DAWNRUN_CIFAR10_URL:-https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz}
MD5=c32a1d4ab5d03f1284b67883e8d87530
RECORD_FILE_BYTES=30730000   # 10000 records of 3073 bytes
FILES="data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin"

DEST=${1:-data}
OUT=$DEST/cifar-10-batches-bin
ARCHIVE=$DEST/cifar-10-binary.tar.gz

say() { printf 'get-cifar10: %s\n' "$*"; }
die() { printf 'get-cifar10: error: %s\n' "$*" >&2; exit 1; }

offline_help() {
    cat >&2 <<MSG
get-cifar10: could not download $URL
  If this machine has no network access, copy the CIFAR-10 binary batches
  (data_batch_1..5.bin, test_batch.bin) from elsewhere and either put them in
  $OUT or set DAWNRUN_DATA to the directory that holds them:
      export DAWNRUN_DATA=/path/to/cifar-10-batches-bin
MSG
}

# Size of a file in bytes (following symbolic links).
file_size() { wc -c < "$1" | tr -d ' '; }

# Exit status 0 when every batch file is present with the full size.
is_complete() {
    for f in $FILES; do
        [ -f "$1/$f" ] || return 1
        [ "$(file_size "$1/$f")" = "$RECORD_FILE_BYTES" ] || return 1
    done
}

md5_of() {
    if command -v md5sum >/dev/null 2>&1; then
        md5sum "$1" | cut -d' ' -f1
    elif command -v md5 >/dev/null 2>&1; then
        md5 -q "$1"
    else
        die "neither md5sum nor md5 is installed; cannot verify the download"
    fi
}

download() {
    if command -v curl >/dev/null 2>&1; then
        curl -fL --progress-bar --retry 2 --connect-timeout 20 -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -O "$2" "$1"
    else
        die "neither curl nor wget is installed"
    fi
}

if is_complete "$OUT"; then
    say "CIFAR-10 is already present and complete in $OUT; nothing to do."
    exit 0
fi

mkdir -p "$DEST" || die "cannot create $DEST"

if [ -f "$ARCHIVE" ] && [ "$(md5_of "$ARCHIVE")" = "$MD5" ]; then
    say "using the verified archive already in $ARCHIVE"
else
    say "downloading $URL (about 163 MB)"
    rm -f "$ARCHIVE.part"
    if ! download "$URL" "$ARCHIVE.part"; then
        rm -f "$ARCHIVE.part"
        offline_help
        exit 1
    fi
    got=$(md5_of "$ARCHIVE.part")
    if [ "$got" != "$MD5" ]; then
        rm -f "$ARCHIVE.part"
        die "MD5 mismatch for the downloaded archive: got $got, expected $MD5; the file was deleted (corrupt or truncated download, or a wrong URL)"
    fi
    mv "$ARCHIVE.part" "$ARCHIVE"
fi

say "extracting into $DEST"
tar -xzf "$ARCHIVE" -C "$DEST" || die "extracting $ARCHIVE failed"
is_complete "$OUT" || die "$ARCHIVE did not yield the complete set of batch files in $OUT"
rm -f "$ARCHIVE"
say "CIFAR-10 is ready in $OUT"
if [ "$OUT" != "data/cifar-10-batches-bin" ]; then
    say "dawnrun looks in data/cifar-10-batches-bin by default; set DAWNRUN_DATA=$OUT or data.dir in the config"
fi
