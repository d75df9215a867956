#!/usr/bin/env bash
# Elementwise kernels at every power of two of M, and rmsnorm over head_dim 128 to M 524,288 (Qwen3's q/k norms), on
# a lent GPU (calibration/grids/issue19_elementwise_m.yaml, issue19_elementwise_qk_norm.yaml). Run from the project
# root with the device kit carried (.kit):
#   bash benchmarks/elementwise_m.sh h100 300
# The table comes back in $OUT/ew; then, on the CPU machine:
#   python -m simperf.calibrate --merge-from <files_at>/ew --out calibration/<gpu>
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
gpu=$1; budget=$2; t0=$(date +%s)
work=/tmp/ew/$gpu; mkdir -p /tmp/site "$work"
[ -f /tmp/site/.ok ] || { tar -xJf .kit/gpu-kit.tar.xz -C /tmp/site && touch /tmp/site/.ok; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
log=$work/elementwise-m-$gpu.log
[ -f "$work/device.json" ] || cp calibration/$gpu/device.json "$work/"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  python3 -c 'import flashinfer, torch; print("flashinfer", flashinfer.__version__, "torch", torch.__version__)'; } 2>&1 | tee -a "$log"
for grid in m qk_norm; do
  python3 -m simperf.calibrate --ops elementwise --grid calibration/grids/issue19_elementwise_$grid.yaml \
    --out "$work" --retry-failed --time-budget-s $(( budget - ($(date +%s) - t0) - 10 )) 2>&1 \
    | grep -v "^\s*$" | tail -4 | tee -a "$log"
done
echo "all: $(( $(date +%s) - t0 )) s" | tee -a "$log"
mkdir -p "$OUT/ew"; cp "$work/elementwise.parquet" "$OUT/ew/" 2>/dev/null; cp "$log" "$OUT"/
