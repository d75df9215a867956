#!/usr/bin/env bash
# The DeepGEMM block-fp8 GEMM table and its off-grid check, on one H100 or H200 (torch 2.11, CUDA 13), resumable.
# From the repository root, with .kit carried (or, when the tree is too large to carry the whole kit beside it,
# .dgkit holding dg-kit.tar.xz, built by benchmarks/deep_gemm_kit.sh: SGLang 0.5.17's DeepGEMM pin, 6 MB):
#   bash benchmarks/deep_gemm_gpu.sh        # then commit $OUT/<gpu>/gemm.parquet over calibration/<gpu>/gemm.parquet
#                                           # and $OUT/<gpu>/deep-gemm-results.jsonl as calibration/offgrid/
#                                           # deep-gemm-<gpu>-results.jsonl
# Budgets (seconds) via CAL_BUDGET_S (default 380) and OFFGRID_BUDGET_S (default 90).
set -euo pipefail
kit=.kit/gpu-kit.tar.xz
[ -f .dgkit/dg-kit.tar.xz ] && kit=.dgkit/dg-kit.tar.xz
mkdir -p /tmp/site && tar -xJf "$kit" -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD
# SGLang 0.5.17 compiles DeepGEMM's kernels with NVCC, not NVRTC ("NVRTC may have performance loss with some cases",
# srt/layers/deep_gemm_wrapper/compile_utils.py): so does the calibration
export DG_JIT_USE_NVRTC=0
gpu=$(python -c "from simperf.calibrate.runner import probe_device; print(probe_device()['gpu'])")
work=out/deep_gemm/$gpu
mkdir -p "$work" "$OUT/$gpu"
[ -d "$work/tables" ] || cp -r "calibration/$gpu" "$work/tables"
python -c "import deep_gemm, torch; print('deep_gemm', open(deep_gemm.__path__[0] + '/VERSION').read().strip(), 'torch', torch.__version__, torch.version.cuda)"
t0=$(date +%s)
# CAL_ARGS=--no-resume re-measures the grid's points that the shipped table already holds
python -m simperf.calibrate --grid calibration/grids/deep_gemm_fp8_block.yaml --out "$work/tables" --ops gemm ${CAL_ARGS:-} \
  --time-budget-s "${CAL_BUDGET_S:-380}" 2>&1 | tail -25 || echo "calibrate: exit $?"
echo "calibrate: $(( $(date +%s) - t0 )) s"
cp "$work/tables/gemm.parquet" "$OUT/$gpu/"
t0=$(date +%s)
python -m simperf.perfdb.offgrid time calibration/offgrid/deep-gemm.jsonl --out "$work/deep-gemm-results.jsonl" \
  --time-budget-s "${OFFGRID_BUDGET_S:-90}" 2>&1 | tail -5 || echo "offgrid: exit $?"
echo "offgrid: $(( $(date +%s) - t0 )) s"
cp "$work/deep-gemm-results.jsonl" "$OUT/$gpu/"
