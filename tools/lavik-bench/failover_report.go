package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What failover reports: per system, the failover times (min, median, p90, max and every one),
// the acknowledged writes missing on the new primary with and without WAIT 1, the spurious
// failovers and how long the killed node took to rejoin; the ratio of the medians.

// failoverReport is the JSON document of `failover`.
type failoverReport struct {
	Command  string                 `json:"command"`
	Settings failoverSettings       `json:"settings"`
	Systems  []FailoverSystemReport `json:"systems"`
	// MedianRatio is the Lavik median failover time over Redis's (0 unless both ran).
	MedianRatio float64 `json:"median_ratio_lavik_redis,omitempty"`
	reportOutcome
}

type failoverSettings struct {
	Trials      int     `json:"trials"`
	LoadS       float64 `json:"load_before_kill_s"`
	ProbeMs     float64 `json:"probe_interval_ms"`
	HeartbeatMs float64 `json:"lavik_meta_heartbeat_ms"`
	LeaseMs     float64 `json:"lavik_meta_lease_ms"`
	FailAfterMs float64 `json:"lavik_meta_fail_after_ms"`
	DownAfterMs float64 `json:"redis_sentinel_down_after_ms"`
	FailoverTMs float64 `json:"redis_sentinel_failover_timeout_ms"`
	CooldownS   float64 `json:"redis_min_gap_after_switch_s"`
	LimitS      float64 `json:"failover_limit_s"`
}

func newFailoverReport(cfg failoverConfig) failoverReport {
	msf := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return failoverReport{Command: "failover", Settings: failoverSettings{Trials: cfg.Trials, LoadS: cfg.Load.Seconds(),
		ProbeMs: msf(cfg.ProbeEvery), HeartbeatMs: msf(cfg.Heartbeat), LeaseMs: msf(cfg.Lease), FailAfterMs: msf(cfg.Fail),
		DownAfterMs: msf(cfg.DownAfter), FailoverTMs: msf(cfg.SentinelFT), CooldownS: cfg.RedisKillGap.Seconds(),
		LimitS: cfg.FailoverLimit.Seconds()}}
}

// FailoverSystemReport is one system's trials and their summary.
type FailoverSystemReport struct {
	System   string          `json:"system"`
	Version  string          `json:"version,omitempty"`
	Commands []string        `json:"commands"`
	Trials   []FailoverTrial `json:"trials"`
	Summary  FailoverSummary `json:"summary"`
	Problems []string        `json:"problems,omitempty"`
}

// FailoverTrial is one kill.
type FailoverTrial struct {
	Trial    int    `json:"trial"`
	Killed   string `json:"killed"`
	Survivor string `json:"survivor"`
	// FailoverMs is from the SIGKILL to the survivor's first OK to SET; 0 when it never came.
	FailoverMs float64 `json:"failover_ms"`
	Probes     int     `json:"probes"`
	// AllNamedMs is from the SIGKILL until every Sentinel port named the survivor as primary.
	AllNamedMs  float64  `json:"all_sentinels_named_ms"`
	ProbeErrors []string `json:"probe_refusals,omitempty"`
	PlainAcked  int      `json:"plain_acked"`
	PlainLost   int      `json:"plain_lost"`
	WaitAcked   int      `json:"wait_acked"`
	WaitLost    int      `json:"wait_lost"`
	// WaitUnacked counts the SETs whose WAIT 1 answered 0: not acknowledged, not counted.
	WaitUnacked int      `json:"wait_unacked"`
	LostSample  []string `json:"lost_sample,omitempty"`
	// Switches is the most +switch-master messages one Sentinel port published during the
	// trial; Promotions the promotions the lavik-data logs record (-1: not counted, Redis).
	Switches        int     `json:"switch_master_events"`
	Promotions      int     `json:"promotions"`
	SurvivorPrimary bool    `json:"survivor_primary_after_rejoin"`
	Spurious        int     `json:"spurious_failovers"`
	RejoinS         float64 `json:"restart_to_in_sync_s"`
}

