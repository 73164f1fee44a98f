# Sourced by the scripts that start `attnmt serve` in the background (bench_stream.sh,
# load_test.sh): serve_wait LOG PID waits (up to 60 s) until the server's log says
# "on http://127.0.0.1:PORT" and prints PORT; if the server exits or never says it, it prints the
# log to stderr and returns 1.
serve_wait() {
  local log=$1 pid=$2 port=
  for _ in $(seq 600); do
    port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" 2>/dev/null | head -1)
    if [ -n "$port" ]; then
      echo "$port"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  echo "serve_wait: the server (pid $pid) did not start listening" >&2
  return 1
}
