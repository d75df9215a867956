#!/usr/bin/env bash
# Time and profile single forwards of a zoo model in real SGLang 0.5.17 (dummy weights), with SGLang's own
# `python -m sglang.benchmark.one_batch`: one unprofiled pass for the clean latencies, one under the torch profiler
# for where the time goes (GPU busy time, kernels, launches: `simperf groundtruth trace`). Each input length is run
# twice in a pass and the second is kept, so Triton and flashinfer JIT compiles stay out of the numbers.
#
# usage (repository root, on the GPU host):
#   bash groundtruth/profile_forward.sh MODEL NAME SECONDS [one_batch server flags...]
#   e.g. bash groundtruth/profile_forward.sh deepseek-v2-lite v2lite-prefill 420 --attention-backend flashinfer
# Environment: INPUT_LENS (default "128 1024 8192"), BATCH (default 1; a list runs every batch size with every
# input length), OUTPUT_LEN (default 4; the decode steps one_batch times after the prefill), PROFILE=0 skips the
# profiled pass (e.g. for a decode sweep), CLEAN=0 the unprofiled one, PROFILE_STAGE=decode profiles PROFILE_STEPS
# (default 4) decode steps from the middle of the output instead of the prefill, and keeps every decode trace.
# Writes $OUT/forward-NAME/{clean.jsonl,profiled.jsonl,summary.jsonl,one_batch*.log,cmd.txt,env.txt}, plus the
# trace of the middle input length (the full traces stay in /root/gt/prof/NAME).
set -uo pipefail
model=$1; name=$2; budget=$3; shift 3
t0=$(date +%s)
source groundtruth/kit_env.sh || exit $?
lens=${INPUT_LENS:-128 1024 8192}; batch=${BATCH:-1}; olen=${OUTPUT_LEN:-4}; stage=${PROFILE_STAGE:-prefill}
pflags=(--profile --profile-stage $stage)
[ "$stage" = decode ] && pflags+=(--profile-steps ${PROFILE_STEPS:-4})
work=/root/gt/prof/$name; dest=${OUT:-/tmp/out}/forward-$name
mkdir -p "$work" "$dest"
python3 -m simperf.groundtruth modeldir "$model" /root/gt/work/models/"$model" || exit 5
base=(python3 -m sglang.benchmark.one_batch --model-path /root/gt/work/models/"$model" --load-format dummy
      --batch-size $batch --input-len $lens $lens --output-len $olen "$@")
left() { echo $(( budget - ($(date +%s) - t0) - 20 )); }
[ "${CLEAN:-1}" = 0 ] || echo "${base[*]} --result-filename clean.jsonl" > "$dest/cmd.txt"
[ "${PROFILE:-1}" = 0 ] || echo "SGLANG_TORCH_PROFILER_DIR=$work ${base[*]} --result-filename profiled.jsonl ${pflags[*]}" >> "$dest/cmd.txt"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; lscpu | grep -E 'Model name|^CPU\(s\)'; python3 -c 'import sglang, torch; print("sglang", sglang.__version__, "torch", torch.__version__)'; } > "$dest/env.txt" 2>&1
[ "${CLEAN:-1}" = 0 ] || timeout $(left) "${base[@]}" --result-filename "$work/clean.jsonl" > "$dest/one_batch_clean.log" 2>&1
echo "clean pass rc=$? after $(( $(date +%s) - t0 )) s"
[ "${PROFILE:-1}" = 0 ] || SGLANG_TORCH_PROFILER_DIR=$work timeout $(left) "${base[@]}" --result-filename "$work/profiled.jsonl" \
  "${pflags[@]}" > "$dest/one_batch_profiled.log" 2>&1
echo "profiled pass rc=$? after $(( $(date +%s) - t0 )) s"
cp "$work"/clean.jsonl "$work"/profiled.jsonl "$dest"/ 2>/dev/null
ls "$work"/*.trace.json.gz >/dev/null 2>&1 && python3 -m simperf.groundtruth trace "$work"/*.trace.json.gz > "$dest/summary.jsonl"
mid=$(echo $lens | awk '{print $2}')
if [ "$stage" = decode ]; then cp "$work"/*decode.trace.json.gz "$dest"/ 2>/dev/null
else cp "$work"/*input${mid}_*prefill.trace.json.gz "$dest"/ 2>/dev/null; fi
tail -c 3000 "$dest/one_batch_clean.log"; grep -h "Prefill. latency" "$dest"/one_batch_*.log
exit 0
