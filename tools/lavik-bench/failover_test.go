package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSummarizeTimes(t *testing.T) {
	in := []float64{700, 600, 900, 650, 620}
	st := summarizeTimes(in)
	if st.Min != 600 || st.Median != 650 || st.P90 != 900 || st.Max != 900 {
		t.Fatalf("min/median/p90/max %v/%v/%v/%v, want 600/650/900/900", st.Min, st.Median, st.P90, st.Max)
	}
	if !slices.Equal(st.All, []float64{700, 600, 900, 650, 620}) || !slices.Equal(in, st.All) {
		t.Fatalf("all %v, input %v: want both in trial order", st.All, in)
	}
	// Ten values: the p90 is the 9th smallest (nearest rank), the median the mean of the middle two.
	st = summarizeTimes([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	if st.P90 != 9 || st.Median != 5.5 {
		t.Fatalf("p90 %v median %v, want 9 and 5.5", st.P90, st.Median)
	}
	if st := summarizeTimes(nil); st.Max != 0 || len(st.All) != 0 {
		t.Fatalf("no times: %+v", st)
	}
}

func TestSummarizeTrials(t *testing.T) {
	trials := []FailoverTrial{
		{Trial: 1, FailoverMs: 600, AllNamedMs: 640, PlainAcked: 1000, PlainLost: 3, WaitAcked: 200, RejoinS: 0.4},
		{Trial: 2, FailoverMs: 700, AllNamedMs: 720, PlainAcked: 1100, PlainLost: 7, WaitAcked: 210, Spurious: 1, RejoinS: 0.6},
		// Failed over, then the restart failed: a time but not completed.
		{Trial: 3, FailoverMs: 650, PlainAcked: 900, WaitAcked: 190, WaitLost: 2},
	}
	s := summarizeTrials(trials, 20)
	if s.Trials != 20 || s.Completed != 2 {
		t.Fatalf("trials %d completed %d, want 20 and 2", s.Trials, s.Completed)
	}
	if s.PlainAcked != 3000 || s.PlainLost != 10 || s.PlainLostMax != 7 || s.WaitAcked != 600 || s.WaitLost != 2 || s.Spurious != 1 {
		t.Fatalf("sums %+v", s)
	}
	if !slices.Equal(s.Times.All, []float64{600, 700, 650}) || s.Times.Median != 650 {
		t.Fatalf("times %+v", s.Times)
	}
	if s.RejoinMedS != 0.5 || s.NamedMedMs != 680 {
		t.Fatalf("rejoin median %v, named median %v; want 0.5 and 680", s.RejoinMedS, s.NamedMedMs)
	}
	// A trial that never failed over adds no time.
	s = summarizeTrials([]FailoverTrial{{Trial: 1}}, 1)
	if len(s.Times.All) != 0 || s.Completed != 0 {
		t.Fatalf("a trial with no failover: %+v", s)
	}
}

func TestSpuriousFailovers(t *testing.T) {
	for _, c := range []struct {
		switches, promotions int
		survivorPrimary      bool
		want                 int
	}{
		{1, 1, true, 0},   // the one failover the kill caused
		{1, -1, true, 0},  // Redis: no promotion count
		{0, 1, true, 0},   // a Sentinel port that missed the message is not a failover
		{2, 1, true, 1},   // one more change of primary on the Sentinel port
		{1, 3, true, 2},   // the logs saw two more promotions
		{3, 2, true, 2},   // the larger of the two counts, not their sum
		{1, 1, false, 1},  // the survivor lost the role and nothing said so
		{3, -1, false, 2}, // ... and when something did, it is not counted twice
	} {
		if got := spuriousFailovers(c.switches, c.promotions, c.survivorPrimary); got != c.want {
			t.Errorf("spuriousFailovers(%d, %d, %v) = %d, want %d", c.switches, c.promotions, c.survivorPrimary, got, c.want)
		}
	}
}

func TestMaxDelta(t *testing.T) {
	if got := maxDelta([]int64{3, 5, 0}, []int64{4, 7, 1}); got != 2 {
		t.Fatalf("maxDelta = %d, want 2", got)
	}
	if got := maxDelta(nil, nil); got != 0 {
		t.Fatalf("maxDelta of nothing = %d", got)
	}
}

func failoverTestConfig() failoverConfig {
	return failoverConfig{Trials: 2, Systems: []string{"lavik", "redis"}, Load: 1500 * time.Millisecond,
		Heartbeat: 100 * time.Millisecond, Lease: 600 * time.Millisecond, Fail: 300 * time.Millisecond,
		DownAfter: time.Second, SentinelFT: 5 * time.Second, FailoverLimit: 30 * time.Second,
		ProbeEvery: 5 * time.Millisecond, RedisKillGap: 11500 * time.Millisecond}
}

func TestFailoverReport(t *testing.T) {
	cfg := failoverTestConfig()
	cfg.JSONPath = filepath.Join(t.TempDir(), "failover.json")
	r := &failoverRun{cfg: cfg, rep: newFailoverReport(cfg)}
	r.rep.Systems = []FailoverSystemReport{
		{System: "lavik", Commands: []string{"bin/lavik-meta --id 1"}, Trials: []FailoverTrial{
			{Trial: 1, Killed: "lavik-data-a", FailoverMs: 600, AllNamedMs: 640, PlainAcked: 100, WaitAcked: 20, Switches: 1, Promotions: 1, SurvivorPrimary: true, RejoinS: 0.3, ProbeErrors: []string{"-READONLY"}},
			{Trial: 2, Killed: "lavik-data-b", FailoverMs: 700, AllNamedMs: 730, PlainAcked: 100, PlainLost: 1, WaitAcked: 20, Switches: 1, Promotions: 1, SurvivorPrimary: true, RejoinS: 0.5},
		}},
		{System: "redis", Version: "redis-server 7.0.15", Trials: []FailoverTrial{
			{Trial: 1, Killed: "redis-a", FailoverMs: 1300, AllNamedMs: 2200, PlainAcked: 300, WaitAcked: 50, Switches: 1, Promotions: -1, SurvivorPrimary: true, RejoinS: 20},
			{Trial: 2, Killed: "redis-b", FailoverMs: 1300, AllNamedMs: 2300, PlainAcked: 300, PlainLost: 4, WaitAcked: 50, WaitLost: 1, Switches: 2, Promotions: -1, Spurious: 1, SurvivorPrimary: true, RejoinS: 21},
		}},
	}
	r.v.problems = append(r.v.problems, "redis: trial 2: 1 writes acknowledged by WAIT 1 missing on the new primary")
	var out bytes.Buffer
	code, err := r.report(&out, &out)
	if err != nil || code != exitErrors {
		t.Fatalf("report: %d, %v; want exit %d for a lost WAIT write", code, err, exitErrors)
	}
	// Compared with runs of spaces made one: the column widths are the table's business.
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"heartbeat 100ms, lease 600ms, fail-after 300ms",
		"down-after-milliseconds 1000, failover-timeout 5000",
		"appendonly no",
		"failover ms: median 650.0 1300.0 0.50x",
		"0 / 40 (ok)",
		"1 / 100 (LOST)",
		"median failover time, lavik / redis: 0.500 (lavik 2.0x faster)",
		"lavik failover times, ms, in trial order: 600.0 700.0",
		"redis failover times, ms, in trial order: 1300.0 1300.0",
		"result: ERRORS",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(cfg.JSONPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc failoverReport
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Result != "ERRORS" || doc.MedianRatio != 0.5 || len(doc.Systems) != 2 || doc.Systems[1].Summary.WaitLost != 1 ||
		doc.Systems[0].Summary.Times.P90 != 700 || doc.Settings.LeaseMs != 600 || doc.Settings.DownAfterMs != 1000 {
		t.Fatalf("JSON document: %s", b)
	}
}

func TestFailoverReportOneSystem(t *testing.T) {
	cfg := failoverTestConfig()
	cfg.Systems = []string{"lavik"}
	r := &failoverRun{cfg: cfg, rep: newFailoverReport(cfg)}
	r.rep.Systems = []FailoverSystemReport{{System: "lavik", Trials: []FailoverTrial{
		{Trial: 1, FailoverMs: 600, PlainAcked: 10, WaitAcked: 5, Switches: 1, Promotions: 1, SurvivorPrimary: true, RejoinS: 0.3}}}}
	var out bytes.Buffer
	code, err := r.report(&out, &out)
	if err != nil || code != exitOK {
		t.Fatalf("report: %d, %v", code, err)
	}
	if strings.Contains(out.String(), "lavik/redis") || strings.Contains(out.String(), "Sentinels (quorum") || !strings.Contains(out.String(), "result: OK") {
		t.Fatalf("a Lavik-only report:\n%s", out.String())
	}
}

func TestFailoverFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--skip-lavik", "--skip-redis"},
		{"--trials", "0"},
		{"--load-seconds", "0"},
		{"--down-after", "1500us"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		code := runMain(context.Background(), append([]string{"lavik-bench", "failover"}, args...), &out, &errOut)
		if code != exitUsage {
			t.Errorf("failover %v: exit %d, want %d (%s)", args, code, exitUsage, errOut.String())
		}
	}
}
