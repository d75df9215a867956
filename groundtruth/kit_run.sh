#!/usr/bin/env bash
# Run a ground-truth plan on a lent GPU host that has no SGLang install, with the SGLang 0.5.17 kit built by
# ../shared/device-kit/sglang/build.sh (carried as .sgk/). On a host with SGLang installed, run
# `simperf groundtruth run PLAN --out groundtruth` instead: this script only unpacks the kit, sets the environment
# the kit needs, and packs the corpus into $OUT so it comes back.
#
# usage (from the repository root):  bash groundtruth/kit_run.sh PLAN SECONDS [runner options...]
#   SECONDS: wall budget of this call; the runner starts no run it expects to overrun it.
# State survives between calls on a warm host (/tmp/sgsite, /root/gt): a second call resumes, reusing the server.
set -uo pipefail
t0=$(date +%s)
plan=$1; budget=$2; shift 2
site=/tmp/sgsite
kit=.sgk/sgkit.tar.xz
# chunks cut by groundtruth/kit_chunks.sh, carried one per call (.xfer0/, .xfer1/, ...) and kept in /tmp/xparts:
# reassembled once all are there
if ls -d .xfer[0-9]* >/dev/null 2>&1; then mkdir -p /tmp/xparts && cp .xfer[0-9]*/* /tmp/xparts/; fi
if [ -f /tmp/xparts/MANIFEST ] && [ ! -f /tmp/xfer/.ok ]; then
  m=/tmp/xparts/MANIFEST
  want=$(awk '/^bytes/{print $2}' $m); sum=$(awk '/^sha256/{print $2}' $m)
  have=$(cat /tmp/xparts/p?? | wc -c)
  if [ "$have" != "$want" ]; then
    echo "kit_run: $have of $want bytes of the kit's chunks here; carry the rest first" >&2; exit 4
  fi
  [ "$(cat /tmp/xparts/p?? | sha256sum | cut -d' ' -f1)" = "$sum" ] || { echo "kit_run: chunk checksum differs" >&2; exit 4; }
  mkdir -p /tmp/xfer && cat /tmp/xparts/p?? | tar -xf - -C /tmp/xfer && touch /tmp/xfer/.ok || exit 4
fi
[ -f /tmp/xfer/sgkit.tar.xz ] && kit=/tmp/xfer/sgkit.tar.xz
if [ ! -f $site/.ok ]; then
  mkdir -p $site && xz -dc -T0 $kit | tar -xf - -C $site && touch $site/.ok || exit 3
fi
# SGLang's FA3 kernels (its Hopper default attention backend), when they came along
if [ -f /tmp/xfer/flash_ops.so.xz ] && [ ! -f $site/sgl_kernel/flash_ops.abi3.so ]; then
  xz -dc -T0 /tmp/xfer/flash_ops.so.xz > $site/sgl_kernel/flash_ops.abi3.so.tmp \
    && mv $site/sgl_kernel/flash_ops.abi3.so.tmp $site/sgl_kernel/flash_ops.abi3.so || exit 3
fi
# a fresh host resumes from the corpus an earlier call brought back (carried as .gtstate/corpus.tar.xz)
if [ ! -d /root/gt/corpus ] && [ -f .gtstate/corpus.tar.xz ]; then
  mkdir -p /root/gt && tar -C /root/gt -xJf .gtstate/corpus.tar.xz
fi
export PYTHONPATH=$site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
left=$(( budget - ($(date +%s) - t0) - 25 ))   # keep time to pack the corpus
python3 -m simperf.groundtruth run "$plan" --out /root/gt/corpus --work /root/gt/work --deadline $left "$@"
rc=$?
if [ -n "${OUT:-}" ]; then
  tar -C /root/gt -cJf "$OUT/corpus.tar.xz" corpus
  for f in /root/gt/work/*/client.log /root/gt/work/*/server.log; do
    [ -f "$f" ] && { echo "=== $f"; tail -c 6000 "$f"; }
  done > "$OUT/logs_tail.txt" 2>&1
fi
exit $rc