// FailoverSummary sums a system's trials.
type FailoverSummary struct {
	Trials       int       `json:"trials"`
	Completed    int       `json:"completed"` // trials that failed over and rejoined
	Times        TimeStats `json:"failover_ms"`
	PlainAcked   int       `json:"plain_acked"`
	PlainLost    int       `json:"plain_lost"`
	PlainLostMax int       `json:"plain_lost_worst_trial"`
	WaitAcked    int       `json:"wait_acked"`
	WaitLost     int       `json:"wait_lost"`
	Spurious     int       `json:"spurious_failovers"`
	RejoinMedS   float64   `json:"restart_to_in_sync_median_s"`
	NamedMedMs   float64   `json:"all_sentinels_named_median_ms"`
}

// TimeStats are the failover times of a system's trials, in ms.
type TimeStats struct {
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	P90    float64   `json:"p90"`
	Max    float64   `json:"max"`
	All    []float64 `json:"all"` // in trial order
}

// summarizeTimes computes the statistics of xs (the p90 is the nearest rank).
func summarizeTimes(xs []float64) TimeStats {
	st := TimeStats{All: append([]float64(nil), xs...)}
	if len(xs) == 0 {
		return st
	}
	st.Min, st.Max = slices.Min(xs), slices.Max(xs)
	st.Median = median(xs)
	st.P90 = quantile(append([]float64(nil), xs...), 0.9)
	return st
}

// summarizeTrials sums the trials; a trial that did not fail over adds no time.
func summarizeTrials(trials []FailoverTrial, planned int) FailoverSummary {
	s := FailoverSummary{Trials: planned}
	var times, rejoin, named []float64
	for _, t := range trials {
		if t.FailoverMs > 0 {
			times = append(times, t.FailoverMs)
		}
		if t.AllNamedMs > 0 {
			named = append(named, t.AllNamedMs)
		}
		if t.RejoinS > 0 {
			s.Completed++
			rejoin = append(rejoin, t.RejoinS)
		}
		s.PlainAcked += t.PlainAcked
		s.PlainLost += t.PlainLost
		s.PlainLostMax = max(s.PlainLostMax, t.PlainLost)
		s.WaitAcked += t.WaitAcked
		s.WaitLost += t.WaitLost
		s.Spurious += t.Spurious
	}
	s.Times = summarizeTimes(times)
	s.RejoinMedS = median(rejoin)
	s.NamedMedMs = median(named)
	return s
}

// spuriousFailovers is how many changes of primary a trial saw beyond the one it caused:
// switches is the most +switch-master messages one Sentinel port published, promotions the
// promotions the data nodes logged (negative: not known), survivorPrimary whether the
// survivor was still primary once the killed node was back. A survivor that lost the role
// counts once even when no message said so.
func spuriousFailovers(switches, promotions int, survivorPrimary bool) int {
	extra := max(switches-1, 0)
	if promotions >= 0 {
		extra = max(extra, promotions-1)
	}
	if !survivorPrimary && extra == 0 {
		extra = 1
	}
	return extra
}

// maxDelta is the largest growth of a counter between two readings of the same counters.
func maxDelta(before, after []int64) int {
	var m int64
	for i := range min(len(before), len(after)) {
		m = max(m, after[i]-before[i])
	}
	return int(m)
}

