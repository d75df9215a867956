#!/usr/bin/env bash
# How an eager extend's host time grows with the number of tensor-parallel ranks: SGLang's own one_batch prefill of
# one model at each TP size on the same host (groundtruth/profile_forward.sh per size), REPS forwards of 1,024 and 128
# tokens each, so the medians stand above the host's run-to-run noise (one forward moves by -11...+43%,
# docs/overheads.md). Every rank is its own process launching the same kernels, meeting the others at each
# all-reduce; a forward the host sets lasts as long as its slowest rank between two collectives.
#
# usage (repository root, multi-GPU host, SGLang kit carried):
#   bash groundtruth/profile_tp_prefill.sh MODEL SECONDS TP... [-- one_batch flags...]
#   e.g. bash groundtruth/profile_tp_prefill.sh deepseek-v2-lite 560 1 4 -- --attention-backend flashinfer --disable-cuda-graph
# Environment: REPS (default 8; profile_forward.sh runs the list twice, so 2 x REPS of each length), PROFILE_TP (a TP
# size whose pass also runs under the torch profiler; default none).
# Writes $OUT/forward-MODEL-prefill-tpN/ per size (profile_forward.sh's files).
set -uo pipefail
model=$1; budget=$2; shift 2; t0=$(date +%s)
sizes=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do sizes+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
lens=""; for _ in $(seq "${REPS:-8}"); do lens="$lens 1024 128"; done
for tp in "${sizes[@]}"; do
  left=$(( budget - ($(date +%s) - t0) ))
  [ $left -gt 90 ] || { echo "tp $tp: only $left s left, not started"; break; }
  profile=0; [ "$tp" = "${PROFILE_TP:-none}" ] && profile=1
  echo "== tp $tp ($left s left)"
  INPUT_LENS="$lens" PROFILE=$profile bash groundtruth/profile_forward.sh "$model" "$model-prefill-tp$tp" $left \
    --tp-size "$tp" "$@"
done
exit 0
