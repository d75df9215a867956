#!/usr/bin/env bash
# SGLang's own Triton fused MoE timed on the lent GPU (table backend sglang_fused_moe), and simperf's own Triton
# kernel at the same DeepSeek-V3/R1 TP8 points on the same host for comparison. Run from the project root on the
# GPU host with SGLang's kit carried (.sgk, ../shared/device-kit/sglang/README.md); results go under $OUT.
#   bash benchmarks/moe_sglang_device.sh
set -euo pipefail
: "${OUT:?set OUT to the results directory}"
mkdir -p /tmp/sgsite
[ -d /tmp/sgsite/sglang ] || xz -dc -T0 .sgk/sgkit.tar.xz | tar -xf - -C /tmp/sgsite
export PYTHONPATH=/tmp/sgsite:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=/usr/local/cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"
python -c "import triton, torch; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
start=$(date +%s)
python -m simperf.calibrate --ops moe --backends sglang_fused_moe --models DeepSeek-V3 \
    --grid calibration/grids/moe_sglang_fp8.yaml --out "$OUT/cal" 2>&1 | tail -25
python -m simperf.calibrate --ops moe --backends sglang_fused_moe --models Qwen3-30B-A3B,deepseek-v2-lite \
    --grid calibration/grids/moe_sglang_bf16.yaml --out "$OUT/cal" 2>&1 | tail -25
echo "sglang_fused_moe: $(( $(date +%s) - start )) s" | tee -a "$OUT/gpu.txt"
# simperf's own kernel (tiles tuned by simperf), same points, same host: the comparison in docs/calibration.md
sed -e 's/backends: \[sglang_fused_moe\]/backends: [triton_fused_moe]/' calibration/grids/moe_sglang_fp8.yaml > /tmp/ours_fp8.yaml
sed -e 's/backends: \[sglang_fused_moe\]/backends: [triton_fused_moe, triton_fused_moe_default]/' \
    calibration/grids/moe_sglang_bf16.yaml > /tmp/ours_bf16.yaml
python -m simperf.calibrate --ops moe --backends triton_fused_moe --models DeepSeek-V3 --grid /tmp/ours_fp8.yaml \
    --out "$OUT/ours" --time-budget-s 240 2>&1 | tail -8
python -m simperf.calibrate --ops moe --backends moe_triton --models Qwen3-30B-A3B,deepseek-v2-lite \
    --grid /tmp/ours_bf16.yaml --out "$OUT/ours" --time-budget-s 120 2>&1 | tail -8
echo "total: $(( $(date +%s) - start )) s" | tee -a "$OUT/gpu.txt"
