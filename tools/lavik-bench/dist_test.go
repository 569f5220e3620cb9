package main

import (
	"math/rand/v2"
	"testing"
)

func TestChoosersStayInRange(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range []DistSpec{{Name: "uniform"}, {Name: "zipf", Theta: 0.99}, {Name: "gauss", Mean: 0.5, StdDev: 0.05},
		{Name: "gauss", Mean: 0, StdDev: 1}} {
		for _, n := range []int{1, 2, 7, 1000} {
			c := newChooser(d, n)
			for i := 0; i < 20_000; i++ {
				if k := c.next(r); k < 0 || k >= n {
					t.Fatalf("%v n=%d: key %d", d, n, k)
				}
			}
		}
	}
}

func TestZipfIsSkewedAndScrambled(t *testing.T) {
	const n = 10_000
	z := newZipf(n, 0.99)
	r := rand.New(rand.NewPCG(7, 8))
	counts := make([]int, n)
	rankCounts := make([]int, n)
	for i := 0; i < 200_000; i++ {
		counts[z.next(r)]++
	}
	r = rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 200_000; i++ {
		rankCounts[z.rank(r)]++
	}
	// With theta 0.99 over 10k keys, rank 0 draws about 10% and the top 1% of ranks about 50%.
	if rankCounts[0] < 15_000 || rankCounts[0] < 5*rankCounts[10] {
		t.Errorf("rank 0 drawn %d times, rank 10 %d", rankCounts[0], rankCounts[10])
	}
	top := 0
	for i := 0; i < n/100; i++ {
		top += rankCounts[i]
	}
	if top < 80_000 {
		t.Errorf("top 1%% of ranks drew %d of 200000", top)
	}
	// The rank-to-key map is a bijection that moves the hot keys away from the start.
	seen := make([]bool, n)
	for rank := uint64(0); rank < n; rank++ {
		k := z.keyOf(rank)
		if seen[k] {
			t.Fatalf("rank %d maps to key %d, already taken", rank, k)
		}
		seen[k] = true
	}
	hot := z.keyOf(0)
	if hot == 0 || counts[hot] != rankCounts[0] {
		t.Errorf("hottest key %d drawn %d times, rank 0 %d", hot, counts[hot], rankCounts[0])
	}
	if z.keyOf(1) == hot+1 {
		t.Error("the two hottest keys are neighbours")
	}
}

func TestGaussHotSet(t *testing.T) {
	const n = 100_000
	c := newChooser(DistSpec{Name: "gauss", Mean: 0.5, StdDev: 0.01}, n)
	r := rand.New(rand.NewPCG(9, 9))
	in := 0
	for i := 0; i < 10_000; i++ {
		if k := c.next(r); k >= n/2-2*n/100 && k <= n/2+2*n/100 {
			in++
		}
	}
	if in < 9_300 { // about 95.4% within two standard deviations
		t.Errorf("%d of 10000 within 2 sd of the mean", in)
	}
}
