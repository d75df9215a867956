#!/usr/bin/env bash
# Reassemble the kernel kit (.kit/gpu-kit.tar.xz, cut by `bash groundtruth/kit_chunks.sh 15 15 .kit/gpu-kit.tar.xz`
# because the tree plus the kit outgrew one call's 64 MiB) from the chunks earlier calls copied to /tmp/xparts, and
# unpack it into /tmp/site. usage: source groundtruth/gpukit_join.sh   (then PYTHONPATH has /tmp/site)
set -e
mkdir -p /tmp/xparts && cp .xfer*/* /tmp/xparts/ 2>/dev/null || true
if [ ! -d /tmp/site/flashinfer ]; then
  cat /tmp/xparts/p* > /tmp/gpukit.tar
  echo "$(grep sha256 /tmp/xparts/MANIFEST | cut -d' ' -f2)  /tmp/gpukit.tar" | sha256sum -c -
  mkdir -p /tmp/site && tar -xf /tmp/gpukit.tar -O gpu-kit.tar.xz | tar -xJ -C /tmp/site
fi
export PYTHONPATH=/tmp/site:$PWD
set +e
