package main

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// DistSpec selects how a workload picks keys.
//
//   - uniform: every key equally likely; the case an SSD-backed store must win without a cache.
//   - zipf: YCSB's Zipfian generator (Gray et al.) with exponent Theta (0.99 in YCSB), rank r
//     mapped to key (r*mult+off) mod N by a fixed bijection so the hot keys are scattered
//     through the keyspace and through the order they were loaded in, as YCSB's "scrambled
//     zipfian" does.
//   - gauss: a normal distribution centred on Mean*N with standard deviation StdDev*N, redrawn
//     when it falls outside the keyspace, as memtier_benchmark's gaussian pattern: a contiguous
//     hot set (which was also loaded together).
type DistSpec struct {
	Name   string
	Theta  float64
	Mean   float64
	StdDev float64
}

func (d DistSpec) String() string {
	switch d.Name {
	case "zipf":
		return fmt.Sprintf("zipf(theta=%g)", d.Theta)
	case "gauss":
		return fmt.Sprintf("gauss(mean=%g, stddev=%g)", d.Mean, d.StdDev)
	}
	return d.Name
}

func (d DistSpec) validate() error {
	switch d.Name {
	case "uniform":
	case "zipf":
		if !(d.Theta > 0 && d.Theta < 1) {
			return fmt.Errorf("--zipf-theta %g must be between 0 and 1 (exclusive)", d.Theta)
		}
	case "gauss":
		if d.Mean < 0 || d.Mean > 1 {
			return fmt.Errorf("--gauss-mean %g must be a fraction of the keyspace in [0, 1]", d.Mean)
		}
		if !(d.StdDev > 0) {
			return fmt.Errorf("--gauss-stddev %g must be a positive fraction of the keyspace", d.StdDev)
		}
	default:
		return fmt.Errorf("--dist %q: want uniform, zipf or gauss", d.Name)
	}
	return nil
}

// keyChooser draws key indexes in [0, n). Implementations are read-only after construction, so
// one is shared by all connections, each with its own *rand.Rand.
type keyChooser interface {
	next(r *rand.Rand) int
}

func newChooser(d DistSpec, n int) keyChooser {
	switch d.Name {
	case "zipf":
		return newZipf(n, d.Theta)
	case "gauss":
		return gaussChooser{n: n, mean: d.Mean * float64(n), sd: d.StdDev * float64(n)}
	}
	return uniformChooser{n: n}
}

type uniformChooser struct{ n int }

func (u uniformChooser) next(r *rand.Rand) int { return r.IntN(u.n) }

type gaussChooser struct {
	n        int
	mean, sd float64
}

func (g gaussChooser) next(r *rand.Rand) int {
	for {
		x := math.Round(g.mean + r.NormFloat64()*g.sd)
		if x >= 0 && x < float64(g.n) {
			return int(x)
		}
	}
}

type zipfChooser struct {
	n                        uint64
	theta, alpha, zetan, eta float64
	half                     float64 // 1 + 0.5^theta
	mult, off                uint64
}

// newZipf precomputes zeta(n, theta); O(n) once, about 20 ms per million keys.
func newZipf(n int, theta float64) *zipfChooser {
	z := &zipfChooser{n: uint64(n), theta: theta}
	zeta2 := 1 + math.Pow(0.5, theta)
	for i := 1; i <= n; i++ {
		z.zetan += 1 / math.Pow(float64(i), theta)
	}
	z.alpha = 1 / (1 - theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetan)
	z.half = zeta2
	// A multiplier coprime with n makes r -> (r*mult+off) mod n a bijection.
	z.mult = uint64(float64(n)*0.6180339887) | 1
	for gcd(z.mult, z.n) != 1 {
		z.mult += 2
	}
	z.mult %= z.n
	if z.mult == 0 {
		z.mult = 1
	}
	z.off = z.n / 3
	return z
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// rank draws a Zipf rank: 0 is the most popular.
func (z *zipfChooser) rank(r *rand.Rand) uint64 {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.half {
		return 1
	}
	x := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	if x >= z.n {
		x = z.n - 1
	}
	return x
}

func (z *zipfChooser) next(r *rand.Rand) int { return z.keyOf(z.rank(r)) }

// keyOf maps a rank to its key: (rank*mult + off) mod n.
func (z *zipfChooser) keyOf(rank uint64) int {
	hi, lo := bits.Mul64(rank, z.mult)
	return int((bits.Rem64(hi, lo, z.n) + z.off) % z.n)
}
