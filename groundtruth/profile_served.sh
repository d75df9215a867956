#!/usr/bin/env bash
# Start a real SGLang 0.5.17 server (dummy weights) and profile its decode iterations (groundtruth/profile_served.py).
# usage (repository root, GPU host, SGLang kit carried): bash groundtruth/profile_served.sh MODEL SECONDS [server flags]
# DRIVER=groundtruth/profile_waves.py drives the wave pattern instead (default groundtruth/profile_served.py).
# DRAFT=ZOO_NAME_OR_CONFIG adds a speculative draft (its directory written as the runner's plan draft_model is, random
# weights): pass --speculative-algorithm EAGLE and the shape flags among the server flags.
# TAG=NAME names the output served-MODEL-NAME (several servers of one model in one call).
# Writes $OUT/served-MODEL.tgz: the traces, driver.json, the server's log and the exact command.
set -uo pipefail
model=$1; budget=$2; shift 2; t0=$(date +%s)
driver=${DRIVER:-groundtruth/profile_served.py}
source groundtruth/kit_env.sh || exit $?
m=/root/gt/work/models/$model; name=served-$model${TAG:+-$TAG}; dest=/root/gt/prof/$name; rm -rf "$dest"; mkdir -p "$dest"
python3 -m simperf.groundtruth modeldir "$model" "$m" || exit 5
draft=()
if [ -n "${DRAFT:-}" ]; then
  d=/root/gt/work/models/draft-$(basename "$DRAFT" .json)
  python3 -m simperf.groundtruth modeldir "$DRAFT" "$d" || exit 5
  draft=(--speculative-draft-model-path "$d")
fi
cmd=(python3 -m sglang.launch_server --model-path "$m" --tokenizer-path "$m" --host 127.0.0.1 --port 30000
     --load-format dummy --enable-metrics "${draft[@]}" "$@")
source groundtruth/start_server.sh
start_server "$dest" "$budget" "$t0" SGLANG_RECORD_STEP_TIME=1 -- "${cmd[@]}"
pid=$server_pid
echo "python3 $driver 30000 $dest" >> "$dest/cmd.txt"
timeout $(( budget - ($(date +%s) - t0) - 15 )) python3 "$driver" 30000 "$dest"
echo "driver rc=$? after $(( $(date +%s) - t0 )) s"
sleep 3; kill -- -$pid 2>/dev/null
ls -la "$dest"
[ -n "${OUT:-}" ] && tar -C /root/gt/prof -czf "$OUT/$name.tgz" "$name"
exit 0