func msText(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// writeFailoverTable prints the systems side by side and returns the ratio of the medians.
func writeFailoverTable(w io.Writer, systems []FailoverSystemReport) float64 {
	li, ri := -1, -1
	for i, s := range systems {
		switch s.System {
		case "lavik":
			li = i
		case "redis":
			ri = i
		}
	}
	both := li >= 0 && ri >= 0
	t := &table{left: 1}
	head := []string{"metric"}
	for _, s := range systems {
		head = append(head, s.System)
	}
	if both {
		head = append(head, "lavik/redis")
	}
	t.add(head...)
	row := func(metric string, ratioOf func(s FailoverSummary) float64, cell func(s *FailoverSystemReport) string) {
		cells := []string{metric}
		for i := range systems {
			cells = append(cells, cell(&systems[i]))
		}
		if both {
			rt := ""
			if ratioOf != nil {
				rt = ratio(ratioOf(systems[li].Summary), ratioOf(systems[ri].Summary))
			}
			cells = append(cells, rt)
		}
		t.add(cells...)
	}
	timed := func(f func(st TimeStats) float64) func(s *FailoverSystemReport) string {
		return func(s *FailoverSystemReport) string {
			if len(s.Summary.Times.All) == 0 {
				return "-"
			}
			return msText(f(s.Summary.Times))
		}
	}
	row("trials completed", nil, func(s *FailoverSystemReport) string {
		return fmt.Sprintf("%d of %d", s.Summary.Completed, s.Summary.Trials)
	})
	row("failover ms: min", func(s FailoverSummary) float64 { return s.Times.Min }, timed(func(st TimeStats) float64 { return st.Min }))
	row("failover ms: median", func(s FailoverSummary) float64 { return s.Times.Median }, timed(func(st TimeStats) float64 { return st.Median }))
	row("failover ms: p90", func(s FailoverSummary) float64 { return s.Times.P90 }, timed(func(st TimeStats) float64 { return st.P90 }))
	row("failover ms: max", func(s FailoverSummary) float64 { return s.Times.Max }, timed(func(st TimeStats) float64 { return st.Max }))
	row("every Sentinel port names it, median ms", func(s FailoverSummary) float64 { return s.NamedMedMs }, func(s *FailoverSystemReport) string {
		if s.Summary.NamedMedMs == 0 {
			return "-"
		}
		return msText(s.Summary.NamedMedMs)
	})
	row("acked writes lost, no WAIT: total / acked", nil, func(s *FailoverSystemReport) string {
		return fmt.Sprintf("%s / %s", commas(int64(s.Summary.PlainLost)), commas(int64(s.Summary.PlainAcked)))
	})
	row("acked writes lost, no WAIT: worst trial", nil, func(s *FailoverSystemReport) string {
		return commas(int64(s.Summary.PlainLostMax))
	})
	row("acked writes lost, WAIT 1: total / acked", nil, func(s *FailoverSystemReport) string {
		verdict := "ok"
		if s.Summary.WaitLost > 0 {
			verdict = "LOST"
		}
		return fmt.Sprintf("%s / %s (%s)", commas(int64(s.Summary.WaitLost)), commas(int64(s.Summary.WaitAcked)), verdict)
	})
	row("spurious failovers", nil, func(s *FailoverSystemReport) string { return strconv.Itoa(s.Summary.Spurious) })
	row("restart to in-sync follower, median s", nil, func(s *FailoverSystemReport) string {
		if s.Summary.Completed == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", s.Summary.RejoinMedS)
	})
	t.write(w)
	if both && systems[ri].Summary.Times.Median > 0 {
		return systems[li].Summary.Times.Median / systems[ri].Summary.Times.Median
	}
	return 0
}

// writeFailoverTrials prints every trial of each system.
func writeFailoverTrials(w io.Writer, systems []FailoverSystemReport) {
	for _, s := range systems {
		fmt.Fprintf(w, "\n%s, every trial:\n", s.System)
		t := &table{left: 2}
		t.add("trial", "killed", "failover ms", "named ms", "plain lost/acked", "WAIT lost/acked", "switches", "promotions", "spurious", "rejoin s", "survivor refused with")
		for _, tr := range s.Trials {
			fo := "-"
			if tr.FailoverMs > 0 {
				fo = msText(tr.FailoverMs)
			}
			named := "-"
			if tr.AllNamedMs > 0 {
				named = msText(tr.AllNamedMs)
			}
			t.add(strconv.Itoa(tr.Trial), tr.Killed, fo, named, fmt.Sprintf("%d/%d", tr.PlainLost, tr.PlainAcked),
				fmt.Sprintf("%d/%d", tr.WaitLost, tr.WaitAcked), strconv.Itoa(tr.Switches), promotionsText(tr.Promotions),
				strconv.Itoa(tr.Spurious), fmt.Sprintf("%.2f", tr.RejoinS), strings.Join(tr.ProbeErrors, " "))
		}
		t.write(w)
		all := make([]string, len(s.Summary.Times.All))
		for i, x := range s.Summary.Times.All {
			all[i] = msText(x)
		}
		fmt.Fprintf(w, "%s failover times, ms, in trial order: %s\n", s.System, strings.Join(all, " "))
	}
}

// writeFailoverHeader prints the exact configuration.
func writeFailoverHeader(w io.Writer, cfg failoverConfig, systems []FailoverSystemReport) {
	names := make([]string, len(systems))
	for i, s := range systems {
		names[i] = s.System
	}
	fmt.Fprintf(w, "\nlavik-bench failover: kill -9 of the primary under write load, %d trials per system, %s\n", cfg.Trials, strings.Join(names, " vs "))
	fmt.Fprintf(w, "each trial: two writers on the primary for %v (one SET after another; SET then WAIT 1 1000), SIGKILL, then SET polled on the survivor every %v;\n",
		cfg.Load, cfg.ProbeEvery)
	fmt.Fprintln(w, "  failover time = SIGKILL to the survivor's first OK; then acknowledged keys looked up there (EXISTS), the killed node restarted on its port and directory")
	fmt.Fprintln(w, "  once every Sentinel port (lavik-meta's, or Redis Sentinel's) names the survivor, and waited for as a follower in sync;")
	fmt.Fprintln(w, "  the next trial kills the other node. named ms: SIGKILL until every Sentinel port names the survivor as primary")
	for _, s := range systems {
		switch s.System {
		case "lavik":
			fmt.Fprintf(w, "lavik: 3 lavik-meta members (heartbeat %v, lease %v, fail-after %v) and 2 lavik-data nodes (appendfsync everysec: writes go to the value log; fsync every second)\n",
				cfg.Heartbeat, cfg.Lease, cfg.Fail)
		case "redis":
			v := s.Version
			if v == "" {
				v = "redis-server"
			}
			fmt.Fprintf(w, "redis: 2 x %s (appendonly no, save \"\": in memory only) and 3 Sentinels (quorum 2, down-after-milliseconds %d, failover-timeout %d, parallel-syncs 1);\n",
				v, cfg.DownAfter.Milliseconds(), cfg.SentinelFT.Milliseconds())
			fmt.Fprintf(w, "  a kill comes at least %v after the last change of primary (a Sentinel starts no failover of the same master within twice failover-timeout, plus 1 s of vote jitter)\n",
				cfg.RedisKillGap)
		}
		for _, c := range s.Commands {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	fmt.Fprintln(w)
}

// report prints the table and the trials, and writes --json.
func (r *failoverRun) report(out, stdout io.Writer) (int, error) {
	rep := &r.rep
	for i := range rep.Systems {
		rep.Systems[i].Summary = summarizeTrials(rep.Systems[i].Trials, r.cfg.Trials)
	}
	writeFailoverHeader(out, r.cfg, rep.Systems)
	rep.MedianRatio = writeFailoverTable(out, rep.Systems)
	if rep.MedianRatio > 0 {
		fmt.Fprintf(out, "median failover time, lavik / redis: %.3f (%s faster)\n", rep.MedianRatio, fasterText(rep.MedianRatio))
	}
	writeFailoverTrials(out, rep.Systems)
	fmt.Fprintln(out)
	r.v.write(out)
	code := r.v.exitCode()
	rep.reportOutcome = newReportOutcome(code, r.v)
	if r.cfg.JSONPath != "" {
		if err := writeJSON(r.cfg.JSONPath, stdout, rep); err != nil {
			return exitErrors, &exitError{code: exitErrors, err: fmt.Errorf("--json: %w", err)}
		}
	}
	return code, nil
}

// fasterText says which system's median is lower, and by what factor.
func fasterText(lavikOverRedis float64) string {
	if lavikOverRedis <= 1 {
		return fmt.Sprintf("lavik %.1fx", 1/lavikOverRedis)
	}
	return fmt.Sprintf("redis %.1fx", lavikOverRedis)
}
