#!/usr/bin/env bash
# The reference topology on loopback: two data nodes (each with a lavik-meta member beside it,
# as on the two data VMs) and one meta-only member (the small third VM). `make cluster` runs
# `local-cluster.sh start`, `make cluster-stop` runs `local-cluster.sh stop`.
set -euo pipefail

BIN=${BIN:-bin}
DIR=${CLUSTER_DIR:-./cluster-data}
META_PEERS="1=meta-1@127.0.0.1:7491@127.0.0.1:7481,2=meta-2@127.0.0.1:7492@127.0.0.1:7482,3=meta-3@127.0.0.1:7493@127.0.0.1:7483"
META=127.0.0.1:7481,127.0.0.1:7482,127.0.0.1:7483

start() {
	mkdir -p "$DIR"
	for i in 1 2 3; do
		if [ -f "$DIR/meta-$i.pid" ] && kill -0 "$(cat "$DIR/meta-$i.pid")" 2>/dev/null; then
			echo "cluster: already running (make cluster-stop first)"; exit 1
		fi
	done
	for i in 1 2 3; do
		"$BIN/lavik-meta" --id "$i" --dir "$DIR/meta-$i" --listen "127.0.0.1:748$i" --peer-listen "127.0.0.1:749$i" \
			--sentinel-listen "127.0.0.1:2638$i" --peers "$META_PEERS" </dev/null >"$DIR/meta-$i.log" 2>&1 &
		echo $! >"$DIR/meta-$i.pid"
	done
	for i in 1 2; do
		"$BIN/lavik-data" --port "638$i" --dir "$DIR/data-$i" --admin-port "738$i" --meta "$META" \
			--node-id "data-$i" --shard-group default --logfile "$DIR/data-$i.log" </dev/null >/dev/null 2>&1 &
		echo $! >"$DIR/data-$i.pid"
	done
	for _ in $(seq 1 100); do
		roles="$(redis-cli -p 6381 role 2>/dev/null | head -1) $(redis-cli -p 6382 role 2>/dev/null | head -1)"
		if [ "$roles" = "master slave" ] || [ "$roles" = "slave master" ]; then
			break
		fi
		sleep 0.1
	done
	cat <<MSG
cluster: running, data and logs in $DIR
  data nodes (RESP): 127.0.0.1:6381 (data-1), 127.0.0.1:6382 (data-2); one is primary, the other follows it
    redis-cli -p 6381 role
  lavik-meta members (gRPC): $META  (meta-3 is the meta-only voter)
  Sentinel ports for clients (master name "default"): 127.0.0.1:26381, 26382, 26383
    redis-cli -p 26381 sentinel get-master-addr-by-name default
    $BIN/lavikctl --meta $META status
    $BIN/lavikctl --meta $META topology
  try a failover: kill -9 \$(cat $DIR/data-1.pid), then redis-cli -p 6382 role
  stop: make cluster-stop
MSG
}

stop() {
	for f in "$DIR"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || true
		rm -f "$f"
	done
	echo "cluster: stopped (data kept in $DIR; rm -rf it to start afresh)"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop"; exit 2 ;;
esac
