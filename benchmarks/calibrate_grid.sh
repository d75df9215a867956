#!/usr/bin/env bash
# One op's calibration grids timed on a lent GPU into a work directory a warm host keeps (a rerun resumes what is
# not measured yet); the table and the log come back in $OUT/<name>/. Run from the project root with the kit carried:
#   bash benchmarks/calibrate_grid.sh KIT OP NAME GPU BUDGET_S GRID [GRID ...]
# KIT: kit (.kit) or sgk (.sgk), see benchmarks/device_env.sh; EXTRA (environment): more calibrate options;
# SEED=1 (environment): a fresh work directory starts from the committed table calibration/<gpu>/<op>.parquet, so
# only its missing points are timed and a grid too big for one call goes on where the last merged call stopped,
# warm host or not.
# Then, on the CPU machine: python -m simperf.calibrate --merge-from <files_at>/<name> --out calibration/<gpu>
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
kit=$1 op=$2 name=$3 gpu=$4 budget=$5; shift 5; t0=$(date +%s)
work=/tmp/$name/$gpu; log=$work/$name-$gpu.log
source benchmarks/device_env.sh; device_env "$kit" "$log"
[ -f "$work/device.json" ] || cp calibration/$gpu/device.json "$work/"
if [ -n "${SEED:-}" ] && [ ! -f "$work/$op.parquet" ]; then cp "calibration/$gpu/$op.parquet" "$work/"; fi
for grid in "$@"; do
  # shellcheck disable=SC2086  # EXTRA holds several options
  python3 -m simperf.calibrate --ops "$op" --grid "$grid" --out "$work" --retry-failed ${EXTRA:-} \
    --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 | grep -v "^\s*$" | tail -6 | tee -a "$log"
done
echo "all: $(( $(date +%s) - t0 )) s" | tee -a "$log"
mkdir -p "$OUT/$name"; cp "$work/$op.parquet" "$OUT/$name/" 2>/dev/null; cp "$log" "$OUT/$name/"
