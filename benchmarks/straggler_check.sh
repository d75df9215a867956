#!/usr/bin/env bash
# The straggler cost checked on batches it was not worked out on (GPU; carrying .kit), plus the CUDA-core decode
# kernel's occupancy per group size that its work plan needs:
#   calibration/offgrid/straggler-check.jsonl: 48 flashinfer GQA decode batches with one or two long requests,
#   seed 20261129, generated and committed before any was timed
#   (python -m simperf.perfdb.offgrid generate calibration/offgrid/straggler-check.jsonl --straggler-check 48 --seed 20261129);
#   benchmarks/gqa_decode_occupancy.py: blocks per SM as flashinfer's decode planner sizes its grid.
# From the project root on the GPU host:
#   bash benchmarks/straggler_check.sh 300
# then: cp <files_at>/straggler-check-<gpu>-results.jsonl calibration/offgrid/ and
#       <files_at>/gqa-decode-occupancy-<gpu>.json calibration/<gpu>/gqa_decode_occupancy.json
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
budget=$1 t0=$(date +%s)
source benchmarks/device_env.sh; lent_setup straggler-check kit
python3 benchmarks/gqa_decode_occupancy.py "$OUT/gqa-decode-occupancy-$gpu.json" 2>&1 | tail -20 | tee -a "$log"
res=$work/straggler-check-$gpu-results.jsonl
python3 -m simperf.perfdb.offgrid time calibration/offgrid/straggler-check.jsonl --out "$res" \
  --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 | tail -3 | tee -a "$log"
echo "kit: $(( $(date +%s) - t0 )) s" | tee -a "$log"
cp "$res" "$log" "$OUT"/
