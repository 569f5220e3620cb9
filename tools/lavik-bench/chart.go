package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The chart is one self-contained HTML file with an inline SVG: throughput on x, p99 latency on
// y, one line per series (a system and workload), a labelled point per connection count. No
// script, stylesheet or font is loaded from anywhere, so the file can be attached to an issue
// or opened offline. Rejected: a PNG renderer (a dependency for little gain; a browser can
// print the page) and a charting script (external or large inline code).

type chartPoint struct {
	QPS   float64
	P99Ms float64
	Label string // e.g. "50" (connections)
}

// chartSeries is one line. Series of the same Group (a system) share a colour and differ by
// dash pattern, so "redis" and "lavik" read apart at a glance however many workloads there are.
type chartSeries struct {
	Name   string
	Group  string
	Points []chartPoint
}

var (
	chartColors = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}
	chartDashes = []string{"", "8 4", "2 4", "12 4 2 4", "4 4", "1 2"}
)

// niceStep returns a 1, 2 or 5 times a power of ten step giving about n ticks up to hi.
func niceStep(hi float64, n int) float64 {
	if hi <= 0 {
		return 1
	}
	raw := hi / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// yAxis maps latency to the plot. It is linear unless the latencies span more than 50x, where a
// linear axis would flatten the low-latency points onto zero; then it is logarithmic.
type yAxis struct {
	log      bool
	lo, hi   float64 // data range of the axis (log: powers of ten)
	ticks    []float64
	top, bot float64 // pixel rows of hi and lo
}

func newYAxis(minY, maxY float64, top, bot float64) yAxis {
	a := yAxis{top: top, bot: bot}
	if minY > 0 && maxY/minY > 50 {
		a.log = true
		a.lo = math.Pow(10, math.Floor(math.Log10(minY)))
		a.hi = math.Pow(10, math.Ceil(math.Log10(maxY)))
		for d := a.lo; d <= a.hi*1.001; d *= 10 {
			for _, m := range []float64{1, 2, 5} {
				if v := d * m; v <= a.hi*1.001 {
					a.ticks = append(a.ticks, v)
				}
			}
		}
		return a
	}
	step := niceStep(maxY*1.1, 8)
	a.hi = math.Max(step, math.Ceil(maxY*1.1/step)*step)
	for y := 0.0; y <= a.hi+step/2; y += step {
		a.ticks = append(a.ticks, y)
	}
	return a
}

func (a yAxis) px(y float64) float64 {
	f := y / a.hi
	if a.log {
		f = (math.Log10(math.Max(y, a.lo)) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return a.bot - f*(a.bot-a.top)
}

// writeChart writes the HTML page.
func writeChart(w io.Writer, title, subtitle string, series []chartSeries) error {
	const (
		width, height            = 960, 600
		left, right, top, bottom = 80, 250, 40, 60
	)
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	var maxX, maxY float64
	minY := math.Inf(1)
	for _, s := range series {
		for _, p := range s.Points {
			maxX, maxY = math.Max(maxX, p.QPS), math.Max(maxY, p.P99Ms)
			if p.P99Ms > 0 {
				minY = math.Min(minY, p.P99Ms)
			}
		}
	}
	xs := niceStep(maxX*1.05, 8)
	maxX = math.Max(xs, math.Ceil(maxX*1.05/xs)*xs)
	px := func(x float64) float64 { return float64(left) + x/maxX*pw }
	ya := newYAxis(minY, maxY, float64(top), float64(top)+ph)
	py := ya.px

	// Colour by group, dash by position within the group.
	groupColor := map[string]string{}
	groupCount := map[string]int{}
	style := make([][2]string, len(series))
	for i, s := range series {
		g := s.Group
		if g == "" {
			g = s.Name
		}
		if _, ok := groupColor[g]; !ok {
			groupColor[g] = chartColors[len(groupColor)%len(chartColors)]
		}
		style[i] = [2]string{groupColor[g], chartDashes[groupCount[g]%len(chartDashes)]}
		groupCount[g]++
	}

	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n", esc(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:13px}" +
		"td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}</style>\n")
	fmt.Fprintf(&b, "</head><body>\n<h2>%s</h2>\n<p>%s</p>\n", esc(title), esc(subtitle))
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		width, height, width, height)
	fmt.Fprintf(&b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", width, height)
	fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#444\"/>\n", left, top, pw, ph)
	for x := 0.0; x <= maxX+xs/2; x += xs {
		fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#e4e4e4\"/>", px(x), top, px(x), float64(top)+ph)
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", px(x), float64(top)+ph+18, tickLabel(x))
	}
	for _, y := range ya.ticks {
		fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", left, py(y), float64(left)+pw, py(y))
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-8, py(y)+4, trimFloat(y))
	}
	yTitle := "p99 latency (ms)"
	if ya.log {
		yTitle = "p99 latency (ms, log scale)"
	}
	fmt.Fprintf(&b, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\">throughput (operations/s)</text>\n",
		float64(left)+pw/2, height-15)
	fmt.Fprintf(&b, "<text transform=\"translate(20,%.0f) rotate(-90)\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n",
		float64(top)+ph/2, yTitle)
	for i, s := range series {
		color, dash := style[i][0], style[i][1]
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.QPS), py(p.P99Ms)))
		}
		fmt.Fprintf(&b, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" points=\"%s\"/>\n",
			color, dash, strings.Join(pts, " "))
		for _, p := range s.Points {
			fmt.Fprintf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>%s, %s connections: %s ops/s, p99 %s ms</title></circle>",
				px(p.QPS), py(p.P99Ms), color, esc(s.Name), esc(p.Label), qps(p.QPS), ms(p.P99Ms))
			fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-size=\"11\">%s</text>\n", px(p.QPS)+6, py(p.P99Ms)-6, color, esc(p.Label))
		}
		ly := top + 10 + 22*i
		fmt.Fprintf(&b, "<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\" stroke-dasharray=\"%s\"/>",
			float64(left)+pw+16, ly, float64(left)+pw+50, ly, color, dash)
		fmt.Fprintf(&b, "<text x=\"%.0f\" y=\"%d\">%s</text>\n", float64(left)+pw+56, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n<p>Point labels are connection counts.</p>\n<table><tr><th>series</th><th>connections</th><th>ops/s</th><th>p99 ms</th></tr>\n")
	for _, s := range series {
		for _, p := range s.Points {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(s.Name), esc(p.Label), qps(p.QPS), ms(p.P99Ms))
		}
	}
	b.WriteString("</table>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeChartFile writes the chart to path ("-" for stdout).
func writeChartFile(path string, stdout io.Writer, title, subtitle string, series []chartSeries) error {
	var b strings.Builder
	if err := writeChart(&b, title, subtitle, series); err != nil {
		return err
	}
	return writeOut(path, stdout, []byte(b.String()))
}
