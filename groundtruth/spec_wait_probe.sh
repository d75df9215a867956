#!/usr/bin/env bash
# What the speculative launch wait is made of (docs/overheads.md "The speculative worker"): four servers on one lent
# H200, one after another, so that host speed is common to all: Qwen3-8B with the check plan's draft (4 steps, top-k
# 2, 6 draft tokens) and without, Llama-3.1-8B with the chain (3, 1, 4) and without. Each times five single-token
# requests at 1,024 and 128 prompt tokens and profiles one request from its prefill with the host side recorded
# (PREFILL_CPU=1: where the scheduler waits); the speculative ones also time and profile decode at one request.
# Decode CUDA graphs up to batch 4 and prefill graphs at 128 and 1,024 tokens only (the probe runs one request of
# those lengths at a time): the default list of 58 prefill graphs takes ~230 s to capture per server.
# usage (repository root, GPU host, SGLang kit and .dgkit carried): bash groundtruth/spec_wait_probe.sh
set -u
common=(--attention-backend flashinfer --cuda-graph-max-bs 4 --cuda-graph-bs-prefill 128 1024)
export PREFILL=1 PREFILL_CPU=1 PREFILL_LENS="1024 128"
TAG=eagle DRAFT=groundtruth/plans/qwen3-8b-eagle-draft.json UNPROFILED=1 CONCURRENCY=1 \
  bash groundtruth/profile_served.sh qwen3-8b 240 "${common[@]}" --speculative-algorithm EAGLE \
  --speculative-num-steps 4 --speculative-eagle-topk 2 --speculative-num-draft-tokens 6
TAG=plain CONCURRENCY="" bash groundtruth/profile_served.sh qwen3-8b 150 "${common[@]}"
TAG=chain DRAFT=groundtruth/plans/llama-3.1-8b-eagle-draft.json UNPROFILED=1 CONCURRENCY=1 \
  bash groundtruth/profile_served.sh llama-3.1-8b 170 "${common[@]}" --speculative-algorithm EAGLE \
  --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4
TAG=plain CONCURRENCY="" bash groundtruth/profile_served.sh llama-3.1-8b 150 "${common[@]}"
