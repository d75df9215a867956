#!/usr/bin/env bash
# Where the time of a paced output path goes: a real SGLang 0.5.17 Qwen3-0.6B server, started as the corpus' servers
# (metrics and the per-request export on, flashinfer, graphs to 512 requests), driven by bench_serving at 64-512
# streams (128-token prompts, 512 outputs, the corpus' client flags) while groundtruth/cpu_sampler.py records every
# process' CPU time (server, scheduler, detokenizer, client) every 10 ms and py-spy samples the API server and the
# client (when a py-spy wheel was carried as .pyspy/, and the host lets it attach).
# usage (repository root, GPU host, SGLang kit carried): bash groundtruth/profile_paced.sh SECONDS [LOAD...]
#   LOAD: CONCURRENCY:PROMPTS (default 256:512 512:512 128:256 64:128), run in that order while time is left
#   METRICS=0 starts the server without --enable-metrics and the per-request export (SGLang's default)
#   OUTPUT_LEN=N outputs per request (default 512; a few tokens make a run its first burst: the receive phase),
#   INPUT_LEN=N prompt tokens (default 128)
#   SPY_FORMAT=speedscope keeps py-spy's samples in time order (default raw: collapsed stacks), SPY_RATE=Hz (200)
#   SERVER_ARGS="..." adds launch_server flags (e.g. --gc-warning-threshold-secs 0.005: SGLang logs every longer
#   garbage collection of the API server); FREEZE_GC_AFTER=N calls the server's /freeze_gc after the N-th load
# Writes $OUT/paced.tgz: per load bench-cC.jsonl (per-request details), cpu-cC.csv (+ .names), py-spy's collapsed
# stacks api-cC.txt and client-cC.txt, the server's log, host facts and the exact commands (cmd.txt).
set -uo pipefail
budget=$1; shift; t0=$(date +%s)
loads=${*:-256:512 512:512 128:256 64:128}
source groundtruth/kit_env.sh || exit $?
dest=/root/gt/prof/paced; rm -rf "$dest"; mkdir -p "$dest/export"
m=/root/gt/work/models/qwen3-0.6b; prompts=/root/gt/work/prompt_source.json
python3 -m simperf.groundtruth modeldir qwen3-0.6b "$m" --prompts "$prompts" || exit 5
spy=""
if ls .pyspy/py_spy-*.whl >/dev/null 2>&1; then
  mkdir -p /tmp/pyspy && (cd /tmp/pyspy && python3 -m zipfile -e "$OLDPWD"/.pyspy/py_spy-*.whl .)
  spy=$(ls /tmp/pyspy/py_spy-*.data/scripts/py-spy) && chmod +x "$spy"
fi
{ nproc; lscpu | grep -E 'Model name|^CPU\(s\)|MHz'; cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null; } > "$dest/host.txt"
metrics=(--export-metrics-to-file-dir "$dest/export" --enable-metrics --export-metrics-to-file)
[ "${METRICS:-1}" = 0 ] && metrics=()
server=(python3 -m sglang.launch_server --model-path "$m" --tokenizer-path "$m" --host 127.0.0.1 --port 30000
        --load-format dummy "${metrics[@]}" --attention-backend flashinfer --cuda-graph-max-bs 512 ${SERVER_ARGS:-})
source groundtruth/start_server.sh
start_server "$dest" "$budget" "$t0" SGLANG_LOG_MS=1 SGLANG_RECORD_STEP_TIME=1 SGLANG_LOG_FORWARD_ITERS=1 -- "${server[@]}"
pid=$server_pid
attach=0
if [ -n "$spy" ] && "$spy" dump --pid $pid > "$dest/attach_check.txt" 2>&1; then attach=1; fi
echo "py-spy: ${spy:-none}, attaches to the server: $attach" | tee -a "$dest/host.txt"
for load in $loads; do
  c=${load%%:*}; n=${load##*:}
  left=$(( budget - ($(date +%s) - t0) - 30 ))
  [ $left -gt $(( 40 + n / 8 )) ] || { echo "skip c$c: $left s left"; continue; }
  bench=(python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "$m" --tokenizer "$m"
         --dataset-path "$prompts" --dataset-name random --random-range-ratio 1 --seed 1 --tokenize-prompt
         --flush-cache --disable-tqdm --cache-report --random-input-len ${INPUT_LEN:-128} --random-output-len ${OUTPUT_LEN:-512}
         --num-prompts "$n" --max-concurrency "$c" --output-file "$dest/bench-c$c.jsonl" --output-details)
  echo "${bench[*]}" >> "$dest/cmd.txt"
  rm -f /tmp/sampler.stop
  python3 groundtruth/cpu_sampler.py "$dest/cpu-c$c.csv" 10 /tmp/sampler.stop $pid $$ &
  sampler=$!
  apispy=""
  if [ $attach = 1 ]; then
    "$spy" record --pid $pid --rate ${SPY_RATE:-200} --format ${SPY_FORMAT:-raw} --nonblocking -o "$dest/api-c$c.txt" > "$dest/api-c$c.log" 2>&1 &
    apispy=$!
  fi
  if [ -n "$spy" ]; then
    timeout $left "$spy" record --rate ${SPY_RATE:-200} --format ${SPY_FORMAT:-raw} --nonblocking -o "$dest/client-c$c.txt" -- "${bench[@]}" \
      > "$dest/client-c$c.log" 2>&1
  else
    timeout $left "${bench[@]}" > "$dest/client-c$c.log" 2>&1
  fi
  echo "c$c: rc=$? after $(( $(date +%s) - t0 )) s"; tail -25 "$dest/client-c$c.log" | grep -E 'throughput|TTFT|TPOT|ITL' | head -8
  [ -n "$apispy" ] && { kill -INT $apispy; wait $apispy; }
  touch /tmp/sampler.stop; wait $sampler
  done_loads=$(( ${done_loads:-0} + 1 ))
  if [ "${FREEZE_GC_AFTER:-0}" = "$done_loads" ]; then
    python3 -c "import urllib.request as u; print(u.urlopen(u.Request('http://127.0.0.1:30000/freeze_gc', method='POST')).read()[:200])" \
      2>&1 | tee -a "$dest/cmd.txt"; echo "freeze_gc after load $done_loads" >> "$dest/cmd.txt"
  fi
done
sleep 2; kill -- -$pid 2>/dev/null

ls -la "$dest"
[ -n "${OUT:-}" ] && tar -C /root/gt/prof -czf "$OUT/paced.tgz" paced
exit 0
