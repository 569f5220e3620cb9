package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// printer is the one way every command prints its result: a JSON document (--json) or tables
// for a person. A command builds both from the same typed value, so the two cannot disagree
// about what was found; the JSON field names are that value's json tags and are stable.
type printer struct {
	w    io.Writer
	json bool
}

// table is a block of aligned columns, with an optional title above and notes below.
type table struct {
	title   string
	columns []string
	rows    [][]string
	notes   []string
}

// print writes doc as indented JSON when p.json, else the tables that view returns.
func (p printer) print(doc any, view func() []table) error {
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	for i, t := range view() {
		if i > 0 {
			fmt.Fprintln(p.w)
		}
		if err := t.render(p.w); err != nil {
			return err
		}
	}
	return nil
}

// render writes t: columns separated by two spaces, padded to the widest cell in runes (the
// last column is not padded, so lines carry no trailing blanks).
func (t table) render(w io.Writer) error {
	var b strings.Builder
	if t.title != "" {
		b.WriteString(t.title + "\n")
	}
	if len(t.columns) > 0 {
		width := make([]int, len(t.columns))
		for i, c := range t.columns {
			width[i] = utf8.RuneCountInString(c)
		}
		for _, r := range t.rows {
			for i := range min(len(r), len(width)) {
				width[i] = max(width[i], utf8.RuneCountInString(r[i]))
			}
		}
		line := func(cells []string) {
			var l strings.Builder
			for i := range width {
				cell := ""
				if i < len(cells) {
					cell = cells[i]
				}
				l.WriteString(cell)
				if i < len(width)-1 {
					l.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell)+2))
				}
			}
			b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
		}
		line(t.columns)
		for _, r := range t.rows {
			line(r)
		}
	}
	for _, n := range t.notes {
		b.WriteString(n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// humanBytes formats n bytes in IEC units with one decimal: 0 B, 999 B, 1.5 KiB, 12.0 GiB.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
