package commands

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lavikdb/lavik/services/data/observe"
)

// LATENCY HISTOGRAM and LATENCY GRAPH, in Redis 7's formats.

// latencyHistogramCmd is LATENCY HISTOGRAM [command ...]: for each command with calls, its
// count and cumulative distribution (observe.Hist.EachPowerOfTwo) in microseconds. A name that
// is no command is skipped; a container's name covers its subcommands.
func latencyHistogramCmd(c *Ctx) {
	var cmds []*Command
	if len(c.Args) == 2 {
		cmds = AllWithSubcommands()
	} else {
		for _, a := range c.Args[2:] {
			cmd := lookupFullName(a)
			if cmd == nil {
				continue
			}
			cmds = append(cmds, cmd)
			for _, s := range cmd.subsSorted() {
				cmds = append(cmds, s)
			}
		}
	}
	var with []*Command
	var hists []*observe.Hist
	for _, cmd := range cmds {
		if h := cmd.Stats.Hist.Load(); h != nil && h.Count() > 0 {
			with, hists = append(with, cmd), append(hists, h)
		}
	}
	c.W.Map(len(with))
	for i, cmd := range with {
		c.W.BulkString(cmd.Name)
		c.W.Map(2)
		c.W.BulkString("calls")
		c.W.Int(int64(hists[i].Count()))
		c.W.BulkString("histogram_usec")
		var pairs [][2]uint64
		hists[i].EachPowerOfTwo(func(b, n uint64) { pairs = append(pairs, [2]uint64{b, n}) })
		c.W.Map(len(pairs))
		for _, p := range pairs {
			c.W.Int(int64(p[0]))
			c.W.Int(int64(p[1]))
		}
	}
}

// lookupFullName finds a command by its full name: "get", or "client|id" for a subcommand.
func lookupFullName(name []byte) *Command {
	parent, sub, ok := strings.Cut(string(name), "|")
	cmd := Lookup([]byte(parent))
	if cmd == nil || !ok {
		return cmd
	}
	return cmd.LookupSub([]byte(sub))
}

// latencyGraphCmd is LATENCY GRAPH event: Redis's ASCII sparkline of the event's samples.
func latencyGraphCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	e, ok := in.Latency().Event(string(c.Args[2]))
	if !ok || len(e.Samples) == 0 {
		c.Err(Error("ERR No samples available for event '" + string(c.Args[2]) + "'"))
		return
	}
	c.W.Verbatim("txt", latencyGraph(e, time.Now().Unix()))
}

// graphCols is Redis's LATENCY_GRAPH_COLS.
const graphCols = 80

// latencyGraph renders e as Redis's latencyCommandGenSparkeline does: a title, a rule, and a
// sparkline of 4 rows filled below the line, each sample labelled with how long ago it was.
func latencyGraph(e observe.LatencyEvent, now int64) string {
	lo, hi := e.Samples[0].Latency, e.Samples[0].Latency
	vals := make([]float64, len(e.Samples))
	labels := make([]string, len(e.Samples))
	for i, s := range e.Samples {
		lo, hi = min(lo, s.Latency), max(hi, s.Latency)
		vals[i] = float64(s.Latency)
		el := now - s.Time
		switch {
		case el < 60:
			labels[i] = fmt.Sprintf("%ds", el)
		case el < 3600:
			labels[i] = fmt.Sprintf("%dm", el/60)
		case el < 3600*24:
			labels[i] = fmt.Sprintf("%dh", el/3600)
		default:
			labels[i] = fmt.Sprintf("%dd", el/(3600*24))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", e.Name, hi, lo, e.Max)
	b.WriteString(strings.Repeat("-", graphCols) + "\n")
	for j := 0; j < len(vals); j += graphCols {
		n := min(len(vals)-j, graphCols)
		if j != 0 {
			b.WriteByte('\n')
		}
		sparkline(&b, vals, labels, float64(lo), float64(hi), j, n, 4)
	}
	return b.String()
}

// sparkline writes samples [off, off+n) as Redis's sparklineRenderRange with SPARKLINE_FILL:
// rows of '_', 'o', '#' topped columns filled with '|', then the labels written downwards
// after one blank row.
func sparkline(b *strings.Builder, vals []float64, labels []string, lo, hi float64, off, n, rows int) {
	const fill = "_o#"
	relmax := hi - lo
	if relmax == 0 {
		relmax = 1
	}
	steps := len(fill) * rows
	chars := make([]byte, n)
	for row := 0; ; row++ {
		loop := false
		for j := range chars {
			chars[j] = ' '
		}
		for j := 0; j < n; j++ {
			step := int(float64(int((vals[off+j]-lo)*float64(steps))) / relmax)
			step = int(math.Max(0, math.Min(float64(step), float64(steps-1))))
			if row < rows {
				loop = true
				idx := step - (rows-row-1)*len(fill)
				if idx >= 0 && idx < len(fill) {
					chars[j] = fill[idx]
				} else if idx >= len(fill) {
					chars[j] = '|'
				}
				continue
			}
			if row-rows < 1 { // the blank row between the graph and its labels
				loop = true
				break
			}
			if l := labels[off+j]; len(l) > row-rows-1 {
				loop = true
				chars[j] = l[row-rows-1]
			}
		}
		if !loop {
			return
		}
		b.Write(chars)
		b.WriteByte('\n')
	}
}
