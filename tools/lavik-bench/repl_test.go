package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// samplesOf builds offset samples every 100 ms for `secs` seconds of a primary writing rate
// bytes/s, and a follower whose offset at time t is follower(t); the follower is read 1 ms
// after the primary.
func samplesOf(secs float64, rate float64, follower func(t float64) float64) []offsetSample {
	var s []offsetSample
	for i := 0; i <= int(math.Round(secs*10)); i++ {
		t := float64(i) / 10
		tp := time.Duration(i) * 100 * time.Millisecond
		tf := tp + time.Millisecond
		s = append(s, offsetSample{TP: tp, P: int64(rate * t), TF: tf, F: int64(follower(tf.Seconds()))})
	}
	return s
}

func TestComputeLagSteady(t *testing.T) {
	// A follower 200 ms behind a primary writing 10 MB/s: a time lag of 200 ms and 2 MB,
	// bounded; the load runs 10 s, the samples go on 1 s longer.
	const rate = 10e6
	s := samplesOf(11, rate, func(t float64) float64 { return rate * math.Max(0, math.Min(t-0.2, 10)) })
	for i := range s { // the primary stops writing at 10 s
		s[i].P = min(s[i].P, int64(rate*10))
	}
	st := computeLag(s, time.Second, 10*time.Second)
	if st.Samples != 91 || st.Unresolved != 0 {
		t.Fatalf("samples %d unresolved %d, want 91 and 0", st.Samples, st.Unresolved)
	}
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %g, want %g +- %g", name, got, want, tol)
		}
	}
	near("ms p50", st.MsP50, 200, 2)
	near("ms max", st.MsMax, 200, 2)
	near("bytes p50", st.BytesP50, 2e6, 2e4)
	near("primary rate", st.PrimaryBps, rate, rate/100)
	near("follower rate", st.FollowerBps, rate, rate/100)
	near("slope", st.Slope, 0, 0.001)
	if !st.KeepsUp {
		t.Errorf("a follower with a steady lag does not keep up: %+v", st)
	}
}

func TestComputeLagFallingBehind(t *testing.T) {
	// A follower applying at 80% of the primary's rate: the time lag grows by 0.25 s per second
	// (a write at t is applied at t/0.8), and it does not keep up.
	const rate = 10e6
	s := samplesOf(20, rate, func(t float64) float64 { return 0.8 * rate * t })
	for i := range s {
		s[i].P = min(s[i].P, int64(rate*10)) // the load stops at 10 s; the follower catches up by 12.5 s
	}
	st := computeLag(s, 0, 10*time.Second)
	if st.KeepsUp || st.Unresolved != 0 {
		t.Fatalf("keeps up %v, unresolved %d: want false and 0", st.KeepsUp, st.Unresolved)
	}
	if math.Abs(st.Slope-0.25) > 0.01 {
		t.Errorf("slope %g, want 0.25", st.Slope)
	}
	if math.Abs(st.MsMax-2500) > 5 {
		t.Errorf("max lag %g ms, want 2500 (the write at 10 s applied at 12.5 s)", st.MsMax)
	}
	if math.Abs(st.FollowerBps/st.PrimaryBps-0.8) > 0.01 {
		t.Errorf("rates %g / %g, want a ratio of 0.8", st.FollowerBps, st.PrimaryBps)
	}
}

func TestComputeLagBursts(t *testing.T) {
	// A follower that receives everything written up to each whole second at that second (a
	// primary that ships once a second): lag between 0 and 1 s, bounded.
	const rate = 1e6
	s := samplesOf(12, rate, func(t float64) float64 { return rate * math.Floor(t) })
	st := computeLag(s, 0, 10*time.Second)
	if !st.KeepsUp || st.MsMax > 1000 || st.MsP50 < 300 || st.MsP50 > 700 {
		t.Fatalf("bursts: %+v; want bounded, max <= 1000 ms, median about 500 ms", st)
	}
}

func TestComputeLagUnresolved(t *testing.T) {
	// A follower that stops at 5 MB never reaches the later primary offsets.
	s := samplesOf(10, 1e6, func(t float64) float64 { return math.Min(1e6*t, 5e6) })
	st := computeLag(s, 0, 10*time.Second)
	if st.Unresolved == 0 || st.KeepsUp {
		t.Fatalf("stalled follower: %+v; want unresolved offsets and not keeping up", st)
	}
	if st := computeLag(nil, 0, time.Second); st.Samples != 0 || st.KeepsUp {
		t.Fatalf("no samples: %+v", st)
	}
}

