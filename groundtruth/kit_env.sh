#!/usr/bin/env bash
# Sourced by groundtruth/kit_run.sh and groundtruth/profile_forward.sh on a lent GPU host without SGLang: unpacks the
# SGLang 0.5.17 kit (carried whole as .sgk/, or in chunks .xfer0/, .xfer1/, ... cut by groundtruth/kit_chunks.sh),
# adds SGLang's FA3 kernel file when it came along, and sets the environment the kit needs. Returns 3 or 4 on a
# kit that cannot be unpacked. State stays on a warm host (/tmp/sgsite, /tmp/xparts, /tmp/xfer).
site=/tmp/sgsite
kit=.sgk/sgkit.tar.xz
# chunks cut by groundtruth/kit_chunks.sh, carried one per call (.xfer0/, .xfer1/, ...) and kept in /tmp/xparts:
# reassembled once all are there
if ls -d .xfer[0-9]* >/dev/null 2>&1; then mkdir -p /tmp/xparts && cp .xfer[0-9]*/* /tmp/xparts/; fi
if [ -f /tmp/xparts/MANIFEST ] && [ ! -f /tmp/xfer/.ok ]; then
  m=/tmp/xparts/MANIFEST
  want=$(awk '/^bytes/{print $2}' $m); sum=$(awk '/^sha256/{print $2}' $m)
  have=$(cat /tmp/xparts/p?? | wc -c)
  if [ "$have" != "$want" ]; then
    echo "kit_env: $have of $want bytes of the kit's chunks here; carry the rest first" >&2; return 4
  fi
  [ "$(cat /tmp/xparts/p?? | sha256sum | cut -d' ' -f1)" = "$sum" ] || { echo "kit_env: chunk checksum differs" >&2; return 4; }
  mkdir -p /tmp/xfer && cat /tmp/xparts/p?? | tar -xf - -C /tmp/xfer && touch /tmp/xfer/.ok || return 4
fi
[ -f /tmp/xfer/sgkit.tar.xz ] && kit=/tmp/xfer/sgkit.tar.xz
if [ ! -f $site/.ok ]; then
  mkdir -p $site && xz -dc -T0 $kit | tar -xf - -C $site && touch $site/.ok || return 3
fi
# DeepGEMM, which the kit leaves out, when .dgkit/ came along (benchmarks/deep_gemm_kit.sh: SGLang 0.5.17's pin
# sgl-deep-gemm 0.1.5.post1). Without it SGLang runs block-fp8 linear layers with its Triton kernel.
if [ -f .dgkit/dg-kit.tar.xz ] && [ ! -d $site/deep_gemm ]; then
  tar -xJf .dgkit/dg-kit.tar.xz -C $site ./deep_gemm ./sgl_deep_gemm-0.1.5.post1.dist-info || return 3
fi
# SGLang's FA3 kernels (its Hopper default attention backend), when they came along
if [ -f /tmp/xfer/flash_ops.so.xz ] && [ ! -f $site/sgl_kernel/flash_ops.abi3.so ]; then
  xz -dc -T0 /tmp/xfer/flash_ops.so.xz > $site/sgl_kernel/flash_ops.abi3.so.tmp \
    && mv $site/sgl_kernel/flash_ops.abi3.so.tmp $site/sgl_kernel/flash_ops.abi3.so || return 3
fi
export PYTHONPATH=$site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
