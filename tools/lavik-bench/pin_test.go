package main

import (
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // String() of the result, or "" for an error
	}{
		{"0", "0"},
		{" 1 ", "1"},
		{"0-3", "0-3"},
		{"0-3,6", "0-3,6"},
		{"6,0-3,2", "0-3,6"},
		{"1,3,5-7,8", "1,3,5-8"},
		{"0-0", "0"},
		{"", ""},
		{"3-1", ""},
		{"a", ""},
		{"-1", ""},
		{"0,,2", "0,2"},
		{"1024", ""},
	} {
		got, err := parseCPUList(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseCPUList(%q) = %v, want an error", tc.in, got)
		case tc.want != "" && err != nil:
			t.Errorf("parseCPUList(%q): %v", tc.in, err)
		case tc.want != "" && got.String() != tc.want:
			t.Errorf("parseCPUList(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParsePin(t *testing.T) {
	for _, tc := range []struct {
		in             string
		server, client string
		err            string
	}{
		{in: "server=0,client=1", server: "0", client: "1"},
		{in: "client=1, server=0", server: "0", client: "1"},
		{in: "server=0,2,client=1,3", server: "0,2", client: "1,3"},
		{in: "server=0-1,client=2-3", server: "0-1", client: "2-3"},
		{in: "server=0", err: "no client CPUs"},
		{in: "server=0,client=0", err: "both"},
		{in: "server=0-2,client=2", err: "both"},
		{in: "0,1", err: "want server=CPUS"},
		{in: "server=0,client=1,server=2", err: "twice"},
		{in: "cpu=0,client=1", err: "not server or client"},
		{in: "server=x,client=1", err: "not a CPU"},
	} {
		p, err := parsePin(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parsePin(%q) = %+v, %v; want an error containing %q", tc.in, p, err, tc.err)
			}
			continue
		}
		if err != nil || p.Server.String() != tc.server || p.Client.String() != tc.client || !p.enabled() {
			t.Errorf("parsePin(%q) = %+v, %v; want server %s client %s", tc.in, p, err, tc.server, tc.client)
		}
	}
	if p, err := parsePin(""); err != nil || p.enabled() {
		t.Errorf("empty --pin: %+v, %v", p, err)
	}
}

// TestPinUnavailable checks the cases in which the pinned cells are skipped with a note.
func TestPinUnavailable(t *testing.T) {
	p, _ := parsePin("server=0,client=1")
	if why := p.unavailable(cpuList{0}); !strings.Contains(why, "1 CPU") {
		t.Errorf("one CPU: %q", why)
	}
	if why := p.unavailable(cpuList{2, 3}); !strings.Contains(why, "CPU 0 is not among") {
		t.Errorf("CPUs 2-3: %q", why)
	}
	if why := p.unavailable(cpuList{0, 1, 2}); why != "" {
		t.Errorf("CPUs 0-2: %q", why)
	}
}
