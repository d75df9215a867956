#!/usr/bin/env bash
# Where an eager extend launch's time goes in the corpus' closed-loop waves (docs/overheads.md "Slow launches"): a
# real SGLang 0.5.17 DeepSeek-V2-Lite server started exactly as the corpus' h200/deepseek-v2-lite-flashinfer server,
# driven by bench_serving with the corpus' c1-1k-256 and c16-1k-512 flags, then POST /freeze_gc (SGLang's own call:
# gc.freeze() in the scheduler, detokenizer and API server) and c16-1k-512 again. Beside it every Python process
# logs its garbage collections of 1 ms or more (groundtruth/gclog/sitecustomize.py), and
# groundtruth/thread_sampler.py samples the scheduler main thread's CPU and run-queue time every 2 ms. The server's
# per-request export gives each wave's launches.
# usage (repository root, GPU host, SGLang kit carried): bash groundtruth/profile_corpus_waves.sh SECONDS
#   SPY=1 also samples the scheduler with py-spy (a py-spy wheel carried as .pyspy/; speedscope, idle frames, SPY_RATE
#   Hz, default 500); LOADS="c1 c16 freeze c16-frozen" picks and orders the phases; the corpus' sampled-length load
#   c16-1k-512-rr0.8 is phase rr, run again as rr-again and with another seed as rr-seed2 (the first-wave check,
#   groundtruth/experiments/first-wave-h200/README.md)
# Triton compiles into $dest/triton (TRITON_CACHE_DIR), empty at the start as on a fresh host; after each phase
# triton-LOAD.txt lists every file there with its modification time, so a kernel compiled during a load shows.
# Writes $OUT/waves.tgz: per load bench-LOAD.jsonl, sched-LOAD.csv (thread samples), sched-LOAD.speedscope.json
# (SPY=1), gc/gc-PID.jsonl, the server's log and per-request export, host facts and the exact commands (cmd.txt).
set -uo pipefail
budget=$1; t0=$(date +%s)
source groundtruth/kit_env.sh || exit $?
dest=/root/gt/prof/waves; rm -rf "$dest"; mkdir -p "$dest/export" "$dest/gc"
m=/root/gt/work/models/deepseek-v2-lite; prompts=/root/gt/work/prompt_source.json
python3 -m simperf.groundtruth modeldir deepseek-v2-lite "$m" --prompts "$prompts" || exit 5
{ nproc; lscpu | grep -E 'Model name|^CPU\(s\)|MHz'; } > "$dest/host.txt"
spy=""
if [ "${SPY:-0}" = 1 ]; then
  mkdir -p /tmp/pyspy && (cd /tmp/pyspy && python3 -m zipfile -e "$OLDPWD"/.pyspy/py_spy-*.whl .)
  spy=$(ls /tmp/pyspy/py_spy-*.data/scripts/py-spy) && chmod +x "$spy" || exit 8
fi
export PYTHONPATH=$PWD/groundtruth/gclog:$PYTHONPATH GC_LOG_DIR=$dest/gc TRITON_CACHE_DIR=$dest/triton
server=(python3 -m sglang.launch_server --model-path "$m" --tokenizer-path "$m" --host 127.0.0.1 --port 30000
        --load-format dummy --export-metrics-to-file-dir "$dest/export" --enable-metrics --export-metrics-to-file
        --attention-backend flashinfer)
source groundtruth/start_server.sh
start_server "$dest" "$budget" "$t0" SGLANG_LOG_MS=1 SGLANG_RECORD_STEP_TIME=1 SGLANG_LOG_FORWARD_ITERS=1 -- "${server[@]}"
pid=$server_pid
sched=$(pgrep -f '^sglang::scheduler' | head -1)
echo "scheduler pid: ${sched:-none}" | tee -a "$dest/host.txt"
[ -n "$sched" ] || { kill -- -$pid; exit 9; }
# name:concurrency:output tokens:prompts:range ratio:seed
declare -A phases=([c1]=c1-1k-256:1:256:8:1:1 [c16]=c16-1k-512:16:512:64:1:1 [c16-frozen]=c16-1k-512-frozen:16:512:64:1:1
                   [rr]=c16-1k-512-rr0.8:16:512:64:0.8:1 [rr-again]=c16-1k-512-rr0.8-again:16:512:64:0.8:1
                   [rr-seed2]=c16-1k-512-rr0.8-seed2:16:512:64:0.8:2)
for phase in ${LOADS:-c1 c16 freeze c16-frozen}; do
  if [ "$phase" = freeze ]; then
    python3 -c "import urllib.request as u; print(u.urlopen(u.Request('http://127.0.0.1:30000/freeze_gc', method='POST')).read()[:200])" \
      >> "$dest/cmd.txt" 2>&1; echo "freeze_gc at $(date +%s.%N)" >> "$dest/cmd.txt"; sleep 2; continue
  fi
  IFS=: read -r name c out n rr seed <<< "${phases[$phase]}"
  left=$(( budget - ($(date +%s) - t0) - 25 ))
  [ $left -gt 40 ] || { echo "skip $name: $left s left"; continue; }
  bench=(python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "$m" --tokenizer "$m"
         --dataset-path "$prompts" --output-file "$dest/bench-$name.jsonl" --output-details --dataset-name random
         --random-range-ratio $rr --seed $seed --tokenize-prompt --flush-cache --disable-tqdm --cache-report
         --random-input-len 1024 --random-output-len $out --num-prompts $n --max-concurrency $c)
  echo "${bench[*]}" >> "$dest/cmd.txt"
  rm -f /tmp/sampler.stop
  python3 groundtruth/thread_sampler.py "$dest/sched-$name.csv" 2 /tmp/sampler.stop $sched &
  sampler=$!
  spyp=""
  if [ -n "$spy" ]; then
    "$spy" record --pid $sched --rate ${SPY_RATE:-500} --idle --nonblocking --format speedscope \
      -o "$dest/sched-$name.speedscope.json" > "$dest/spy-$name.log" 2>&1 &
    spyp=$!; sleep 1
  fi
  timeout $left "${bench[@]}" > "$dest/client-$name.log" 2>&1
  echo "$name: rc=$? after $(( $(date +%s) - t0 )) s"; grep -E 'Median TTFT|Median TPOT' "$dest/client-$name.log"
  touch /tmp/sampler.stop; wait $sampler
  [ -n "$spyp" ] && { kill -INT $spyp; wait $spyp; }
  find "$dest/triton" -type f -printf '%T@ %P\n' 2>/dev/null | sort -n > "$dest/triton-$name.txt"
done
sleep 2; kill -- -$pid 2>/dev/null
ls -la "$dest" "$dest/gc"
[ -n "${OUT:-}" ] && tar -C /root/gt/prof --exclude=waves/triton -czf "$OUT/waves.tgz" waves
exit 0
