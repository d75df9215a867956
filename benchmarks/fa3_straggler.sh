#!/usr/bin/env bash
# SGLang's own FA3 decode (`sgl_fa3`, SGLang's default attention backend on Hopper) on ragged batches with long
# requests (GPU; carrying .sgk: sgl-kernel comes with the SGLang kit). Times the designed set
# (calibration/offgrid/straggler-dev-fa3.jsonl: short requests and one long one, 32q/8kv, 64q/8kv, 32q/32kv) and
# the seeded check (calibration/offgrid/straggler-check-fa3.jsonl, seed 20261130, generated and committed before
# any was timed). From the project root on a lent H100 (the sgl_fa3 tables are the H100's):
#   bash benchmarks/fa3_straggler.sh 300
# then: cp <files_at>/straggler-*fa3-h100-results.jsonl calibration/offgrid/
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
budget=$1 t0=$(date +%s)
source benchmarks/device_env.sh; lent_setup fa3-straggler sgk
for set in straggler-dev-fa3 straggler-check-fa3; do
  res=$work/$set-$gpu-results.jsonl
  python3 -m simperf.perfdb.offgrid time calibration/offgrid/$set.jsonl --out "$res" \
    --time-budget-s $(( (budget - ($(date +%s) - t0) - 15) / 2 )) 2>&1 | tail -3 | tee -a "$log"
  cp "$res" "$OUT"/
done
echo "kit: $(( $(date +%s) - t0 )) s" | tee -a "$log"
cp "$log" "$OUT"/
