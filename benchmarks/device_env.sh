# Shared set-up of the calibration scripts that run on a lent GPU (benchmarks/*.sh): unpack a kit once per host,
# set the environment the calibration workers and flashinfer's JIT need, and start the log with the GPU and library
# versions. Source it from the project root, then call
#   device_env KIT LOG      KIT: kit (the device kit, .kit: flashinfer 0.7.2, FlashMLA, deep-gemm) or
#                                sgk (SGLang's kit, .sgk: SGLang 0.5.17 and its flashinfer 0.6.15)
device_env() {
  local kit=$1 log=$2 site
  if [ "$kit" = sgk ]; then
    site=/tmp/sgsite
    [ -f $site/.ok ] || { mkdir -p $site && xz -dc -T0 .sgk/sgkit.tar.xz | tar -xf - -C $site && touch $site/.ok; }
  else
    site=/tmp/site
    [ -f $site/.ok ] || { mkdir -p $site && tar -xJf .kit/gpu-kit.tar.xz -C $site && touch $site/.ok; }
  fi
  export PYTHONPATH=$site:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
  export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
  mkdir -p "$(dirname "$log")"
  { date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
    python3 -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>/dev/null || true
  } 2>&1 | tee -a "$log"
}

# lent_setup NAME KIT: the lent GPU's kind ($gpu: h100 or h200), a work directory ($work = /tmp/rec/$gpu) and a log
# ($log = $work/NAME-$gpu.log), then device_env KIT $log (the straggler and occupancy scripts)
lent_setup() {
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o -i -E 'h100|h200' | tr 'A-Z' 'a-z')
  work=/tmp/rec/$gpu; mkdir -p "$work"; log=$work/$1-$gpu.log
  device_env "$2" "$log"
}
