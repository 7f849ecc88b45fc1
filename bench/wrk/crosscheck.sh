#!/usr/bin/env bash
# A second load generator beside bench/loadgen, to check the server CPU figures: wrk (Debian's
# package `wrk`), one thread, against the release echo servers of the bench workspace.
#
#   bench/wrk/crosscheck.sh [ROUNDS] [SECS]      # default: 3 rounds, 5 s per level
#
# wrk spends less CPU per request than loadgen (it parses no answer), so on two shared cores it
# leaves more of the machine to the server. It does not check the answers: the errors column
# counts non-2xx statuses and socket errors only. Build first:
#   (cd bench && cargo build --release)
# Prints, per server and connection count, the median over the rounds of the server's CPU
# (user + system, from /proc/PID/stat) per request and of the requests per second.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
bin=target/release
script=wrk/echo.lua
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
tck=$(getconf CLK_TCK)
servers=(floor our-echo rmcp-echo)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

one() { # server conns
    local server=$1 conns=$2 port pid before after out requests errors
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin/$server" --http "$port" >/dev/null 2>&1 &
    pid=$!
    local up=
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
        sleep 0.05
    done
    if [ -z "$up" ]; then
        kill "$pid" 2>/dev/null || true
        echo "$server never listened on 127.0.0.1:$port" >&2
        exit 1
    fi
    wrk -t1 -c"$conns" -d1s -s "$script" "http://127.0.0.1:$port/mcp" >/dev/null
    before=$(cpu_ticks "$pid")
    out=$(wrk -t1 -c"$conns" -d"${secs}s" -s "$script" "http://127.0.0.1:$port/mcp")
    after=$(cpu_ticks "$pid")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    requests=$(sed -n 's/^WRK requests=\([0-9]*\).*/\1/p' <<<"$out")
    errors=$(sed -n 's/^WRK .*errors=\([0-9]*\).*/\1/p' <<<"$out")
    awk -v s="$server" -v c="$conns" -v n="$requests" -v e="$errors" -v t=$((after - before)) \
        -v tck="$tck" -v secs="$secs" \
        'BEGIN { printf "%s %s %.1f %.0f %d\n", s, c, t * 1e6 / tck / n, n / secs, e }' >>"$results"
}

for round in $(seq "$rounds"); do
    # Rotated order, as cargo xtask bench does.
    for i in 0 1 2; do
        server=${servers[$(((i + round) % 3))]}
        for conns in 1 16 64; do one "$server" "$conns"; done
    done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '| server | conns | CPU µs per call | calls/s | errors |\n| --- | ---: | ---: | ---: | ---: |\n'
for server in "${servers[@]}"; do
    for conns in 1 16 64; do
        rows=$(awk -v s="$server" -v c="$conns" '$1 == s && $2 == c' "$results")
        cpu=$(awk '{print $3}' <<<"$rows" | median)
        rps=$(awk '{print $4}' <<<"$rows" | median)
        errors=$(awk '{e += $5} END {print e}' <<<"$rows")
        printf '| %s | %s | %s | %s | %s |\n' "$server" "$conns" "$cpu" "$rps" "$errors"
    done
done
