#!/usr/bin/env bash
# Time the designed straggler set's rows this GPU has no result for yet (calibration/offgrid/straggler-dev.jsonl;
# its committed results are the starting point, so only appended rows are timed), then, on an H100, the seeded
# straggler check (calibration/offgrid/straggler-check.jsonl). GPU; carrying .kit; from the project root:
#   bash benchmarks/straggler_dev.sh 300
# then: cp <files_at>/straggler-*-results.jsonl calibration/offgrid/ ;
#       python -m simperf.perfdb.ctastream calibration/<gpu> calibration/offgrid/straggler-dev-<gpu>-results.jsonl
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
budget=$1 t0=$(date +%s)
source benchmarks/device_env.sh; lent_setup straggler-dev kit
res=$work/straggler-dev-$gpu-results.jsonl
[ -f "$res" ] || cp "calibration/offgrid/straggler-dev-$gpu-results.jsonl" "$res"
python3 -m simperf.perfdb.offgrid time calibration/offgrid/straggler-dev.jsonl --out "$res" \
  --time-budget-s $(( budget / 2 )) 2>&1 | tail -3 | tee -a "$log"
cp "$res" "$OUT"/
if [ "$gpu" = h100 ]; then
  chk=$work/straggler-check-$gpu-results.jsonl
  python3 -m simperf.perfdb.offgrid time calibration/offgrid/straggler-check.jsonl --out "$chk" \
    --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 | tail -3 | tee -a "$log"
  cp "$chk" "$OUT"/
fi
echo "kit: $(( $(date +%s) - t0 )) s" | tee -a "$log"
cp "$log" "$OUT"/
