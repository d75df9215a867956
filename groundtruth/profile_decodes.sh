#!/usr/bin/env bash
# Profile served-shape decode steps (CUDA-graph replay + sampling + input preparation, as SGLang 0.5.17 runs them
# in one_batch) of the corpus' single-GPU models, to see which GPU work a decode step does beyond the kernels the
# calibration tables time (docs/overheads.md, "What a decode step runs beyond the tables").
# usage (repository root, GPU host, SGLang kit carried as .sgk/): bash groundtruth/profile_decodes.sh SECONDS
# Writes $OUT/forward-<model>-decode/ per model (profile_forward.sh with PROFILE_STAGE=decode).
budget=$1; t0=$(date +%s)
export INPUT_LENS=1024 BATCH="1 16 64" OUTPUT_LEN=16 PROFILE_STAGE=decode PROFILE_STEPS=4 CLEAN=0
for spec in "llama-3.1-8b 190" "qwen3-8b 170" "qwen3-30b-a3b 190" "deepseek-v2-lite 170"; do
  set -- $spec; left=$(( budget - ($(date +%s) - t0) - 10 )); [ $left -gt 60 ] || break
  cap=$(( $2 < left ? $2 : left ))
  echo "== $1 (cap $cap s) at $(( $(date +%s) - t0 )) s"
  bash groundtruth/profile_forward.sh "$1" "$1-decode" "$cap" --attention-backend flashinfer --cuda-graph-max-bs 64 \
    --cuda-graph-backend-prefill disabled  # the prefill graphs' capture (minutes) is not what is profiled
done
# one file: the device tool brings a few files back per call
[ -n "${OUT:-}" ] && tar -C "$OUT" -czf "$OUT/decode-profiles.tgz" $(cd "$OUT" && ls -d forward-*) && rm -rf "$OUT"/forward-*
