package test

// Geo commands through go-redis, with Redis's documented examples and errors, and a comparison
// with a redis-server the test starts: scores, GEOHASH strings, positions, distances and
// sorted searches must be the same to the digit.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

func TestGeo(t *testing.T) {
	_, c := startServer(t)
	subtest(t, c, "Sicily", func(t *testing.T, k checker) {
		k.eq(2, "GEOADD", "Sicily", 13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania")
		k.eq("3479099956230698", "ZSCORE", "Sicily", "Palermo")
		k.eq("166274.1516", "GEODIST", "Sicily", "Palermo", "Catania")
		k.eq("166.2742", "GEODIST", "Sicily", "Palermo", "Catania", "km")
		k.eq("103.3182", "GEODIST", "Sicily", "Palermo", "Catania", "MI")
		k.null("GEODIST", "Sicily", "Foo", "Bar")
		k.null("GEODIST", "missing", "Foo", "Bar")
		k.eq([]any{"sqc8b49rny0", "sqdtr74hyu0", nil}, "GEOHASH", "Sicily", "Palermo", "Catania", "x")
		k.eq([]any{[]any{"13.36138933897018433", "38.11555639549629859"}, []any{"15.08726745843887329", "37.50266842333162032"}, nil},
			"GEOPOS", "Sicily", "Palermo", "Catania", "NonExisting")
		k.eq([]any{nil}, "GEOPOS", "missing", "a")
		k.eq([]any{[]any{"Palermo", "190.4424"}, []any{"Catania", "56.4413"}}, "GEORADIUS", "Sicily", 15, 37, 200, "km", "WITHDIST")
		k.eq([]any{[]any{"Catania", "56.4413"}, []any{"Palermo", "190.4424"}}, "GEORADIUS_RO", "Sicily", 15, 37, 200, "km", "WITHDIST", "ASC")
		k.eq([]any{[]any{"Palermo", int64(3479099956230698), []any{"13.36138933897018433", "38.11555639549629859"}}},
			"GEORADIUS", "Sicily", 15, 37, 200, "km", "WITHHASH", "WITHCOORD", "DESC", "COUNT", 1)
		k.eq([]any{"Palermo", "Catania"}, "GEORADIUSBYMEMBER", "Sicily", "Palermo", 200, "km", "ASC")
		k.eq([]any{"Catania", "Palermo"}, "GEORADIUSBYMEMBER_RO", "Sicily", "Catania", 200, "km", "ASC")
		k.eq(2, "GEOADD", "Sicily", 12.758489, 38.788135, "edge1", 17.241510, 38.788135, "edge2")
		k.eq([]any{"Catania", "Palermo"}, "GEOSEARCH", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km", "ASC")
		k.eq([]any{
			[]any{"Catania", "56.4413", []any{"15.08726745843887329", "37.50266842333162032"}},
			[]any{"Palermo", "190.4424", []any{"13.36138933897018433", "38.11555639549629859"}},
			[]any{"edge2", "279.7403", []any{"17.24151045083999634", "38.78813451624225195"}},
			[]any{"edge1", "279.7405", []any{"12.7584877610206604", "38.78813451624225195"}},
		}, "GEOSEARCH", "Sicily", "FROMLONLAT", 15, 37, "BYBOX", 400, 400, "km", "ASC", "WITHCOORD", "WITHDIST")
		k.eq([]any{"Palermo"}, "GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", 10, "km")
		k.eq(2, "GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km")
		k.eq([]any{"Catania", "3479447370796909", "Palermo", "3479099956230698"}, "ZRANGE", "dst", 0, -1, "REV", "WITHSCORES")
		k.eq(1, "GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km", "ASC", "COUNT", 1, "STOREDIST")
		k.eq([]any{"Catania", "56.441257870158204"}, "ZRANGE", "dst", 0, -1, "WITHSCORES")
		k.eq(2, "GEORADIUS", "Sicily", 15, 37, 200, "km", "STORE", "st")
		k.eq(2, "ZCARD", "st")
		k.eq(0, "GEORADIUS", "missing", 15, 37, 200, "km", "STORE", "st")
		k.eq(0, "EXISTS", "st")
		k.eq([]any{}, "GEOSEARCH", "missing", "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km")
		k.eq([]any{}, "GEORADIUSBYMEMBER", "missing", "x", "bad", "km")
		// NX, XX and CH as ZADD's.
		k.eq(0, "GEOADD", "Sicily", "NX", 13, 38, "Palermo")
		k.eq(1, "GEOADD", "Sicily", "XX", "CH", 13, 38, "Palermo")
		k.eq(0, "GEOADD", "Sicily", "XX", 13, 38, "New")
		if n := len(k.arr("GEOSEARCH", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 500, "km", "COUNT", 1, "ANY")); n != 1 {
			t.Fatalf("COUNT 1 ANY found %d members", n)
		}
	})
	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		k.eq(1, "GEOADD", "g", 1, 2, "a")
		k.err("ERR syntax error", "GEOADD", "g", 1, 2, "a", "b")
		k.err("ERR syntax error", "GEOADD", "g", "NX", "XX", 1, 2, "a")
		k.err("ERR value is not a valid float", "GEOADD", "g", "x", 2, "a")
		k.err("ERR invalid longitude,latitude pair 200.000000,100.000000", "GEOADD", "g", 200, 100, "a")
		k.err("ERR invalid longitude,latitude pair 0.000000,86.000000", "GEOADD", "g", 0, 86, "a")
		k.err("ERR unsupported unit provided. please use M, KM, FT, MI", "GEODIST", "g", "a", "a", "yd")
		k.err("ERR syntax error", "GEODIST", "g", "a", "a", "m", "x")
		k.err("ERR need numeric radius", "GEORADIUS", "g", 1, 2, "x", "km")
		k.err("ERR radius cannot be negative", "GEORADIUS", "g", 1, 2, -1, "km")
		k.err("ERR could not decode requested zset member", "GEORADIUSBYMEMBER", "g", "zz", 1, "km")
		k.err("ERR COUNT must be > 0", "GEORADIUS", "g", 1, 2, 1, "km", "COUNT", 0)
		k.err("ERR the ANY argument requires COUNT argument", "GEORADIUS", "g", 1, 2, 1, "km", "ANY")
		k.err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options", "GEORADIUS", "g", 1, 2, 1, "km", "STORE", "d", "WITHDIST")
		k.err("ERR syntax error", "GEORADIUS_RO", "g", 1, 2, 1, "km", "STORE", "d")
		k.err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH", "GEOSEARCH", "g", "BYRADIUS", 1, "km", "ASC", "WITHDIST")
		k.err("ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH", "GEOSEARCH", "g", "FROMLONLAT", 1, 2, "ASC", "WITHDIST")
		k.err("ERR syntax error", "GEOSEARCH", "g", "FROMLONLAT", 1, 2, "FROMMEMBER", "a", "BYRADIUS", 1, "km")
		k.err("ERR height or width cannot be negative", "GEOSEARCH", "g", "FROMLONLAT", 1, 2, "BYBOX", -1, 1, "km")
		k.err("ERR need numeric width", "GEOSEARCH", "g", "FROMLONLAT", 1, 2, "BYBOX", "w", 1, "km")
		k.err("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options", "GEOSEARCHSTORE", "d", "g", "FROMLONLAT", 1, 2, "BYRADIUS", 1, "km", "WITHDIST")
		k.err("ERR syntax error", "GEOSEARCH", "g", "FROMLONLAT", 1, 2, "BYRADIUS", 1, "km", "STORE", "x")
		k.do("SET", "s", "x")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOADD", "s", 1, 2, "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOPOS", "s", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOSEARCH", "s", "FROMLONLAT", 1, 2, "BYRADIUS", 1, "km")
	})
}

