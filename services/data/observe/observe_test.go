package observe

import (
	"strings"
	"testing"
	"time"
)

func TestSlowLogTrimsAsRedis(t *testing.T) {
	l := NewSlowLog()
	l.SetMaxLen(2)
	args := make([][]byte, 40)
	for i := range args {
		args[i] = []byte("a")
	}
	args[1] = []byte(strings.Repeat("x", 130))
	l.Add(time.Unix(100, 0), 5*time.Microsecond, args, nil, "1.2.3.4:5", "n")
	e := l.Get(-1)[0]
	if len(e.Args) != 32 || e.Args[31] != "... (9 more arguments)" {
		t.Fatalf("args %d, last %q", len(e.Args), e.Args[31])
	}
	if e.Args[1] != strings.Repeat("x", 128)+"... (2 more bytes)" {
		t.Fatalf("long arg %q", e.Args[1])
	}
	if e.ID != 0 || e.Time != 100 || e.Duration != 5 || e.Addr != "1.2.3.4:5" || e.Name != "n" {
		t.Fatalf("entry %+v", e)
	}
	l.Add(time.Unix(101, 0), 0, [][]byte{[]byte("b")}, nil, "", "")
	l.Add(time.Unix(102, 0), 0, [][]byte{[]byte("c")}, func(i int) bool { return i == 0 }, "", "")
	got := l.Get(-1)
	if len(got) != 2 || got[0].ID != 2 || got[0].Args[0] != "(redacted)" || got[1].ID != 1 {
		t.Fatalf("entries %+v", got)
	}
}

func TestLatencyOneSamplePerSecond(t *testing.T) {
	l := NewLatency()
	for i := 0; i < 200; i++ {
		l.Add("command", time.Unix(int64(1000+i), 0), int64(i))
		l.Add("command", time.Unix(int64(1000+i), 0), int64(i)/2)
	}
	e, ok := l.Event("command")
	if !ok || len(e.Samples) != LatencyHistoryLen || e.Latest().Latency != 199 || e.Max != 199 || e.Samples[0].Time != 1040 {
		t.Fatalf("event %+v", e)
	}
	if n := l.Reset("command", "nope"); n != 1 {
		t.Fatalf("reset %d", n)
	}
}

func TestHistQuantiles(t *testing.T) {
	var h Hist
	for v := uint64(1); v <= 1000; v++ {
		h.Record(v)
	}
	for _, c := range []struct {
		q    float64
		want uint64
	}{{0.5, 500}, {0.99, 990}, {1, 1000}} {
		got := h.Quantile(c.q)
		if got < c.want || float64(got) > float64(c.want)*1.13 {
			t.Errorf("q%.2f = %d, want about %d", c.q, got, c.want)
		}
	}
	for v := uint64(0); v < 1<<20; v = v*3 + 1 {
		if i := histIndex(v); histUpper(i) < v || i > 0 && histUpper(i-1) >= v {
			t.Fatalf("value %d in bucket %d [.., %d]", v, i, histUpper(i))
		}
	}
}
