package test

// Real client libraries doing what applications do: a rate limiter script loaded with SCRIPT
// LOAD and run with EVALSHA (and each library's helper that falls back to EVAL), a subscriber
// loop, and a pipeline. The programs are in clients/; each checks every reply itself.

import (
	"net"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

// TestClientLibraryApps runs clients/python/app.py (redis-py) and clients/node/app.js
// (ioredis) against the server.
func TestClientLibraryApps(t *testing.T) {
	s := harness.Start(t)
	_, port, _ := net.SplitHostPort(s.Addr)

	t.Run("redis-py", func(t *testing.T) {
		out := runPythonClient(t, "app.py", port)
		t.Logf("redis-py %v: %v", out["redis_py"], out)
	})

	t.Run("ioredis", func(t *testing.T) {
		out := runNodeClient(t, "app.js", port)
		t.Logf("ioredis %v: %v", out["ioredis"], out)
	})
}
