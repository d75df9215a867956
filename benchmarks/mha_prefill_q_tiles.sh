#!/usr/bin/env bash
# MHA prefill (flashinfer FA3) at the query-tile boundaries on a lent GPU (docs/perfdb.md "MHA prefill at the
# query-tile boundaries"). Run from the project root with the device kit carried (.kit):
#   bash benchmarks/mha_prefill_q_tiles.sh h100 540
# Resumable on a warm host (work in /tmp/mq/<gpu>); the table comes back in $OUT. Then, on the CPU machine:
#   python -m simperf.calibrate --merge-from <files_at>/mq --out calibration/<gpu>
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
gpu=$1; budget=$2; t0=$(date +%s)
work=/tmp/mq/$gpu; mkdir -p /tmp/site "$work"
[ -f /tmp/site/.ok ] || { tar -xJf .kit/gpu-kit.tar.xz -C /tmp/site && touch /tmp/site/.ok; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
log=$work/mha-q-tiles-$gpu.log
[ -f "$work/device.json" ] || cp calibration/$gpu/device.json "$work/"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  python3 -c 'import flashinfer, torch; print("flashinfer", flashinfer.__version__, "torch", torch.__version__)'
  echo "unpacked after $(( $(date +%s) - t0 )) s"; } 2>&1 | tee -a "$log"
python3 -m simperf.calibrate --ops attn_mha_prefill --grid calibration/grids/issue19_mha_prefill_q_tiles.yaml \
  --out "$work" --replay-target-ms 15 --retry-failed --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 \
  | grep -v "^\s*$" | tail -6 | tee -a "$log"
echo "all: $(( $(date +%s) - t0 )) s" | tee -a "$log"
mkdir -p "$OUT/mq"; cp "$work/attn_mha_prefill.parquet" "$OUT/mq/" 2>/dev/null; cp "$log" "$OUT"/
