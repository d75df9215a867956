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
source groundtruth/kit_env.sh || exit $?
# a fresh host resumes from the corpus an earlier call brought back (carried as .gtstate/corpus.tar.xz)
if [ ! -d /root/gt/corpus ] && [ -f .gtstate/corpus.tar.xz ]; then
  mkdir -p /root/gt && tar -C /root/gt -xJf .gtstate/corpus.tar.xz
fi
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
