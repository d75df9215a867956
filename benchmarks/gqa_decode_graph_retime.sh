#!/usr/bin/env bash
# flashinfer's GQA decode timed again as SGLang 0.5.17 replays it: planned in CUDA-graph mode
# (calibrate/backends/gqa_flashinfer.py) with the flashinfer SGLang pins (0.6.15, from SGLang's kit), for every
# row the shipped table holds, then the GQA decode calls of the off-grid sets (their protocol must be the
# tables'). Run from the project root on the GPU host with SGLang's kit carried (.sgk,
# ../shared/device-kit/sglang/README.md):
#   bash benchmarks/gqa_decode_graph_retime.sh h100 540
# Resumable: work stays in /tmp/rt/<gpu> on a warm host, or is seeded from a carried .rt/<gpu>/ (an earlier call's
# $OUT); a rerun times the table points not yet timed or failed. SETS (default: all three) names the off-grid sets
# to time (shared-prefix too: the pairs shared_reads.yaml is derived from); TABLES=0 skips the tables. Everything
# goes to $OUT.
# Then, on the CPU machine (docs/perfdb.md "flashinfer's GQA decode, planned as SGLang's graph"):
#   python -m simperf.calibrate --merge-from <files_at>/cal --out calibration/h100
#   cp <files_at>/*results*.jsonl calibration/offgrid/
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
gpu=$1; budget=$2; t0=$(date +%s)
work=/tmp/rt/$gpu; mkdir -p "$work/cal"
[ -d .rt/$gpu ] && cp -rn .rt/$gpu/* "$work"/
log=$work/retime-$gpu.log
source benchmarks/device_env.sh; device_env sgk "$log"
[ -f "$work/cal/device.json" ] || cp calibration/$gpu/device.json "$work/cal/"  # no ceilings run
{ lscpu | grep -E 'Model name'; echo "unpacked after $(( $(date +%s) - t0 )) s"; } 2>&1 | tee -a "$log"
left() { echo $(( budget - ($(date +%s) - t0) - ${1:-0} )); }
[ "${TABLES:-1}" = 0 ] || python3 -m simperf.calibrate --retime calibration/$gpu --ops attn_gqa_decode \
  --backends flashinfer --out "$work/cal" --retry-failed --time-budget-s $(left 90) 2>&1 | grep -v "^\s*$" \
  | tail -12 | tee -a "$log"
echo "tables done after $(( $(date +%s) - t0 )) s" | tee -a "$log"
# the off-grid sets: results appended to copies of the committed files (the last row of an id is the one read)
for set in ${SETS:-samples samples-seed20261126 straggler-dev}; do
  res=$(python3 -c "from simperf.perfdb.offgrid.io import results_name; print(results_name('$set', '$gpu'))")
  [ -f "$work/$res" ] || cp calibration/offgrid/$res "$work/$res"
  [ $(left 15) -gt 10 ] || break
  python3 -m simperf.perfdb.offgrid time calibration/offgrid/$set.jsonl --out "$work/$res" \
    --retime attn_gqa_decode/flashinfer --time-budget-s $(left 15) 2>&1 | tail -2 | tee -a "$log"
done
echo "all: $(( $(date +%s) - t0 )) s" | tee -a "$log"
cp -r "$work"/* "$OUT"/
