package main

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestChartIsSelfContained(t *testing.T) {
	series := []chartSeries{
		{Name: "redis get", Points: []chartPoint{{100_000, 0.5, "50"}, {150_000, 1.2, "80"}, {160_000, 4.8, "160"}}},
		{Name: "lavik <get>", Points: []chartPoint{{120_000, 0.4, "50"}, {190_000, 0.9, "80"}}},
	}
	var b strings.Builder
	if err := writeChart(&b, "title & more", "sub", series); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want one per series", n)
	}
	if n := strings.Count(page, "<circle"); n != 5 {
		t.Errorf("%d points, want 5", n)
	}
	for _, banned := range []string{"<script", "<link", "src=", "http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("page contains %q: not self-contained", banned)
		}
	}
	if strings.Contains(page, "lavik <get>") || !strings.Contains(page, "lavik &lt;get&gt;") {
		t.Error("series names are not escaped")
	}
	// The SVG part is well-formed XML.
	svg := page[strings.Index(page, "<svg"):]
	svg = svg[:strings.Index(svg, "</svg>")+len("</svg>")]
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("svg: %v", err)
			}
			break
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ hi, want float64 }{{100, 20}, {1_000_000, 200_000}, {3.3, 0.5}, {0, 1}} {
		if got := niceStep(c.hi, 8); got != c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.hi, got, c.want)
		}
	}
}
