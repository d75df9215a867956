#!/usr/bin/env bash
# A check of the speculative launch wait away from where it was measured (docs/overheads.md "The speculative
# worker"; prediction committed in groundtruth/experiments/spec-wait-check-h200/README.md before the run): Qwen3-8B
# with a chain draft (3 steps, top-k 1, 4 draft tokens; the draft of groundtruth/plans/qwen3-8b-eagle-draft.json),
# a shape that target was not measured with, and the same target without a draft, one after another on one lent
# H200. Five single-token requests each at 1,024 prompt tokens (client wall time), and a GPU profile of one prefill.
# On a fresh host the first server compiles its prefill graph first (minutes): its budget is 400 s.
# usage (repository root, GPU host, SGLang kit and .dgkit carried): bash groundtruth/spec_wait_check.sh
set -u
common=(--attention-backend flashinfer --cuda-graph-max-bs 4 --cuda-graph-bs-prefill 1024)
export PREFILL=1 PREFILL_LENS="1024" CONCURRENCY=""
TAG=chain DRAFT=groundtruth/plans/qwen3-8b-eagle-draft.json bash groundtruth/profile_served.sh qwen3-8b 400 \
  "${common[@]}" --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 \
  --speculative-num-draft-tokens 4
TAG=plain bash groundtruth/profile_served.sh qwen3-8b 150 "${common[@]}"
