#!/usr/bin/env bash
# GEMM tables along M, on a lent GPU (docs/perfdb.md "GEMM M at the tile boundaries"). In this order:
#   1. the GEMM M check set (calibration/offgrid/gemm-m-check.jsonl: 400 zoo GEMMs at log-uniform random M,
#      seed 20261127, committed before any of it was timed), timed as the tables are;
#   2. the block-fp8 and rowwise-fp8 tables (torch._scaled_mm) timed again lightest first, as the bf16 ones were
#      (calibrate/runner.py `_group_points`: a heavy GEMM leaves the GPU power-capped for the next point);
#   3. both sides of every 64-row tile boundary up to M 2,049 (calibration/grids/issue19_gemm_m_tiles.yaml).
# Run from the project root with the device kit carried (.kit):
#   bash benchmarks/gemm_m_tiles.sh h100 560
# Resumable on a warm host (work stays in /tmp/gm/<gpu>); everything goes to $OUT. Then, on the CPU machine:
#   python -m simperf.calibrate --merge-from <files_at>/fp8 --out calibration/<gpu>
#   python -m simperf.calibrate --merge-from <files_at>/tiles --out calibration/<gpu>
#   cp <files_at>/gemm-m-check-<gpu>-results.jsonl calibration/offgrid/
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
gpu=$1; budget=$2; t0=$(date +%s)
work=/tmp/gm/$gpu; mkdir -p "$work/fp8" "$work/tiles"
log=$work/gemm-m-$gpu.log
source benchmarks/device_env.sh; device_env kit "$log"
for d in fp8 tiles; do [ -f "$work/$d/device.json" ] || cp calibration/$gpu/device.json "$work/$d/"; done
left() { echo $(( budget - ($(date +%s) - t0) - ${1:-0} )); }
res=$work/gemm-m-check-$gpu-results.jsonl
python3 -m simperf.perfdb.offgrid time calibration/offgrid/gemm-m-check.jsonl --out "$res" \
  --time-budget-s $(left 60) 2>&1 | tail -2 | tee -a "$log"
echo "check set done after $(( $(date +%s) - t0 )) s" | tee -a "$log"
python3 -m simperf.calibrate --retime calibration/$gpu --ops gemm --backends torch_scaled_mm --out "$work/fp8" \
  --replay-target-ms 15 --retry-failed --time-budget-s $(left 40) 2>&1 | grep -v "^\s*$" | tail -6 | tee -a "$log"
echo "fp8 re-time done after $(( $(date +%s) - t0 )) s" | tee -a "$log"
python3 -m simperf.calibrate --ops gemm --grid calibration/grids/issue19_gemm_m_tiles.yaml --out "$work/tiles" \
  --replay-target-ms 15 --time-budget-s $(left 15) 2>&1 | grep -v "^\s*$" | tail -6 | tee -a "$log"
echo "all: $(( $(date +%s) - t0 )) s" | tee -a "$log"
for d in fp8 tiles; do mkdir -p "$OUT/$d"; cp "$work/$d/gemm.parquet" "$OUT/$d/" 2>/dev/null; done
cp "$res" "$log" "$OUT"/
