#!/usr/bin/env bash
# MHA prefill at 8 heads per rank (calibration/grids/issue19_mha_prefill_8heads.yaml), then MLA decode at the
# speculative verify widths q_len 2-4 for every head count, FlashMLA and flashinfer's fa3 MLA kernels
# (calibration/grids/issue19_mla_verify_q.yaml), with the device kit (.kit) as the tables' other attention rows.
# Each starts from the committed table (SEED=1), so a call that runs out of time goes on in the next (a fresh
# host spent ~90 s before its first prefill point, so the prefill grid gets 200 s). From the
# project root on the GPU host:
#   bash benchmarks/mla_verify_q.sh h100 555
# then: python -m simperf.calibrate --merge-from <files_at>/m8 --out calibration/<gpu>   (and <files_at>/mv)
gpu=$1 budget=$2 t0=$(date +%s)
SEED=1 EXTRA="--replay-target-ms 15" bash benchmarks/calibrate_grid.sh kit attn_mha_prefill m8 "$gpu" 200 \
  calibration/grids/issue19_mha_prefill_8heads.yaml
SEED=1 EXTRA="--replay-target-ms 20" bash benchmarks/calibrate_grid.sh kit attn_mla_decode mv "$gpu" \
  $(( budget - ($(date +%s) - t0) )) calibration/grids/issue19_mla_verify_q.yaml
