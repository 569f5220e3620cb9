#!/usr/bin/env bash
# The reference topology on loopback: two data nodes (each with a lavik-meta member beside it,
# as on the two data VMs) and one meta-only member (the small third VM). `make cluster` runs
# `local-cluster.sh start`, `make cluster-stop` runs `local-cluster.sh stop`.
#
# start waits until meta has placed the nodes (one primary taking writes, one follower in step
# with it) and exits 0; if a process dies or the placement does not come within
# CLUSTER_WAIT seconds, it says which, shows the end of the logs, stops what it started and
# exits 1. A cluster already running is left as it is (exit 0).
set -uo pipefail

BIN=${BIN:-bin}
DIR=${CLUSTER_DIR:-./cluster-data}
WAIT=${CLUSTER_WAIT:-30}
META_PEERS="1=meta-1@127.0.0.1:7491@127.0.0.1:7481,2=meta-2@127.0.0.1:7492@127.0.0.1:7482,3=meta-3@127.0.0.1:7493@127.0.0.1:7483"
META=127.0.0.1:7481,127.0.0.1:7482,127.0.0.1:7483
ADMIN=127.0.0.1:7381,127.0.0.1:7382
PROCS="meta-1 meta-2 meta-3 data-1 data-2"

alive() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

fail() {
	for p in $PROCS; do
		if [ -f "$DIR/$p.log" ]; then
			echo "--- the end of $DIR/$p.log:" >&2
			tail -n 6 "$DIR/$p.log" >&2
		fi
	done
	stop >/dev/null
	echo "cluster: FAILED: $*" >&2
	echo "cluster: stopped what was started (logs in $DIR); fix the above and run make cluster again" >&2
	exit 1
}

start() {
	for b in lavik-meta lavik-data lavikctl; do
		[ -x "$BIN/$b" ] || { echo "cluster: $BIN/$b is missing: run make build" >&2; exit 1; }
	done
	running=""
	for p in $PROCS; do
		alive "$p" && running="$running $p"
	done
	if [ -n "$running" ]; then
		echo "cluster: already running ($(echo $running), pid files in $DIR); make cluster-stop stops it"
		"$BIN/lavikctl" --meta "$META" --timeout 2s status --data "$ADMIN" 2>/dev/null || true
		exit 0
	fi
	mkdir -p "$DIR" || exit 1
	for i in 1 2 3; do
		"$BIN/lavik-meta" --id "$i" --dir "$DIR/meta-$i" --listen "127.0.0.1:748$i" --peer-listen "127.0.0.1:749$i" \
			--sentinel-listen "127.0.0.1:2638$i" --peers "$META_PEERS" </dev/null >"$DIR/meta-$i.log" 2>&1 &
		echo $! >"$DIR/meta-$i.pid"
	done
	for i in 1 2; do
		"$BIN/lavik-data" --port "638$i" --dir "$DIR/data-$i" --admin-port "738$i" --meta "$META" \
			--node-id "data-$i" --shard-group default --logfile "$DIR/data-$i.log" </dev/null >"$DIR/data-$i.out" 2>&1 &
		echo $! >"$DIR/data-$i.pid"
	done
	echo "cluster: started 3 lavik-meta members and 2 lavik-data nodes; waiting for meta to place them (up to ${WAIT}s)"
	deadline=$((SECONDS + WAIT))
	status=""
	while :; do
		for p in $PROCS; do
			alive "$p" || fail "$p exited (a port in use? see its log)"
		done
		# One primary that takes writes, one follower whose link is ONLINE.
		status=$("$BIN/lavikctl" --meta "$META" --timeout 1s status --data "$ADMIN" 2>/dev/null)
		if echo "$status" | grep -Eq '^data-[12] +PRIMARY +[0-9]+ +yes' &&
			echo "$status" | grep -Eq '^data-[12] +FOLLOWER +[0-9]+ +no .* ONLINE'; then
			break
		fi
		[ $SECONDS -lt $deadline ] || fail "meta did not place the nodes within ${WAIT}s; the last status was:
$status"
		sleep 0.2
	done
	echo "$status"
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
	stopped=0
	for f in "$DIR"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		if kill "$pid" 2>/dev/null; then
			stopped=$((stopped + 1))
			for _ in $(seq 1 50); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
		rm -f "$f"
	done
	echo "cluster: stopped $stopped processes (data kept in $DIR; rm -rf it to start afresh)"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
