package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// table prints rows in columns: the first `left` columns left-aligned, the rest right-aligned.
// A cell "|" is printed as a column separator.
type table struct {
	left int
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len(c))
			if i < t.left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func qps(x float64) string { return commas(int64(math.Round(x))) }

func ms(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func humanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(b) >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.2f %s", b, units[i])
}

// ratio formats a/b, or "-" when b is zero.
func ratio(a, b float64) string {
	if b == 0 || a == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// writeRunTable prints the results of `run`: one row per operation type (and a total for
// mixes) per connection count.
func writeRunTable(w io.Writer, results []RunResult) {
	t := &table{left: 1}
	t.add("op", "conns", "pipe", "ops/s", "avg ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms", "errors")
	for _, r := range results {
		rows := r.Ops
		if len(rows) > 1 {
			rows = append(append([]OpStats(nil), rows...), r.Total)
		}
		for _, o := range rows {
			t.add(o.Op, strconv.Itoa(r.Conns), strconv.Itoa(r.Pipeline), qps(o.QPS), ms(o.AvgMs),
				ms(o.P50Ms), ms(o.P95Ms), ms(o.P99Ms), ms(o.P999Ms), ms(o.MaxMs), commas(o.Errors.Total()))
		}
	}
	t.write(w)
}

// verdict is the closing line of a report and the exit status it implies.
type verdict struct {
	errors      ErrorCounts
	samples     []string
	unsupported []string
	problems    []string // failures outside the measured operations (restart, memory, load)
}

func (v *verdict) addRun(r RunResult) {
	v.errors.add(r.Errors)
	if r.Total.Count == 0 && r.Errors.Total() == 0 && !r.Interrupted {
		// A server that answers nothing for a whole window has stalled; a table showing 0 ops/s
		// next to "no errors" would read as a pass.
		v.problems = append(v.problems, fmt.Sprintf("%s %s conns=%d pipeline=%d round %d: no operation answered inside the window",
			r.System, r.Workload, r.Conns, r.Pipeline, r.Round))
	}
	for _, s := range r.ErrorSamples {
		if len(v.samples) < maxErrorSamples {
			v.samples = append(v.samples, r.System+": "+s)
		}
	}
}

// failed reports whether anything other than an unsupported command went wrong.
func (v *verdict) failed() bool {
	e := v.errors
	e[errUnsupported] = 0
	return e.Total() > 0 || len(v.problems) > 0
}

func (v *verdict) exitCode() int {
	switch {
	case v.failed():
		return exitErrors
	case len(v.unsupported) > 0 || v.errors[errUnsupported] > 0:
		return exitUnsupported
	}
	return exitOK
}

func (v *verdict) write(w io.Writer) {
	switch {
	case v.failed():
		var what []string
		if v.errors.Total() > 0 {
			what = append(what, v.errors.String())
		}
		what = append(what, v.problems...)
		fmt.Fprintf(w, "result: ERRORS (%s)\n", strings.Join(what, "; "))
		for _, s := range v.samples {
			fmt.Fprintf(w, "  %s\n", s)
		}
	case v.exitCode() == exitUnsupported:
		fmt.Fprintf(w, "result: UNSUPPORTED (%s)\n", strings.Join(v.unsupported, "; "))
	default:
		fmt.Fprintln(w, "result: OK (no errors)")
	}
}

// writeJSON writes v as indented JSON to path ("-" for stdout).
func writeJSON(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return writeOut(path, stdout, b)
}

func writeOut(path string, stdout io.Writer, b []byte) error {
	if path == "-" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

var csvHeader = []string{"system", "workload", "conns", "pipeline", "round", "op", "ops", "latency_samples", "ops_per_sec",
	"avg_ms", "p50_ms", "p95_ms", "p99_ms", "p99_9_ms", "max_ms", "errors", "client_cpu_pct", "server_cpu_pct",
	"server_cpu_us_per_op", "server_read_bytes", "mode"}

// writeCSV writes one row per operation type (and total) per run to path ("-" for stdout).
func writeCSV(path string, stdout io.Writer, results []RunResult) error {
	var b strings.Builder
	cw := csv.NewWriter(&b)
	_ = cw.Write(csvHeader)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	for _, r := range results {
		for _, o := range append(append([]OpStats(nil), r.Ops...), r.Total) {
			_ = cw.Write([]string{r.System, r.Workload, strconv.Itoa(r.Conns), strconv.Itoa(r.Pipeline),
				strconv.Itoa(r.Round), o.Op, strconv.FormatInt(o.Count, 10), strconv.FormatInt(o.Samples, 10), f(o.QPS), f(o.AvgMs), f(o.P50Ms),
				f(o.P95Ms), f(o.P99Ms), f(o.P999Ms), f(o.MaxMs), strconv.FormatInt(o.Errors.Total(), 10),
				f(r.ClientCPU), f(r.ServerCPU), f(r.ServerUsPerOp), strconv.FormatInt(r.ServerReadBytes, 10), r.Mode})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return writeOut(path, stdout, []byte(b.String()))
}
