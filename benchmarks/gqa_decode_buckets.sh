#!/usr/bin/env bash
# flashinfer GQA decode at the CUDA-graph buckets for every zoo head layout, bf16 page 1
# (calibration/grids/issue19_gqa_decode_buckets.yaml), timed as SGLang replays it (SGLang's flashinfer 0.6.15 from
# SGLang's kit: carry .sgk/sgkit.tar.xz), starting from the committed table (SEED=1). From the project root:
#   bash benchmarks/gqa_decode_buckets.sh h100 555
# then: python -m simperf.calibrate --merge-from <files_at>/gb --out calibration/<gpu>
SEED=1 EXTRA="--replay-target-ms 20" exec bash benchmarks/calibrate_grid.sh sgk attn_gqa_decode gb "$1" "$2" \
  calibration/grids/issue19_gqa_decode_buckets.yaml
