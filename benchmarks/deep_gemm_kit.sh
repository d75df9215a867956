#!/usr/bin/env bash
# Build .dgkit/dg-kit.tar.xz (6 MB): DeepGEMM as SGLang 0.5.17 pins it (sgl-deep-gemm==0.1.5.post1, built on
# tvm-ffi, so it loads on the GPU hosts' torch 2.11; the device kit's sgl-deep-gemm 0.2.5 does not: its _C.so
# wants a different torch), with the kit's tvm_ffi, simpy and pydantic, for benchmarks/deep_gemm_gpu.sh (the
# calibration) and groundtruth/kit_env.sh (DeepGEMM inside the real SGLang server).
# usage (repository root, CPU machine with PyPI, after ../shared/device-kit/build.sh): bash benchmarks/deep_gemm_kit.sh
set -euo pipefail
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d "$work/whl" sgl-deep-gemm==0.1.5.post1
mkdir -p "$work/site" "$root/.dgkit"
unzip -q -o "$work"/whl/sgl_deep_gemm-*.whl -d "$work/site"
tar -xJf "$root/.kit/gpu-kit.tar.xz" -C "$work/site" --wildcards './tvm_ffi' './apache_tvm_ffi-*.dist-info' \
  './simpy' './pydantic' './pydantic_core' './annotated_types' './typing_inspection'
tar -cJf "$root/.dgkit/dg-kit.tar.xz" -C "$work/site" .
grep -qxF '.dgkit/' "$root/.git/info/exclude" 2>/dev/null || echo '.dgkit/' >> "$root/.git/info/exclude"
echo "built .dgkit/dg-kit.tar.xz: $(( $(stat -c %s "$root/.dgkit/dg-kit.tar.xz") / 1048576 )) MiB"