func TestQuantileAndOverlap(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0.5, 5}, {0.99, 10}, {1, 10}, {0.1, 1}} {
		if got := quantile(append([]float64(nil), xs...), c.q); got != c.want {
			t.Errorf("quantile %g = %g, want %g", c.q, got, c.want)
		}
	}
	base := time.Unix(1000, 0)
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	for _, c := range []struct{ a0, a1, b0, b1, want float64 }{
		{0, 10, 2, 5, 3}, {0, 10, 8, 15, 2}, {0, 10, 11, 12, 0}, {2, 4, 0, 10, 2},
	} {
		if got := overlap(at(c.a0), at(c.a1), at(c.b0), at(c.b1)).Seconds(); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("overlap [%g,%g] [%g,%g] = %g, want %g", c.a0, c.a1, c.b0, c.b1, got, c.want)
		}
	}
}

func TestLogIssues(t *testing.T) {
	log := strings.Join([]string{
		`time=... level=INFO msg="ready to accept connections" addr=127.0.0.1:1`,
		`time=... level=WARN msg="change stream waits for the value log" err=x`,
		`1:C 02 Dec 2026 02:44:15.315 # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo`,
		`1:M 02 Dec 2026 02:44:15.717 # Connection with replica 127.0.0.1:44793 lost.`,
		`1:M 02 Dec 2026 02:44:15.718 * Synchronization with replica succeeded`,
		`time=... level=ERROR msg="replication: link" err=y`,
	}, "\n")
	lines, n := logIssues(log, 2)
	if n != 3 || len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[1], "lost") {
		t.Fatalf("logIssues = %q, %d; want the WARN, the lost replica and the ERROR counted, the first two kept", lines, n)
	}
}

// TestReplTable formats made-up results of both kinds and checks the rows, the ratios, and that
// a kind that failed early shows "-".
func TestReplTable(t *testing.T) {
	set := replSettings{Workload: "mixed 1:1", Conns: 50, Pipeline: 1, LagConns: []int{50}, LagS: 10}
	phase := func(name string, getQPS, p99 float64) PhaseResult {
		return PhaseResult{Phase: name, Run: RunResult{WindowS: 5, Ops: []OpStats{
			{Op: "get", QPS: getQPS, P50Ms: 0.5, P99Ms: p99, P999Ms: 2 * p99},
			{Op: "set", QPS: getQPS, P50Ms: 0.5, P99Ms: p99, P999Ms: 2 * p99}}}}
	}
	redis := ReplSystemReport{System: "redis", FullSync: SyncResult{Done: true, LinkUpS: 1, Seconds: 2, MBps: 100, DBSize: 1000},
		Phases: []PhaseResult{phase(phaseBefore, 40000, 1), phase(phaseDuring, 20000, 4), phase(phaseAfter, 40000, 1)},
		Lag: []LagResult{{Conns: 50, SetPerSec: 50000, Stats: LagStats{Samples: 100, MsP50: 1, MsP99: 20, MsMax: 30,
			BytesP50: 1024, PrimaryBps: 5e7, FollowerBps: 5e7, KeepsUp: true}}}}
	redis.Phases[1].Sync = &SyncResult{Done: true, Seconds: 3}
	redis.Phases[1].OverlapS, redis.Phases[1].OverlapFrac = 2, 1
	lavik := ReplSystemReport{System: "lavik", FullSync: SyncResult{Done: true, LinkUpS: 3, Seconds: 4, MBps: 50, DBSize: 1000},
		Phases: []PhaseResult{phase(phaseBefore, 30000, 2)}}
	var b strings.Builder
	ratios := writeReplTable(&b, replRows(set), []ReplSystemReport{redis, lavik})
	out := b.String()
	for _, want := range []string{
		"metric", "redis", "lavik", "lavik/redis",
		"\nfull resync, primary idle\n",
		"REPLICAOF to caught up, s",
		"primary under mixed 1:1 load, 50 conns x pipeline 1",
		"lag under SET load, 50 conns x pipeline 1, 10s",
		"2.00s of 5.00s (100%)",
		"50.0 / 50.0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	row := func(metric string) []string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), metric) {
				return strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), metric))
			}
		}
		t.Fatalf("no row %q:\n%s", metric, out)
		return nil
	}
	if got := row("REPLICAOF to caught up, s"); strings.Join(got, " ") != "2.00 4.00 2.00x" {
		t.Errorf("caught-up row %q, want 2.00 4.00 2.00x", got)
	}
	if got := row("before get ops/s"); strings.Join(got, " ") != "40,000 30,000 0.75x" {
		t.Errorf("before get row %q", got)
	}
	if got := row("during get ops/s"); strings.Join(got, " ") != "20,000 -" {
		t.Errorf("during get row %q: lavik has no during phase", got)
	}
	if r := ratios["full resync, primary idle: values MB/s"]; r != 0.5 {
		t.Errorf("MB/s ratio %g, want 0.5 (all ratios: %v)", r, ratios)
	}
	if _, ok := ratios["full resync, primary idle: follower DBSIZE"]; ok {
		t.Errorf("DBSIZE has no ratio")
	}
}
