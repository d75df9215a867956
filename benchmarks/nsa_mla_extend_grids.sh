#!/usr/bin/env bash
# DeepSeek-V3.2's sparse decode at the CUDA-graph buckets and KV below the top-k
# (calibration/grids/issue19_nsa_decode_buckets.yaml), then absorbed MLA extend at more query lengths, batches, head
# counts and pages (calibration/grids/issue19_mla_extend_q.yaml), with the device kit (.kit) as the tables' other
# rows. Each starts from the committed table (SEED=1). From the project root on the GPU host:
#   bash benchmarks/nsa_mla_extend_grids.sh h100 555
# then: python -m simperf.calibrate --merge-from <files_at>/nd --out calibration/<gpu>   (and <files_at>/me)
gpu=$1 budget=$2 t0=$(date +%s)
SEED=1 EXTRA="--replay-target-ms 20" bash benchmarks/calibrate_grid.sh kit attn_nsa_decode nd "$gpu" 150 \
  calibration/grids/issue19_nsa_decode_buckets.yaml
SEED=1 EXTRA="--replay-target-ms 20" bash benchmarks/calibrate_grid.sh kit attn_mla_extend me "$gpu" \
  $(( budget - ($(date +%s) - t0) )) calibration/grids/issue19_mla_extend_q.yaml
