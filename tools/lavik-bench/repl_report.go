package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// What repl reports: per server kind, the full resync, the three load windows around a second
// one, the lag points and the final checks; the table sets the kinds side by side with the
// ratio lavik/redis where one means something.

// replReport is the JSON document of `repl`.
type replReport struct {
	Command  string             `json:"command"`
	Settings replSettings       `json:"settings"`
	Systems  []ReplSystemReport `json:"systems"`
	// Ratios are lavik/redis of the table's rows that have one, keyed by section and metric.
	Ratios map[string]float64 `json:"ratios_lavik_redis,omitempty"`
	reportOutcome
}

type replSettings struct {
	Keys         int     `json:"keys"`
	Value        string  `json:"value"`
	Dist         string  `json:"dist"`
	Workload     string  `json:"workload"`
	Conns        int     `json:"conns"`
	Pipeline     int     `json:"pipeline"`
	WarmupS      float64 `json:"warmup_s"`
	WindowS      float64 `json:"window_s"`
	DuringS      float64 `json:"during_window_s,omitempty"` // 0: as long as the idle full resync
	LagS         float64 `json:"lag_load_s"`
	LagConns     []int   `json:"lag_conns"`
	LagSampleMs  float64 `json:"lag_sample_ms"`
	Pin          string  `json:"pin,omitempty"`
	VerifySample float64 `json:"verify_sample"`
}

func newReplReport(cfg replConfig) replReport {
	w := cfg.Workload.Name
	if w == "mixed" {
		w += " " + cfg.Ratio
	}
	return replReport{Command: "repl", Settings: replSettings{Keys: cfg.Keys, Value: cfg.Value.String(), Dist: cfg.Dist.String(),
		Workload: w, Conns: cfg.Conns, Pipeline: cfg.Pipeline, WarmupS: cfg.Warmup.Seconds(), WindowS: cfg.Duration.Seconds(),
		DuringS: cfg.During.Seconds(), LagS: cfg.LagDuration.Seconds(), LagConns: cfg.LagConns,
		LagSampleMs: float64(cfg.LagSample) / 1e6, Pin: cfg.Pin.String(), VerifySample: cfg.VerifySample}}
}

// ReplSystemReport is one server kind's figures.
type ReplSystemReport struct {
	System   string        `json:"system"`
	Servers  []ServerRun   `json:"servers"`
	Load     LoadResult    `json:"load"`
	FullSync SyncResult    `json:"full_resync"`
	Phases   []PhaseResult `json:"phases"`
	Lag      []LagResult   `json:"lag"`
	Final    FinalChecks   `json:"final_checks"`
	Problems []string      `json:"problems,omitempty"`
}

// ServerRun is one server process the run started.
type ServerRun struct {
	Name          string   `json:"name"`
	Command       string   `json:"command"`
	Log           string   `json:"log"`
	StopS         float64  `json:"sigterm_to_exit_s"`
	Exit          string   `json:"exit"`
	LogIssueCount int      `json:"log_warnings_errors"`
	LogIssues     []string `json:"log_issue_lines,omitempty"`
}

