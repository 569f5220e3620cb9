package test

// Real client libraries doing what applications do: a rate limiter script loaded with SCRIPT
// LOAD and run with EVALSHA (and each library's helper that falls back to EVAL), a subscriber
// loop, and a pipeline. The programs are in clients/; each checks every reply itself.

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

// TestClientLibraryApps runs clients/python/app.py (redis-py) and clients/node/app.js
// (ioredis) against the server.
func TestClientLibraryApps(t *testing.T) {
	s := harness.Start(t)
	_, port, _ := net.SplitHostPort(s.Addr)

	t.Run("redis-py", func(t *testing.T) {
		const python = "/usr/bin/python3"
		if _, err := os.Stat(python); err != nil {
			clientMissing(t, "%s is missing: the redis-py test needs Debian's python3 and python3-redis", python)
		}
		if out, err := exec.Command(python, "-c", "import redis").CombinedOutput(); err != nil {
			clientMissing(t, "redis-py is not installed for %s (apt-get install python3-redis): %s", python, bytes.TrimSpace(out))
		}
		out := runClient(t, python, filepath.Join("clients", "python", "app.py"), port)
		t.Logf("redis-py %v: %v", out["redis_py"], out)
	})

	t.Run("ioredis", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			clientMissing(t, "node is not installed: the ioredis test needs Node.js (apt-get install nodejs npm)")
		}
		dir := filepath.Join("clients", "node")
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis", "package.json")); err != nil {
			clientMissing(t, "ioredis is not installed: run npm ci --prefix test/clients/node")
		}
		out := runClient(t, node, filepath.Join(dir, "app.js"), port)
		t.Logf("ioredis %v: %v", out["ioredis"], out)
	})
}