// TestGeoRedisCompare adds the same random points on the server under test and on a
// redis-server the test starts, and compares every geo reply: scores, GEOHASH, GEOPOS, GEODIST
// and sorted searches by radius and box, including points near the poles' limits and the
// antimeridian.
func TestGeoRedisCompare(t *testing.T) {
	ref := startRedisRef(t)
	_, c := startServer(t)
	ctx := harness.Ctx(t)
	rng := rand.New(rand.NewPCG(42, 42))
	both := func(args ...any) {
		t.Helper()
		x, errA := c.Do(ctx, args...).Result()
		y, errB := ref.Do(ctx, args...).Result()
		if fmt.Sprint(x, errA) != fmt.Sprint(y, errB) {
			t.Fatalf("%v:\n here: %v, %v\nredis: %v, %v", args, x, errA, y, errB)
		}
	}
	var members []any
	add := []any{"GEOADD", "pts"}
	for i := 0; i < 400; i++ {
		lon, lat := rng.Float64()*360-180, rng.Float64()*170.1-85.05
		if i%10 == 0 { // clustered, for searches that find many
			lon, lat = 2.35+rng.Float64()*0.5, 48.85+rng.Float64()*0.5
		}
		m := fmt.Sprintf("m%d", i)
		members = append(members, m)
		add = append(add, fmt.Sprintf("%.6f", lon), fmt.Sprintf("%.6f", lat), m)
	}
	add = append(add, 180, 85.05112878, "corner", -180, -85.05112878, "corner2", 0, 0, "zero")
	members = append(members, "corner", "corner2", "zero")
	both(add...)
	both("ZRANGE", "pts", 0, -1, "WITHSCORES")
	both(append([]any{"GEOHASH", "pts"}, members...)...)
	both(append([]any{"GEOPOS", "pts"}, members...)...)
	for i := 0; i < 100; i++ {
		a, b := members[rng.IntN(len(members))], members[rng.IntN(len(members))]
		both("GEODIST", "pts", a, b, []string{"m", "km", "ft", "mi"}[i%4])
	}
	for i := 0; i < 40; i++ {
		lon, lat := fmt.Sprintf("%.5f", 2.35+rng.Float64()*0.5), fmt.Sprintf("%.5f", 48.85+rng.Float64()*0.5)
		r := 1 + rng.IntN(60)
		both("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYRADIUS", r, "km", "ASC", "WITHDIST", "WITHCOORD", "WITHHASH")
		both("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYBOX", r, r*2, "km", "DESC", "WITHDIST")
		both("GEOSEARCH", "pts", "FROMMEMBER", members[rng.IntN(len(members))], "BYRADIUS", 2000, "km", "COUNT", 5, "WITHDIST")
		both("GEORADIUS", "pts", lon, lat, r*1000, "m", "COUNT", 3, "DESC")
		// Unsorted and COUNT ANY results come in the order of Redis's geohash cells.
		both("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYRADIUS", r, "km", "WITHDIST")
		both("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYBOX", r*3, r, "km")
		both("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYRADIUS", r, "km", "COUNT", 3, "ANY")
		both("GEORADIUSBYMEMBER_RO", "pts", members[rng.IntN(len(members))], 1000+rng.IntN(8000), "km")
		both("GEOSEARCHSTORE", "st", "pts", "FROMLONLAT", lon, lat, "BYRADIUS", r, "mi", "STOREDIST")
		// A stored distance is a full double: Go's sin, cos and asin may differ from the C
		// library's in the last bits, so it is compared to 1e-14 (WITHDIST's 4 decimals above
		// are compared exactly).
		x, _ := c.ZRangeWithScores(ctx, "st", 0, -1).Result()
		y, _ := ref.ZRangeWithScores(ctx, "st", 0, -1).Result()
		if len(x) != len(y) {
			t.Fatalf("GEOSEARCHSTORE STOREDIST: %d members here, %d on redis-server", len(x), len(y))
		}
		for j := range x {
			if x[j].Member != y[j].Member || math.Abs(x[j].Score-y[j].Score) > 1e-14*math.Max(1, y[j].Score) {
				t.Fatalf("GEOSEARCHSTORE STOREDIST: %v here, %v on redis-server", x[j], y[j])
			}
		}
		both("GEOSEARCHSTORE", "st2", "pts", "FROMLONLAT", lon, lat, "BYBOX", r, r, "km")
		both("ZRANGE", "st2", 0, -1, "WITHSCORES")
	}
}