// SyncResult is one full resync: from REPLICAOF until the follower's link was up and its offset
// had reached the primary's.
type SyncResult struct {
	Done       bool      `json:"done"`
	LinkUpS    float64   `json:"replicaof_to_link_up_s"`
	Seconds    float64   `json:"replicaof_to_caught_up_s"`
	Offset     int64     `json:"caught_up_to_offset"`
	ValueBytes int64     `json:"value_bytes"`
	MBps       float64   `json:"value_mb_per_s"`
	DBSize     int64     `json:"follower_dbsize"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// PrimaryFullSyncs is the primary's sync_full counter afterwards: one per follower that
	// synced, more when a sync failed and started over.
	PrimaryFullSyncs int64 `json:"primary_sync_full"`
}

func (s SyncResult) String() string {
	return fmt.Sprintf("link up after %.2fs, caught up after %.2fs (%.1f MB/s of values), follower DBSIZE %d, primary sync_full %d",
		s.LinkUpS, s.Seconds, s.MBps, s.DBSize, s.PrimaryFullSyncs)
}

// PhaseResult is one load window on the primary.
type PhaseResult struct {
	Phase string    `json:"phase"` // before, during, after
	Run   RunResult `json:"run"`
	// Sync is the full resync started as the during window opened; OverlapS how much of the
	// window it covered, OverlapFrac that over the window; SyncAfterLoad that it was still
	// running when the load stopped.
	Sync          *SyncResult `json:"sync,omitempty"`
	OverlapS      float64     `json:"sync_overlap_s,omitempty"`
	OverlapFrac   float64     `json:"sync_overlap_frac,omitempty"`
	SyncAfterLoad bool        `json:"sync_outlasted_load,omitempty"`
}

// LagResult is one lag point: SET load at full speed with Conns connections.
type LagResult struct {
	Conns     int            `json:"conns"`
	Pipeline  int            `json:"pipeline"`
	Run       RunResult      `json:"run"`
	SetPerSec float64        `json:"set_ops_per_sec"`
	LoadS     float64        `json:"load_s"`
	SampleMs  float64        `json:"sample_interval_ms"`
	Stats     LagStats       `json:"lag"`
	CatchUpS  float64        `json:"catch_up_after_load_s"` // load stopped until the follower reached the primary's offset
	Samples   []offsetSample `json:"samples,omitempty"`
}

// FinalChecks compare the follower with the primary at the end.
type FinalChecks struct {
	FollowerDBSize int64  `json:"follower_dbsize"`
	Verified       int    `json:"follower_values_verified"`
	Digest         string `json:"debug_digest,omitempty"`
	// DigestS is how long DEBUG DIGEST took on the primary and on the follower (it reads every
	// value: from the disk on Lavik).
	DigestS [2]float64 `json:"debug_digest_s"`
}

func phaseLine(p PhaseResult) string {
	var b strings.Builder
	for _, o := range p.Run.Ops {
		fmt.Fprintf(&b, "%s %s ops/s p50 %s p99 %s p99.9 %s ms; ", o.Op, qps(o.QPS), ms(o.P50Ms), ms(o.P99Ms), ms(o.P999Ms))
	}
	fmt.Fprintf(&b, "primary CPU %.0f%%, follower CPU %.0f%%, errors: %s", p.Run.ServerCPU, p.Run.OtherCPU, p.Run.Errors)
	if p.Sync != nil {
		fmt.Fprintf(&b, "; sync %s; overlapped %.2fs of the %.2fs window", p.Sync, p.OverlapS, p.Run.WindowS)
		if p.SyncAfterLoad {
			b.WriteString(" (finished after the load stopped)")
		}
	}
	return b.String()
}

func lagLine(l LagResult) string {
	st := l.Stats
	return fmt.Sprintf("conns=%d: SET %s ops/s; stream %s MB/s on the primary, %s MB/s applied on the follower; lag p50/p99/max %s / %s / %s bytes, %.0f / %.0f / %.0f ms; trend %+.0f ms/s, keeps up: %s; caught up %.2fs after the load",
		l.Conns, qps(l.SetPerSec), mbps(st.PrimaryBps), mbps(st.FollowerBps), commas(int64(st.BytesP50)), commas(int64(st.BytesP99)),
		commas(int64(st.BytesMax)), st.MsP50, st.MsP99, st.MsMax, st.Slope*1e3, yesNo(st.KeepsUp), l.CatchUpS)
}

func mbps(bps float64) string { return fmt.Sprintf("%.1f", bps/1e6) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// replCell is one system's value in a row: what is printed, and the number a ratio uses (0:
// none).
type replCell struct {
	text string
	val  float64
}

var noCell = replCell{text: "-"}

// replRow is one row of the table.
type replRow struct {
	section, metric string
	ratio           bool // the row has a lavik/redis ratio
	cell            func(s *ReplSystemReport) replCell
}

func (s *ReplSystemReport) phase(name string) *PhaseResult {
	for i := range s.Phases {
		if s.Phases[i].Phase == name {
			return &s.Phases[i]
		}
	}
	return nil
}

func opOf(r RunResult, op string) *OpStats {
	for i := range r.Ops {
		if r.Ops[i].Op == op {
			return &r.Ops[i]
		}
	}
	return nil
}

// replRows lists the table's rows for the ops the workload has and the lag points.
func replRows(set replSettings) []replRow {
	var rows []replRow
	add := func(section, metric string, ratio bool, f func(s *ReplSystemReport) replCell) {
		rows = append(rows, replRow{section: section, metric: metric, ratio: ratio, cell: f})
	}
	full := func(f func(sr SyncResult) replCell) func(s *ReplSystemReport) replCell {
		return func(s *ReplSystemReport) replCell {
			if !s.FullSync.Done {
				return noCell
			}
			return f(s.FullSync)
		}
	}
	sec := "full resync, primary idle"
	add(sec, "REPLICAOF to link up, s", false, full(func(sr SyncResult) replCell { return secsCell(sr.LinkUpS) }))
	add(sec, "REPLICAOF to caught up, s", true, full(func(sr SyncResult) replCell { return secsCell(sr.Seconds) }))
	add(sec, "values MB/s", true, full(func(sr SyncResult) replCell { return replCell{fmt.Sprintf("%.1f", sr.MBps), sr.MBps} }))
	add(sec, "follower DBSIZE", false, full(func(sr SyncResult) replCell { return replCell{commas(sr.DBSize), 0} }))

	var ops []string
	switch set.Workload {
	case "get":
		ops = []string{"get"}
	case "set":
		ops = []string{"set"}
	default:
		ops = []string{"get", "set"}
	}
	sec = fmt.Sprintf("primary under %s load, %d conns x pipeline %d", set.Workload, set.Conns, set.Pipeline)
	for _, ph := range []string{phaseBefore, phaseDuring, phaseAfter} {
		pick := func(f func(p *PhaseResult) replCell) func(s *ReplSystemReport) replCell {
			return func(s *ReplSystemReport) replCell {
				if p := s.phase(ph); p != nil {
					return f(p)
				}
				return noCell
			}
		}
		for _, op := range ops {
			stat := func(f func(o *OpStats) replCell) func(s *ReplSystemReport) replCell {
				return pick(func(p *PhaseResult) replCell {
					if o := opOf(p.Run, op); o != nil {
						return f(o)
					}
					return noCell
				})
			}
			add(sec, ph+" "+op+" ops/s", true, stat(func(o *OpStats) replCell { return replCell{qps(o.QPS), o.QPS} }))
			add(sec, ph+" "+op+" p50 / p99 / p99.9 ms", false, stat(func(o *OpStats) replCell {
				return replCell{ms(o.P50Ms) + " / " + ms(o.P99Ms) + " / " + ms(o.P999Ms), 0}
			}))
			add(sec, ph+" "+op+" p99 ms", true, stat(func(o *OpStats) replCell { return replCell{ms(o.P99Ms), o.P99Ms} }))
		}
		if ph == phaseDuring {
			add(sec, "during: full resync under load, s", true, pick(func(p *PhaseResult) replCell {
				if p.Sync == nil || !p.Sync.Done {
					return noCell
				}
				c := secsCell(p.Sync.Seconds)
				if p.SyncAfterLoad {
					c.text += " (outlasted the load)"
				}
				return c
			}))
			add(sec, "during: sync overlapped the window", false, pick(func(p *PhaseResult) replCell {
				if p.Sync == nil {
					return noCell
				}
				return replCell{fmt.Sprintf("%.2fs of %.2fs (%.0f%%)", p.OverlapS, p.Run.WindowS, 100*p.OverlapFrac), 0}
			}))
		}
	}

	for i, n := range set.LagConns {
		sec := fmt.Sprintf("lag under SET load, %d conns x pipeline %d, %gs", n, set.Pipeline, set.LagS)
		pick := func(f func(l *LagResult) replCell) func(s *ReplSystemReport) replCell {
			return func(s *ReplSystemReport) replCell {
				if i < len(s.Lag) && s.Lag[i].Stats.Samples > 0 {
					return f(&s.Lag[i])
				}
				return noCell
			}
		}
		add(sec, "SET ops/s on the primary", true, pick(func(l *LagResult) replCell { return replCell{qps(l.SetPerSec), l.SetPerSec} }))
		add(sec, "stream MB/s: primary / follower applied", false, pick(func(l *LagResult) replCell {
			return replCell{mbps(l.Stats.PrimaryBps) + " / " + mbps(l.Stats.FollowerBps), 0}
		}))
		add(sec, "lag bytes p50 / p99 / max", false, pick(func(l *LagResult) replCell {
			st := l.Stats
			return replCell{humanBytes(st.BytesP50) + " / " + humanBytes(st.BytesP99) + " / " + humanBytes(st.BytesMax), 0}
		}))
		add(sec, "lag ms p50 / p99 / max", false, pick(func(l *LagResult) replCell {
			st := l.Stats
			return replCell{fmt.Sprintf("%.0f / %.0f / %.0f", st.MsP50, st.MsP99, st.MsMax), 0}
		}))
		add(sec, "lag p99 ms", true, pick(func(l *LagResult) replCell {
			return replCell{fmt.Sprintf("%.0f", l.Stats.MsP99), l.Stats.MsP99}
		}))
		add(sec, "lag trend ms per s; keeps up", false, pick(func(l *LagResult) replCell {
			t := fmt.Sprintf("%+.0f; %s", l.Stats.Slope*1e3, yesNo(l.Stats.KeepsUp))
			if l.Stats.Unresolved > 0 {
				t += fmt.Sprintf(" (%d offsets never reached)", l.Stats.Unresolved)
			}
			return replCell{t, 0}
		}))
		add(sec, "caught up after the load stopped, s", false, pick(func(l *LagResult) replCell { return secsCell(l.CatchUpS) }))
	}
	return rows
}

func secsCell(s float64) replCell { return replCell{fmt.Sprintf("%.2f", s), s} }

// writeReplTable prints the rows with one column per system and, when both ran, lavik/redis;
// it returns the ratios.
func writeReplTable(w io.Writer, rows []replRow, systems []ReplSystemReport) map[string]float64 {
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
	ratios := map[string]float64{}
	// Section titles are printed on lines of their own and do not widen the columns.
	t := &table{left: 1}
	head := []string{"metric"}
	for _, s := range systems {
		head = append(head, s.System)
	}
	if both {
		head = append(head, "lavik/redis")
	}
	t.add(head...)
	titles := map[int]string{} // row index in t -> the section title printed before it
	section := ""
	for _, r := range rows {
		if r.section != section {
			section = r.section
			titles[len(t.rows)] = section
		}
		cells := []string{"  " + r.metric}
		vals := make([]float64, len(systems))
		for i := range systems {
			c := r.cell(&systems[i])
			cells = append(cells, c.text)
			vals[i] = c.val
		}
		if both {
			rt := ""
			if r.ratio && vals[li] > 0 && vals[ri] > 0 {
				rt = ratio(vals[li], vals[ri])
				ratios[r.section+": "+r.metric] = vals[li] / vals[ri]
			}
			cells = append(cells, rt)
		}
		t.add(cells...)
	}
	var b strings.Builder
	t.write(&b)
	for i, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if title, ok := titles[i]; ok {
			fmt.Fprintf(w, "\n%s\n", title)
		}
		fmt.Fprintln(w, line)
	}
	return ratios
}

// report prints the table and what is below it, and writes --json.
func (r *replRun) report(out, stdout io.Writer) (int, error) {
	cfg, rep := r.cfg, &r.rep
	fmt.Fprintf(out, "\nlavik-bench repl: replication, %s\n", strings.Join(cfg.Systems, " vs "))
	during := "as long as the idle full resync took (at least 1s)"
	if cfg.During > 0 {
		during = cfg.During.String()
	}
	fmt.Fprintf(out, "%s keys x %s loaded into each primary, %s keys; around the full resync: %s, %d conns x pipeline %d, warm-up %v + window %v before and after, during: %s; lag: SET %v per point, offsets sampled every %v\n",
		commas(int64(cfg.Keys)), cfg.Value, cfg.Dist, rep.Settings.Workload, cfg.Conns, cfg.Pipeline, cfg.Warmup, cfg.Duration,
		during, cfg.LagDuration, cfg.LagSample)
	fmt.Fprintf(out, "%s; the kinds ran one after the other (%s), each with its own primary and fresh followers attached by REPLICAOF\n",
		pinNote(cfg.Pin), strings.Join(cfg.Systems, ", then "))
	for _, s := range rep.Systems {
		if len(s.Servers) > 0 {
			fmt.Fprintf(out, "%s: %s\n", s.System, s.Servers[0].Command)
		}
	}
	fmt.Fprintln(out)
	rep.Ratios = writeReplTable(out, replRows(rep.Settings), rep.Systems)
	fmt.Fprintln(out)
	writeReplDetails(out, rep.Systems)
	fmt.Fprintln(out)
	r.v.write(out)
	code := r.v.exitCode()
	rep.reportOutcome = newReportOutcome(code, r.v)
	if cfg.JSONPath != "" {
		if err := writeJSON(cfg.JSONPath, stdout, rep); err != nil {
			return exitErrors, &exitError{code: exitErrors, err: fmt.Errorf("--json: %w", err)}
		}
	}
	return code, nil
}

// writeReplDetails prints, per system, the loads, the final checks, how the servers exited and
// what their logs warned about.
func writeReplDetails(w io.Writer, systems []ReplSystemReport) {
	for _, s := range systems {
		if s.Load.Keys > 0 {
			fmt.Fprintln(w, s.Load)
		}
		if s.FullSync.Done {
			fmt.Fprintf(w, "%s idle full resync: %s\n", s.System, s.FullSync)
		}
		if p := s.phase(phaseDuring); p != nil && p.Sync != nil && p.Sync.Done {
			fmt.Fprintf(w, "%s full resync under load: %s\n", s.System, p.Sync)
		}
		for _, p := range s.Phases {
			fmt.Fprintf(w, "%s %s: primary CPU %.0f%%, follower CPU %.0f%%, generator CPU %.0f%%\n", s.System, p.Phase, p.Run.ServerCPU, p.Run.OtherCPU, p.Run.ClientCPU)
		}
		f := s.Final
		if f.FollowerDBSize > 0 {
			fmt.Fprintf(w, "%s at the end: follower DBSIZE %s, %d values read back from the follower and verified", s.System, commas(f.FollowerDBSize), f.Verified)
			if f.Digest != "" {
				fmt.Fprintf(w, ", DEBUG DIGEST %s (%.1fs on the primary, %.1fs on the follower)", f.Digest, f.DigestS[0], f.DigestS[1])
			}
			fmt.Fprintln(w)
		}
		for _, sv := range s.Servers {
			fmt.Fprintf(w, "%s: %s; %d warning/error lines in its log\n", sv.Name, sv.Exit, sv.LogIssueCount)
			for _, l := range sv.LogIssues {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}
