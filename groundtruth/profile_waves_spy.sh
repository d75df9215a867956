#!/usr/bin/env bash
# Where a DeepSeek-V2-Lite extend launch's time goes in the corpus' closed-loop waves: a real SGLang 0.5.17 server
# started exactly as the corpus' h200/deepseek-v2-lite-flashinfer server (its server_cmd.txt: flashinfer, metrics and
# the per-request export on), driven by bench_serving with the corpus' c1-1k-256 and c16-1k-512 flags, while py-spy
# samples the scheduler process (sglang::scheduler) in time order, idle frames included (a blocking copy shows as
# the Python line that waits). Why: the corpus' c16 run's later waves launched each extend in 95-121 ms where one
# request alone takes ~58 ms (docs/overheads.md "Slow launches"); the torch profiler slowed the host
# too much to see it (groundtruth/experiments/waves-profile-h200/).
# usage (repository root, GPU host, SGLang kit and .pyspy/py_spy-*.whl carried): bash groundtruth/profile_waves_spy.sh SECONDS
#   SPY_RATE=Hz (default 500)
# Writes $OUT/waves-spy.tgz: per load bench-LOAD.jsonl (per-request details), sched-LOAD.speedscope.json, the
# server's log and per-request export, host facts and the exact commands (cmd.txt).
set -uo pipefail
budget=$1; t0=$(date +%s)
source groundtruth/kit_env.sh || exit $?
dest=/root/gt/prof/waves-spy; rm -rf "$dest"; mkdir -p "$dest/export"
m=/root/gt/work/models/deepseek-v2-lite; prompts=/root/gt/work/prompt_source.json
python3 -m simperf.groundtruth modeldir deepseek-v2-lite "$m" --prompts "$prompts" || exit 5
mkdir -p /tmp/pyspy && (cd /tmp/pyspy && python3 -m zipfile -e "$OLDPWD"/.pyspy/py_spy-*.whl .)
spy=$(ls /tmp/pyspy/py_spy-*.data/scripts/py-spy) && chmod +x "$spy" || exit 8
{ nproc; lscpu | grep -E 'Model name|^CPU\(s\)|MHz'; } > "$dest/host.txt"
server=(python3 -m sglang.launch_server --model-path "$m" --tokenizer-path "$m" --host 127.0.0.1 --port 30000
        --load-format dummy --export-metrics-to-file-dir "$dest/export" --enable-metrics --export-metrics-to-file
        --attention-backend flashinfer)
source groundtruth/start_server.sh
start_server "$dest" "$budget" "$t0" SGLANG_LOG_MS=1 SGLANG_RECORD_STEP_TIME=1 SGLANG_LOG_FORWARD_ITERS=1 -- "${server[@]}"
pid=$server_pid
sched=$(pgrep -f '^sglang::scheduler' | head -1)
echo "scheduler pid: ${sched:-none}" | tee -a "$dest/host.txt"
[ -n "$sched" ] || { kill -- -$pid; exit 9; }
for load in c1-1k-256:1:1024:256:8 c16-1k-512:16:1024:512:64; do
  IFS=: read -r name c in out n <<< "$load"
  left=$(( budget - ($(date +%s) - t0) - 25 ))
  [ $left -gt 40 ] || { echo "skip $name: $left s left"; continue; }
  bench=(python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "$m" --tokenizer "$m"
         --dataset-path "$prompts" --output-file "$dest/bench-$name.jsonl" --output-details --dataset-name random
         --random-range-ratio 1 --seed 1 --tokenize-prompt --flush-cache --disable-tqdm --cache-report
         --random-input-len $in --random-output-len $out --num-prompts $n --max-concurrency $c)
  echo "${bench[*]}" >> "$dest/cmd.txt"
  "$spy" record --pid $sched --rate ${SPY_RATE:-500} --idle --nonblocking --format speedscope \
    -o "$dest/sched-$name.speedscope.json" > "$dest/spy-$name.log" 2>&1 &
  spyp=$!
  sleep 1
  timeout $left "${bench[@]}" > "$dest/client-$name.log" 2>&1
  echo "$name: rc=$? after $(( $(date +%s) - t0 )) s"; grep -E 'Median TTFT|Median TPOT' "$dest/client-$name.log"
  kill -INT $spyp; wait $spyp
done
sleep 2; kill -- -$pid 2>/dev/null
ls -la "$dest"
[ -n "${OUT:-}" ] && tar -C /root/gt/prof -czf "$OUT/waves-spy.tgz" waves-spy
exit 0
