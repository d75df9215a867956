#!/usr/bin/env bash
# How long the scheduler's launch of a speculative iteration takes on the host, by batch (docs/overheads.md "The
# speculative worker"): Llama-3.1-8B with the chain (3, 1, 4) on one lent H200, driven at 1, 16 and 48 requests,
# each load once unprofiled (the scheduler's own iteration times) and once profiled for 10 iterations with the host
# side recorded (PROFILE_CPU=1, no Python stacks: scheduler.run_batch's span against the GPU's).
# Prefill CUDA graphs at 1,024 tokens only (the driver's prompts), decode graphs to batch 48.
# usage (repository root, GPU host, SGLang kit and .dgkit carried): bash groundtruth/spec_launch_probe.sh
set -u
TAG=chain-launch DRAFT=groundtruth/plans/llama-3.1-8b-eagle-draft.json UNPROFILED=1 PROFILE_CPU=1 \
  CONCURRENCY="1 16 48" bash groundtruth/profile_served.sh llama-3.1-8b 500 --attention-backend flashinfer \
  --cuda-graph-max-bs 48 --cuda-graph-bs-prefill 1024 --speculative-algorithm EAGLE --speculative-num-steps 3 \
  --speculative-eagle-topk 1 --speculative-num-draft-tokens 4
