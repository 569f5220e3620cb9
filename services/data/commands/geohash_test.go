package commands

import (
	"math/rand/v2"
	"testing"
)

// TestGeohash checks the port against values redis-server gives (Redis's documented Palermo
// and Catania) and the round trip: a decoded score encodes to itself and lies within half a
// cell of the position it came from.
func TestGeohash(t *testing.T) {
	for _, c := range []struct {
		lon, lat float64
		score    uint64
		hash     string
		pos      [2]string
	}{
		{13.361389, 38.115556, 3479099956230698, "sqc8b49rny0", [2]string{"13.36138933897018433", "38.11555639549629859"}},
		{15.087269, 37.502669, 3479447370796909, "sqdtr74hyu0", [2]string{"15.08726745843887329", "37.50266842333162032"}},
	} {
		s := geoScore(c.lon, c.lat)
		if s != c.score {
			t.Fatalf("score of %v,%v = %d; want %d", c.lon, c.lat, s, c.score)
		}
		if h := geohashString(s); h != c.hash {
			t.Fatalf("geohash of %d = %s; want %s", s, h, c.hash)
		}
		lon, lat := geoDecode(s)
		if got := [2]string{formatGeoCoord(lon), formatGeoCoord(lat)}; got != c.pos {
			t.Fatalf("position of %d = %v; want %v", s, got, c.pos)
		}
	}
	if d := formatGeoDist(geoDistance(13.36138933897018433, 38.11555639549629859, 15.08726745843887329, 37.50266842333162032)); d != "166274.1516" {
		t.Fatalf("Palermo-Catania = %s m; want 166274.1516", d)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		lon, lat := rng.Float64()*360-180, rng.Float64()*(geoLatMax-geoLatMin)+geoLatMin
		s := geoScore(lon, lat)
		if s >= 1<<52 {
			t.Fatalf("score of %v,%v has more than 52 bits", lon, lat)
		}
		dl, dt := geoDecode(s)
		if geoScore(dl, dt) != s {
			t.Fatalf("%v,%v: decoded %v,%v encodes to %d, not %d", lon, lat, dl, dt, geoScore(dl, dt), s)
		}
		if d := geoDistance(lon, lat, dl, dt); d > 1 {
			t.Fatalf("%v,%v decodes %v m away", lon, lat, d)
		}
		if deinterleave64(interleave64(uint32(i), uint32(i*7919))) != uint64(uint32(i))|uint64(uint32(i*7919))<<32 {
			t.Fatalf("interleave round trip of %d", i)
		}
	}
}
