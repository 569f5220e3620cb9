// Command lavik-meta runs one member of Lavik's meta group: the raft group that holds the
// topology of the data nodes and decides who is primary (see services/meta/api).
//
//	lavik-meta --id 1 --dir /var/lib/lavik-meta --listen 10.0.0.1:7480 --peer-listen 10.0.0.1:7481 \
//	    --peers 1=meta-1@10.0.0.1:7481@10.0.0.1:7480,2=meta-2@10.0.0.2:7481@10.0.0.2:7480,3=meta-3@10.0.0.3:7481@10.0.0.3:7480
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lavikdb/lavik/services/meta/api"
	"github.com/lavikdb/lavik/services/meta/failover"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("lavik-meta", flag.ContinueOnError)
	id := fs.Uint64("id", 0, "this member's raft id (not 0, unique in the group, never reused)")
	name := fs.String("name", "", "this member's name (default meta-<id>)")
	dir := fs.String("dir", "./meta-data", "directory of the member's raft log, snapshots and state")
	listen := fs.String("listen", "127.0.0.1:7480", "address of the Meta gRPC service (data nodes, lavikctl)")
	peerListen := fs.String("peer-listen", "127.0.0.1:7481", "address of the Raft gRPC service (the other members)")
	sentinelListen := fs.String("sentinel-listen", "", "address of the Redis Sentinel port (SENTINEL get-master-addr-by-name, +switch-master, ...) for clients that find the primary through Sentinel; empty serves none")
	peers := fs.String("peers", "", "the founding members, id=name@peer-address@client-address,...; this member among them (ignored once the group exists)")
	join := fs.Bool("join", false, "this member was added with `lavikctl meta add` and starts with an empty log")
	hb := fs.Duration("heartbeat", failover.DefaultConfig.HeartbeatInterval, "how often data nodes heartbeat")
	lease := fs.Duration("lease", failover.DefaultConfig.Lease, "how long a primary may take writes after a heartbeat is answered; the same on every member (a new leader waits out its own); a failover takes about this; too short and pauses of the primary cost failovers")
	failAfter := fs.Duration("fail-after", failover.DefaultConfig.FailAfter, "how long a primary may miss heartbeats before it is replaced (once its lease is over)")
	tick := fs.Duration("raft-tick", 100*time.Millisecond, "raft's tick; the election timeout is 10 ticks")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *id == 0 {
		log.Error("--id is required")
		return 2
	}
	if *name == "" {
		*name = fmt.Sprint("meta-", *id)
	}
	cfg := failover.Config{HeartbeatInterval: *hb, Lease: *lease, FailAfter: *failAfter}
	if cfg.Lease < 3*cfg.HeartbeatInterval {
		log.Error("--lease must be at least 3 heartbeats", "lease", cfg.Lease, "heartbeat", cfg.HeartbeatInterval)
		return 2
	}
	founding, err := parsePeers(*peers)
	if err != nil {
		log.Error("bad --peers", "err", err)
		return 2
	}
	if !*join && len(founding) > 0 {
		if _, ok := founding[*id]; !ok {
			log.Error("--peers must include this member", "id", *id)
			return 2
		}
	}
	m, err := api.Start(api.Config{ID: *id, Name: *name, Dir: *dir, ClientAddr: *listen, PeerAddr: *peerListen, SentinelAddr: *sentinelListen, Peers: founding,
		Join: *join, Failover: cfg, TickInterval: *tick, ElectionTicks: 10, Logger: log})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	log.Info("lavik-meta member running", "id", *id, "name", *name, "listen", m.ClientAddr(), "peer_listen", m.PeerAddr(), "sentinel_listen", m.SentinelAddr())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	sig := <-sigs
	log.Info("shutting down", "signal", sig.String())
	if err := m.Close(); err != nil {
		log.Error("stopped with an error", "err", err)
		return 1
	}
	return 0
}

// parsePeers parses id=name@peer@client,...
func parsePeers(s string) (map[uint64]api.Peer, error) {
	out := map[uint64]api.Peer{}
	if s == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		idStr, rest, ok := strings.Cut(item, "=")
		parts := strings.Split(rest, "@")
		id, err := strconv.ParseUint(idStr, 10, 64)
		if !ok || err != nil || id == 0 || len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("%q: want id=name@peer-address@client-address", item)
		}
		if _, dup := out[id]; dup {
			return nil, errors.New("member " + idStr + " twice")
		}
		out[id] = api.Peer{Name: parts[0], PeerAddr: parts[1], ClientAddr: parts[2]}
	}
	return out, nil
}
