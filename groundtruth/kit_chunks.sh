#!/usr/bin/env bash
# Cut the files a lent GPU host needs (the SGLang kit, SGLang's FA3 kernel file) into carry-sized chunks, one per
# top-level git-ignored directory .xfer0/, .xfer1/, ... (each with a copy of MANIFEST): one call of the device tool
# carries the working tree plus at most 64 MiB, and the kit (46 MiB) plus the FA3 kernel (141 MiB, xz) do not fit in
# one. Carry one .xferN per call, back to back on one warm host, each call starting with
# `mkdir -p /tmp/xparts && cp .xfer*/* /tmp/xparts/` (a carried path does not stay for the next call: only what
# the command copied out of the tree does); groundtruth/kit_run.sh does that copy and reassembles the kit once
# every chunk is in /tmp/xparts.
#
# usage (repository root):  bash groundtruth/kit_chunks.sh FIRST_MIB MIB FILE...
#   FIRST_MIB: size of chunk p00 (it travels with another carried path, e.g. .kit/ for the kernel calibration)
#   MIB: size of the other chunks
#   FILE: sgkit.tar.xz (../shared/device-kit/sglang/build.sh) and optionally flash_ops.so.xz (xz of
#         sgl_kernel/flash_ops.abi3.so from the sglang-kernel 0.4.5 wheel)
set -euo pipefail
first=$1; size=$2; shift 2
rm -rf .xfer .xfer[0-9]* && mkdir -p .xfer
bundle=$(mktemp)
tar -cf "$bundle" --transform 's,.*/,,' "$@"
head -c $((first * 1048576)) "$bundle" > .xfer/p00
tail -c +$((first * 1048576 + 1)) "$bundle" | split -b $((size * 1048576)) -d -a 2 --numeric-suffixes=1 - .xfer/p
parts=$(ls .xfer/p* | wc -l)
printf 'parts %s\nbytes %s\nsha256 %s\nfiles %s\n' "$parts" "$(stat -c %s "$bundle")" \
  "$(sha256sum "$bundle" | cut -d' ' -f1)" "$(tar -tf "$bundle" | tr '\n' ' ')" > .xfer/MANIFEST
rm -f "$bundle"
for part in .xfer/p*; do
  i=$((10#${part#.xfer/p})); mkdir -p .xfer$i && mv "$part" .xfer$i/ && cp .xfer/MANIFEST .xfer$i/
done
rm -rf .xfer
cat .xfer0/MANIFEST; ls -la .xfer[0-9]*
