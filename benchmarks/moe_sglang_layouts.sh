#!/usr/bin/env bash
# SGLang's own Triton fused MoE at the zoo MoE models' other EP-1 layouts (after benchmarks/moe_sglang_device.sh).
# Run from the project root on the GPU host with SGLang's kit carried (.sgk); results under $OUT.
#   bash benchmarks/moe_sglang_layouts.sh
set -euo pipefail
: "${OUT:?set OUT to the results directory}"
mkdir -p /tmp/sgsite
[ -d /tmp/sgsite/sglang ] || xz -dc -T0 .sgk/sgkit.tar.xz | tar -xf - -C /tmp/sgsite
export PYTHONPATH=/tmp/sgsite:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=/usr/local/cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
gpu=$(python -c "import torch; print('h200' if 'H200' in torch.cuda.get_device_name(0) else 'h100')")
# resume: points this GPU's shipped table already holds (the layouts measured before) are skipped
mkdir -p "$OUT/cal" && cp "calibration/$gpu/moe.parquet" "$OUT/cal/"
start=$(date +%s)
python -m simperf.calibrate --ops moe --backends sglang_fused_moe --models DeepSeek-V3 \
    --grid calibration/grids/moe_sglang_layouts_fp8.yaml --out "$OUT/cal" --time-budget-s 230 2>&1 | tail -4
python -m simperf.calibrate --ops moe --backends sglang_fused_moe \
    --models Qwen3-30B-A3B,deepseek-v2-lite,Qwen3-235B-A22B \
    --grid calibration/grids/moe_sglang_layouts_bf16.yaml --out "$OUT/cal" --time-budget-s 260 2>&1 | tail -4
echo "total: $(( $(date +%s) - start )) s" | tee -a "$OUT/gpu.txt"
