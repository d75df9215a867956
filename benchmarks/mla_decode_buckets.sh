#!/usr/bin/env bash
# MLA decode on SGLang's CUDA-graph bucket list x KV x2 for every MLA decode key of the zoo
# (calibration/grids/issue19_mla_decode_buckets.yaml; flashinfer's fa3 MLA kernels and FlashMLA from the device kit,
# as the tables' other MLA rows). ~8,000 points per GPU, more than one 600 s call: each call starts from the
# committed table (SEED=1) and times what it still lacks. From the project root with the device kit carried (.kit):
#   bash benchmarks/mla_decode_buckets.sh h100 560
# then: python -m simperf.calibrate --merge-from <files_at>/mb --out calibration/<gpu>   (and call again)
SEED=1 EXTRA="--replay-target-ms 20" exec bash benchmarks/calibrate_grid.sh kit attn_mla_decode mb "$1" "$2" \
  calibration/grids/issue19_mla_decode_buckets.yaml
