#!/usr/bin/env bash
# MHA prefill (flashinfer FA3) at the query-tile boundaries on a lent GPU, fresh prefills then the cached prefixes
# (docs/perfdb.md "MHA prefill at the query-tile boundaries"; ~60 s + ~300 s + flashinfer's JIT, so a second call on
# the warm host finishes what one 600 s call leaves). From the project root with the device kit carried (.kit):
#   bash benchmarks/mha_prefill_q_tiles.sh h100 540
# then: python -m simperf.calibrate --merge-from <files_at>/mq --out calibration/<gpu>
EXTRA="--replay-target-ms 15" exec bash benchmarks/calibrate_grid.sh kit attn_mha_prefill mq "$1" "$2" \
  calibration/grids/issue19_mha_prefill_q_tiles.yaml calibration/grids/issue19_mha_prefill_q_tiles_prefix.yaml
