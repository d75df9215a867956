#!/usr/bin/env bash
# A fresh set of ragged extends (calibration/offgrid/ragged-extend-check.jsonl: 80 drawn like the off-grid set's,
# seed 20261128, generated and committed with the planner model of perfdb/prefillplan.py before any was timed)
# timed on a lent GPU, to check that model on batches it was not worked out on. From the project root on the GPU
# host, carrying .kit:
#   bash benchmarks/ragged_extend_check.sh h100 240
# then: cp <files_at>/ragged-extend-check-<gpu>-results.jsonl calibration/offgrid/ ;
#       python -m simperf.perfdb.offgrid docs   (docs/accuracy.md: "Ragged extends, checked after the model")
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
gpu=$1 budget=$2 t0=$(date +%s)
work=/tmp/rec/$gpu; mkdir -p "$work"; res=$work/ragged-extend-check-$gpu-results.jsonl; log=$work/ragged-extend-check-$gpu.log
source benchmarks/device_env.sh; device_env kit "$log"
python3 -m simperf.perfdb.offgrid time calibration/offgrid/ragged-extend-check.jsonl --out "$res" \
  --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 | tail -3 | tee -a "$log"
echo "kit: $(( $(date +%s) - t0 )) s" | tee -a "$log"
cp "$res" "$log" "$OUT"/
