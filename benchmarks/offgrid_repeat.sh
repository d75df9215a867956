#!/usr/bin/env bash
# The held-out off-grid set (calibration/offgrid/samples-seed20261126.jsonl) timed again on another host and day,
# into a new results file, to measure how far the check's own measured times move from one timing session to the
# next (the floor under its p90). Same protocol and libraries as the committed results, in two calls (the two kits
# do not fit one carry): `kit` times every call with the device kit (.kit: flashinfer 0.7.2, FlashMLA, deep-gemm);
# `sgk`, on the same warm host, times flashinfer's GQA decode again with SGLang's kit (.sgk: flashinfer 0.6.15,
# planned as SGLang's CUDA graph), as the committed GQA rows were (the last row of an id is the one read).
# From the project root on the GPU host:
#   bash benchmarks/offgrid_repeat.sh kit h100 560     (carrying .kit)
#   bash benchmarks/offgrid_repeat.sh sgk h100 300     (carrying .sgk, same host)
# then: cp <files_at>/<gpu>-results-seed20261126-repeat.jsonl calibration/offgrid/ ;
#       python -m simperf.perfdb.offgrid docs   (docs/accuracy.md: "Timed twice")
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
kit=$1 gpu=$2 budget=$3 t0=$(date +%s)
work=/tmp/rep/$gpu; mkdir -p "$work"; res=$work/$gpu-results-seed20261126-repeat.jsonl; log=$work/repeat-$gpu.log
source benchmarks/device_env.sh; device_env "$kit" "$log"
retime=(); [ "$kit" = sgk ] && retime=(--retime attn_gqa_decode/flashinfer)
python3 -m simperf.perfdb.offgrid time calibration/offgrid/samples-seed20261126.jsonl --out "$res" "${retime[@]}" \
  --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 | tail -3 | tee -a "$log"
echo "$kit: $(( $(date +%s) - t0 )) s" | tee -a "$log"
cp "$res" "$log" "$OUT"/
