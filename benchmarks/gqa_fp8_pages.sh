#!/usr/bin/env bash
# flashinfer GQA decode with an fp8 KV cache at pages 16 and 64 (calibration/grids/issue19_gqa_fp8_pages.yaml), timed
# as SGLang 0.5.17 replays it: graph-mode plan with SGLang's flashinfer (0.6.15, from SGLang's kit: carry .sgk,
# ../shared/device-kit/sglang/README.md). Run from the project root on the GPU host:
#   bash benchmarks/gqa_fp8_pages.sh h100 540
# Resumable on a warm host (work in /tmp/gp/<gpu>); the table comes back in $OUT. Then, on the CPU machine:
#   python -m simperf.calibrate --merge-from <files_at>/gp --out calibration/<gpu>
set -uo pipefail
: "${OUT:?set OUT to the results directory}"
gpu=$1; budget=$2; t0=$(date +%s)
work=/tmp/gp/$gpu; mkdir -p /tmp/sgsite "$work"
[ -f /tmp/sgsite/.ok ] || { xz -dc -T0 .sgk/sgkit.tar.xz | tar -xf - -C /tmp/sgsite && touch /tmp/sgsite/.ok; }
export PYTHONPATH=/tmp/sgsite:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
log=$work/gqa-fp8-pages-$gpu.log
[ -f "$work/device.json" ] || cp calibration/$gpu/device.json "$work/"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  python3 -c 'import flashinfer, torch; print("flashinfer", flashinfer.__version__, "torch", torch.__version__)'
  echo "unpacked after $(( $(date +%s) - t0 )) s"; } 2>&1 | tee -a "$log"
python3 -m simperf.calibrate --ops attn_gqa_decode --grid calibration/grids/issue19_gqa_fp8_pages.yaml \
  --out "$work" --retry-failed --time-budget-s $(( budget - ($(date +%s) - t0) - 15 )) 2>&1 \
  | grep -v "^\s*$" | tail -6 | tee -a "$log"
echo "all: $(( $(date +%s) - t0 )) s" | tee -a "$log"
mkdir -p "$OUT/gp"; cp "$work/attn_gqa_decode.parquet" "$OUT/gp/" 2>/dev/null; cp "$log" "$OUT"/
