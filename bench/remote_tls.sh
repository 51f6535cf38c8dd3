#!/usr/bin/env bash
# What TLS costs a remote hit, for bench/RESULTS.md: makes a throwaway CA and a certificate for
# 127.0.0.1 (the openssl command), starts two redis-servers on 127.0.0.1 (one plain, one TLS
# only; free ports, temporary directories, no persistence), runs bench_remote_tls against both
# and stops them. Needs redis-server built with TLS and openssl; no GPU.
#
#   bench/remote_tls.sh [BUILD_DIR] [N entries] [R fresh stores] [payload bytes]
set -euo pipefail
build=${1:-build}
bench="$build/bench/bench_remote_tls"
[ -x "$bench" ] || { echo "build bench_remote_tls first (-DKILN_BUILD_BENCH=ON)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=kiln-bench-ca -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kiln-bench-server \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
    -CAcreateserial -days 2 -extfile "$work/san.ext" -out "$work/server.crt" 2>/dev/null

plain=$(free_port)
tls=$(free_port)
mkdir "$work/plain" "$work/tls"
redis-server --port "$plain" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/plain" \
    --logfile "$work/plain/redis.log" --daemonize no &
pids+=($!)
redis-server --port 0 --tls-port "$tls" --bind 127.0.0.1 --save '' --appendonly no \
    --tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" \
    --tls-ca-cert-file "$work/ca.crt" --tls-auth-clients no --dir "$work/tls" \
    --logfile "$work/tls/redis.log" --daemonize no &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$plain" ping >/dev/null 2>&1 && break; sleep 0.05; done
sleep 0.5 # the TLS one has no plain port to ping; bench_remote_tls fails loudly if it is not up

"$bench" "redis://127.0.0.1:$plain" "rediss://127.0.0.1:$tls" "$work/ca.crt" "${2:-200}" \
    "${3:-50}" "${4:-32768}"
