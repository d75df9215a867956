"""Which tiles DeepGEMM picks for one GEMM shape across M, and the time of each, with its JIT set as SGLang sets it.

Prints DeepGEMM's own config line per M (DG_PRINT_CONFIGS=1) and a CUDA-event time over 200 back-to-back calls.
GPU only, with benchmarks/deep_gemm_kit.sh's kit on PYTHONPATH:
    DG_PRINT_CONFIGS=1 python benchmarks/deep_gemm_probe.py 4096 12288 16,512,768,1024,2048
"""

from __future__ import annotations

import os
import sys

# SGLang 0.5.17 (srt/layers/deep_gemm_wrapper/compile_utils.py) compiles DeepGEMM's kernels with NVCC, not NVRTC
os.environ.setdefault("DG_JIT_USE_NVRTC", "0")

import deep_gemm  # noqa: E402
import torch  # noqa: E402


def main() -> None:
    n, k = int(sys.argv[1]), int(sys.argv[2])
    ms = [int(v) for v in sys.argv[3].split(",")]
    deep_gemm.set_pdl(True)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    sb = torch.rand(-(-n // 128), k // 128, device="cuda") + 0.5
    for m in ms:
        x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        sa = (torch.rand(k // 128, -(-m // 4) * 4, device="cuda") + 0.5).t()[:m]
        out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        for _ in range(3):
            deep_gemm.fp8_gemm_nt((x, sa), (w, sb), out)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(200):
            deep_gemm.fp8_gemm_nt((x, sa), (w, sb), out)
        end.record()
        torch.cuda.synchronize()
        print(f"n={n} k={k} m={m}: {start.elapsed_time(end) * 1e3 / 200:.1f} us per call", flush=True)


if __name__ == "__main__":
    main()
