#!/usr/bin/env bash
# Sourced by groundtruth/profile_served.sh and groundtruth/profile_paced.sh: start a served SGLang in its own session
# and wait until it answers /health.
#   start_server DEST BUDGET T0 [VAR=VALUE...] -- COMMAND...
# writes DEST/cmd.txt (the environment and the command) and DEST/server.log, sets server_pid (kill -- -$server_pid
# stops the server and its children); exits 6 if the server dies first, 7 if it is not healthy 60 s before
# T0 + BUDGET (seconds since the epoch, as `date +%s`).
start_server() {
  local dest=$1 budget=$2 t0=$3 envs=()
  shift 3
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "${envs[*]} $*" > "$dest/cmd.txt"
  env "${envs[@]}" setsid "$@" > "$dest/server.log" 2>&1 &
  server_pid=$!
  until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=2)" 2>/dev/null; do
    sleep 2; kill -0 $server_pid 2>/dev/null || { tail -30 "$dest/server.log"; exit 6; }
    [ $(( $(date +%s) - t0 )) -lt $(( budget - 60 )) ] || { tail -30 "$dest/server.log"; kill -- -$server_pid; exit 7; }
  done
  echo "healthy after $(( $(date +%s) - t0 )) s"
}
