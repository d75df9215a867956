#!/usr/bin/env bash
# flashinfer GQA decode with an fp8 KV cache at pages 16 and 64 (calibration/grids/issue19_gqa_fp8_pages.yaml), timed
# as SGLang 0.5.17 replays it: graph-mode plan with SGLang's flashinfer (0.6.15, from SGLang's kit: carry
# .sgk/sgkit.tar.xz, ../shared/device-kit/sglang/README.md). From the project root on the GPU host:
#   bash benchmarks/gqa_fp8_pages.sh h100 540
# then: python -m simperf.calibrate --merge-from <files_at>/gp --out calibration/<gpu>
exec bash benchmarks/calibrate_grid.sh sgk attn_gqa_decode gp "$1" "$2" calibration/grids/issue19_gqa_fp8_pages.yaml
