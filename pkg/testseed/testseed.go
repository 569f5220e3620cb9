// Package testseed gives randomized tests a seed that can be replayed: the value of an
// environment variable when it is set, else a fresh one, printed when the test fails.
package testseed

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Seed returns the seed for t: env's value when set, else the time. When t fails, it logs the
// seed and how to rerun with it.
func Seed(t testing.TB, env string) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(env); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", env, s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; rerun with %s=%d", seed, env, seed)
		}
	})
	return seed
}
