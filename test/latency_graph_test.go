package test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

func TestLatencyHistogram(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := s.ClientOpts(&redis.Options{Protocol: 3})
	for i := 0; i < 5; i++ {
		c.Set(ctx, "k", "v", 0)
	}
	c.ClientID(ctx)
	v, err := c.Do(ctx, "LATENCY", "HISTOGRAM", "set", "nosuchcommand", "client").Result()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(map[any]any)
	if !ok {
		t.Fatalf("LATENCY HISTOGRAM: %#v", v)
	}
	if _, ok := m["nosuchcommand"]; ok || len(m) < 2 {
		t.Fatalf("LATENCY HISTOGRAM set nosuchcommand client: %#v", m)
	}
	check := func(name string, calls int64) {
		t.Helper()
		h, ok := m[name].(map[any]any)
		if !ok {
			t.Fatalf("%s: %#v", name, m[name])
		}
		if h["calls"] != calls {
			t.Fatalf("%s calls %v, want %d", name, h["calls"], calls)
		}
		cdf := h["histogram_usec"].(map[any]any)
		var last int64
		for _, n := range cdf {
			if n.(int64) > calls || n.(int64) <= 0 {
				t.Fatalf("%s: cumulative count %v of %d calls", name, n, calls)
			}
			last = max(last, n.(int64))
		}
		if last != calls {
			t.Fatalf("%s: histogram ends at %d of %d calls: %v", name, last, calls, cdf)
		}
	}
	check("set", 5)
	check("client|id", 1)
	if _, ok := m["get"]; ok {
		t.Fatal("a command without calls is listed")
	}
	all := c.Do(ctx, "LATENCY", "HISTOGRAM").Val().(map[any]any)
	if _, ok := all["set"]; !ok {
		t.Fatalf("LATENCY HISTOGRAM without arguments lacks set: %v", all)
	}
}

func TestLatencyGraph(t *testing.T) {
	s := harness.Start(t, debugArgs()...)
	ctx := harness.Ctx(t)
	c := s.Client()
	if err := c.Do(ctx, "LATENCY", "GRAPH", "command").Err(); err == nil || err.Error() != "ERR No samples available for event 'command'" {
		t.Fatalf("LATENCY GRAPH without samples: %v", err)
	}
	c.ConfigSet(ctx, "latency-monitor-threshold", "1")
	if err := c.Do(ctx, "DEBUG", "SLEEP", "0.02").Err(); err != nil {
		t.Fatal(err)
	}
	g, err := c.Do(ctx, "LATENCY", "GRAPH", "command").Text()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(g, "\n")
	if !strings.HasPrefix(lines[0], "command - high ") || !strings.Contains(lines[0], " ms (all time high ") {
		t.Fatalf("title %q", lines[0])
	}
	if lines[1] != strings.Repeat("-", 80) {
		t.Fatalf("rule %q", lines[1])
	}
	// One sample: min = max, so its column is the lowest step: '_' on the fourth row, a blank
	// row, then its label ("0s", "1s", ...) downwards.
	want := []string{" ", " ", " ", "_", " "}
	for i, w := range want {
		if lines[2+i] != w {
			t.Fatalf("graph row %d %q, want %q in\n%s", i, lines[2+i], w, g)
		}
	}
	if len(lines) < 9 || !strings.HasSuffix(g, "s\n") || lines[len(lines)-2] != "s" {
		t.Fatalf("label rows of\n%s", g)
	}
}
