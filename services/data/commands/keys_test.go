package commands

import (
	"math"
	"testing"
)

// TestParseCursor: SCAN's cursor is read as Redis reads it with strtoul(3); every case here was
// checked against redis-server 7.0.15.
func TestParseCursor(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"01", 1, true},
		{"00000000000000000000000000000000000000001", 1, true},
		{"9223372036854775808", 1 << 63, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"+18446744073709551615", math.MaxUint64, true},
		{"+1", 1, true},
		{"-0", 0, true},
		{"-00", 0, true},
		{"-1", math.MaxUint64, true},
		{"-18446744073709551615", 1, true},
		{"", 0, true},
		{"\x00", 0, true},
		{"0\x00", 0, true},
		{"\x001", 0, true},
		{"1\x00x", 1, true},

		{"18446744073709551616", 0, false},
		{"-18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"-", 0, false},
		{"+", 0, false},
		{"+\x00", 0, false},
		{"--1", 0, false},
		{"- 1", 0, false},
		{" 1", 0, false},
		{"\t1", 0, false},
		{"1 ", 0, false},
		{"1.0", 0, false},
		{"1.5", 0, false},
		{"abc", 0, false},
		{"1abc", 0, false},
		{"0x10", 0, false},
		{"1_000", 0, false},
	} {
		got, ok := parseCursor([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("parseCursor(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestMsToNearestSec(t *testing.T) {
	for _, c := range []struct{ ms, want int64 }{
		{0, 0},
		{499, 0},
		{500, 1},
		{1499, 1},
		{1500, 2},
		{1_700_000_000_499, 1_700_000_000},
		// Where (ms+500)/1000 overflows; the answers are redis-server 7.0.15's EXPIRETIME.
		{9223372036854775307, 9223372036854775},
		{9223372036854775308, 9223372036854775},
		{9223372036854775499, 9223372036854775},
		{9223372036854775500, 9223372036854776},
		{math.MaxInt64, 9223372036854776},
	} {
		if got := msToNearestSec(c.ms); got != c.want {
			t.Errorf("msToNearestSec(%d) = %d, want %d", c.ms, got, c.want)
		}
	}
}
