// Command lavik-data runs a Lavik data node: a Redis-compatible server whose key index lives in
// memory and whose values live in a value log on SSD.
//
//	lavik-data [config-file] [--option value ...]
//
// It takes redis-server's style of arguments; --help lists every option.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lavikdb/lavik/pkg/schedpolicy"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/admin"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/metalink"
	"github.com/lavikdb/lavik/services/data/repl"
	"github.com/lavikdb/lavik/services/data/server"
	"github.com/lavikdb/lavik/services/data/vlog"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, err := config.Parse(args)
	switch {
	case errors.Is(err, config.ErrHelp):
		fmt.Print(config.Usage("lavik-data"))
		return 0
	case errors.Is(err, config.ErrVersion):
		fmt.Printf("lavik-data %s (Redis %s compatible)\n", commands.Version, commands.RedisVersion)
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "lavik-data: %v\n", err)
		return 1
	}
	// LAVIK_CPUPROFILE=<file> records a CPU profile from start to exit, for `go tool pprof`.
	if p := os.Getenv("LAVIK_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() {
				pprof.StopCPUProfile()
				f.Close()
			}()
		}
	}
	// LAVIK_TRACE=<file> records a runtime execution trace from start to exit, for `go tool trace`.
	if p := os.Getenv("LAVIK_TRACE"); p != "" {
		f, err := os.Create(p)
		if err == nil && trace.Start(f) == nil {
			defer func() {
				trace.Stop()
				f.Close()
			}()
		}
	}
	configFile := ""
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		configFile = args[0]
	}

	level := new(slog.LevelVar)
	level.Set(logLevel(cfg.Get("loglevel")))
	var out io.Writer = os.Stderr
	if p := cfg.Get("logfile"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lavik-data: open logfile: %v\n", err)
			return 1
		}
		defer f.Close()
		out = f
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	if p := cfg.Get("pidfile"); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Error("cannot write pidfile", "path", p, "err", err)
			return 1
		}
		defer os.Remove(p)
	}

	if err := schedpolicy.Apply(cfg.Get("sched-policy")); err != nil {
		log.Warn("cannot set the scheduling policy; the default stays", "sched-policy", cfg.Get("sched-policy"), "err", err)
	}

	fsync, _ := vlog.ParseFsync(cfg.Get("appendfsync"))
	engine, err := vlog.NewEngine(cfg.Get("io-engine"), int(cfg.Int("io-depth")))
	if err != nil {
		log.Error("cannot start the io engine", "err", err)
		return 1
	}
	defer engine.Close()
	if why := vlog.Fallback(); why != "" && engine.Name() == "pread" {
		log.Warn("io_uring unavailable; reading values with pread", "reason", why)
	}

	var cache *vlog.Cache
	if size := cfg.Int("value-cache-size"); size > 0 {
		if cache, err = vlog.NewCache(size); err != nil {
			log.Error("cannot create the value cache", "size", size, "err", err)
			return 1
		}
		defer cache.Close()
		commands.SetValueCache(cache)
	}

	shards := cfg.Shards()
	if cfg.Get("shards") == "auto" {
		// An existing data directory keeps the shard count it was created with.
		if n, ok, err := keyspace.StoredShards(vfs.Default, cfg.Get("dir")); err != nil {
			log.Error("cannot read the data directory layout", "dir", cfg.Get("dir"), "err", err)
			return 1
		} else if ok {
			shards = n
		}
	}
	log.Info("loading data", "dir", cfg.Get("dir"), "shards", shards, "appendfsync", fsync.String(), "io_engine", engine.Name(), "value_cache_bytes", cfg.Int("value-cache-size"))
	ks, err := keyspace.Open(keyspace.Options{
		FS:                 vfs.Default,
		Dir:                cfg.Get("dir"),
		Shards:             shards,
		SegmentSize:        cfg.Int("segment-size"),
		Engine:             engine,
		Cache:              cache,
		Fsync:              fsync,
		Databases:          int(cfg.Int("databases")),
		Logger:             log,
		ReclaimRate:        cfg.Int("reclaim-rate"),
		GroupThreshold:     int(cfg.Int("group-threshold")),
		CheckpointInterval: checkpointInterval(cfg.Int("checkpoint-interval-bytes")),
		RepairCorruption:   cfg.Get("repair-corrupt-log") == "yes",
		// A node that follows, or waits for meta to place it, removes no expired key of its own.
		Follower: startsAsFollower(cfg),
	})
	if err != nil {
		log.Error("cannot open the data directory", "dir", cfg.Get("dir"), "err", err)
		return 1
	}
	st := ks.Stats(nil)
	log.Info("data loaded", "keys", st.Keys, "seconds", fmt.Sprintf("%.3f", ks.LoadTime().Seconds()), "segments", st.Log.Segments)

	srv := server.New(server.Options{Config: cfg, Keyspace: ks, Logger: log, ConfigFile: configFile})
	cfg.OnChange(func(name, value string) {
		if name == "loglevel" {
			level.Set(logLevel(value))
		}
		srv.ConfigChanged(name, value)
	})
	if err := srv.Listen(); err != nil {
		log.Error("cannot listen", "err", err)
		ks.Close()
		return 1
	}
	node := repl.New(ks, repl.Options{
		FS:            vfs.Default,
		Dir:           cfg.Get("dir"),
		BacklogSize:   cfg.Int("repl-backlog-size"),
		MasterAuth:    func() string { return cfg.Get("masterauth") },
		ListeningPort: func() int { return srv.Addr().(*net.TCPAddr).Port },
		PingPeriod:    time.Duration(cfg.Int("repl-ping-replica-period")) * time.Second,
		Timeout:       time.Duration(cfg.Int("repl-timeout")) * time.Second,
		Logger:        log,
		Server:        srv,
		PubSub:        srv.PubSub(),
	})
	srv.SetReplication(node)
	var ident *repl.Identity
	var metaLink *metalink.Link
	var adminAddr string
	if cfg.Get("meta") != "" {
		if host, _ := cfg.Replicaof(); host != "" {
			log.Error("replicaof and meta are exclusive: under meta, meta decides whom a node follows")
			srv.Close()
			ks.Close()
			return 1
		}
		if ident, err = repl.LoadIdentity(vfs.Default, cfg.Get("dir"), cfg.Get("node-id")); err != nil {
			log.Error("cannot load the node's identity", "err", err)
			srv.Close()
			ks.Close()
			return 1
		}
		// From here on only meta changes the node's role: before the admin API or a client
		// could ask for it.
		node.Manage(ident)
	} else if err := node.Start(cfg.Replicaof()); err != nil {
		log.Error("cannot start replication", "err", err)
	}
	if p := cfg.Get("admin-port"); p != "" {
		lis, err := net.Listen("tcp", net.JoinHostPort(cfg.Get("bind"), p))
		if err != nil {
			log.Error("cannot listen for the admin API", "port", p, "err", err)
			srv.Close()
			ks.Close()
			return 1
		}
		g := admin.Serve(lis, admin.New(node, ks, ident, commands.Version))
		defer g.Stop()
		adminAddr = lis.Addr().String()
		log.Info("admin API listening", "addr", adminAddr)
	}
	if ident != nil {
		dataAddr := cfg.Get("announce")
		if dataAddr == "" {
			dataAddr = srv.Addr().String()
		}
		metaLink = metalink.Start(metalink.Config{Meta: strings.Split(cfg.Get("meta"), ","), DataAddr: dataAddr, AdminAddr: adminAddr,
			ShardGroup: cfg.Get("shard-group"), Version: commands.Version, Logger: log}, node, ident)
		log.Info("under meta", "node", ident.NodeID(), "group", cfg.Get("shard-group"), "meta", cfg.Get("meta"))
	}
	log.Info("ready to accept connections", "addr", srv.Addr().String(), "version", commands.Version)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()
	code := 0
	select {
	case sig := <-sigs:
		log.Info("received signal, shutting down", "signal", sig.String())
	case <-srv.Done():
		log.Info("shutdown requested by a client")
	case err := <-serveErr:
		log.Error("server stopped", "err", err)
		code = 1
	}
	if metaLink != nil {
		metaLink.Close()
	}
	srv.Close()
	node.Close()
	if err := ks.Close(); err != nil {
		log.Error("closing the keyspace failed; the last writes may not be durable", "err", err)
		return 1
	}
	log.Info("lavik-data stopped; every acknowledged write is on disk")
	return code
}

// checkpointInterval maps checkpoint-interval-bytes (0 = off) to
// keyspace.Options.CheckpointInterval (0 = the default, negative = off).
func checkpointInterval(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "verbose":
		return slog.LevelDebug + 2
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// startsAsFollower says the node starts as a follower (replicaof) or under lavik-meta, which
// places it: until it is a primary its keyspace removes no key for having expired.
func startsAsFollower(cfg *config.Config) bool {
	host, _ := cfg.Replicaof()
	return host != "" || cfg.Get("meta") != ""
}
