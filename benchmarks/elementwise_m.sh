#!/usr/bin/env bash
# Elementwise kernels at every power of two of M, and rmsnorm over head_dim 128 to M 524,288 (Qwen3's q/k norms), on
# a lent GPU (calibration/grids/issue19_elementwise_m.yaml, issue19_elementwise_qk_norm.yaml). From the project root
# with the device kit carried (.kit):
#   bash benchmarks/elementwise_m.sh h100 300
# then: python -m simperf.calibrate --merge-from <files_at>/ew --out calibration/<gpu>
exec bash benchmarks/calibrate_grid.sh kit elementwise ew "$1" "$2" calibration/grids/issue19_elementwise_m.yaml \
  calibration/grids/issue19_elementwise_qk_norm.yaml
