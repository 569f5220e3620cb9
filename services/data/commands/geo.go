package commands

// Geo commands on sorted sets, as Redis 7.0's geo.c: a member's score is its 52-bit geohash
// (geohash.go). GEOADD is ZADD with those scores (and is replicated as that ZADD); searches
// scan the score ranges of the nine geohash cells around the centre, as Redis does, and keep
// the members inside the shape, with distances measured from the decoded positions.

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

func init() {
	geo := func(name string, arity int, flags Flag, since, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "geo", Since: since, Complexity: "O(log(N)) for each item", Summary: summary, Handler: h}
	}
	storing := func(c *Command) *Command {
		c.Flags |= FlagMovableKeys
		c.Keys = geoStoreKeys
		return c
	}
	gss := geo("geosearchstore", -8, FlagWrite|FlagDenyOOM, "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", geosearchstoreCmd)
	gss.LastKey = 2
	register(
		geo("geoadd", -5, FlagWrite|FlagDenyOOM, "3.2.0", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", geoaddCmd),
		geo("geodist", -4, FlagReadonly, "3.2.0", "Returns the distance between two members of a geospatial index.", geodistCmd),
		geo("geohash", -2, FlagReadonly, "3.2.0", "Returns members from a geospatial index as geohash strings.", geohashCmd),
		geo("geopos", -2, FlagReadonly, "3.2.0", "Returns the longitude and latitude of members from a geospatial index.", geoposCmd),
		storing(geo("georadius", -6, FlagWrite|FlagDenyOOM, "3.2.0", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", georadiusCmd)),
		storing(geo("georadiusbymember", -5, FlagWrite|FlagDenyOOM, "3.2.0", "Queries a geospatial index for members within a distance from a member, optionally stores the result.", georadiusbymemberCmd)),
		geo("georadius_ro", -6, FlagReadonly, "3.2.10", "Returns members from a geospatial index that are within a distance from a coordinate.", georadiusRoCmd),
		geo("georadiusbymember_ro", -5, FlagReadonly, "3.2.10", "Returns members from a geospatial index that are within a distance from a member.", georadiusbymemberRoCmd),
		geo("geosearch", -7, FlagReadonly, "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle.", geosearchCmd),
		gss,
	)
}

// geoStoreKeys finds GEORADIUS's keys: the source, and the key after STORE or STOREDIST.
func geoStoreKeys(args [][]byte) ([]int, error) {
	out := []int{1}
	for i := 5; i < len(args)-1; i++ {
		if is(args[i], "STORE") || is(args[i], "STOREDIST") {
			out = append(out, i+1)
			i++
		}
	}
	return out, nil
}

func geoFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || len(b) == 0 || b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	return f, true
}

// lonLatArgs parses a longitude and a latitude as Redis's extractLongLatOrReply.
func lonLatArgs(args [][]byte) (lon, lat float64, err error) {
	var ok1, ok2 bool
	lon, ok1 = geoFloat(args[0])
	if !ok1 {
		return 0, 0, ErrNotFloat
	}
	lat, ok2 = geoFloat(args[1])
	if !ok2 {
		return 0, 0, ErrNotFloat
	}
	if lon < geoLongMin || lon > geoLongMax || lat < geoLatMin || lat > geoLatMax {
		return 0, 0, Error(fmt.Sprintf("ERR invalid longitude,latitude pair %f,%f", lon, lat))
	}
	return lon, lat, nil
}

// unitArg is a unit's size in metres.
func unitArg(b []byte) (float64, error) {
	switch {
	case is(b, "M"):
		return 1, nil
	case is(b, "KM"):
		return 1000, nil
	case is(b, "FT"):
		return 0.3048, nil
	case is(b, "MI"):
		return 1609.34, nil
	}
	return 0, Error("ERR unsupported unit provided. please use M, KM, FT, MI")
}

func geoaddCmd(c *Ctx) {
	at := 2
	nx, xx := false, false
	for ; at < len(c.Args); at++ {
		switch {
		case is(c.Args[at], "NX"):
			nx = true
			continue
		case is(c.Args[at], "XX"):
			xx = true
			continue
		case is(c.Args[at], "CH"):
			continue
		}
		break
	}
	if (len(c.Args)-at)%3 != 0 || nx && xx {
		c.Err(ErrSyntax)
		return
	}
	zadd := [][]byte{[]byte("ZADD")}
	zadd = append(zadd, c.Args[1:at]...)
	for i := at; i < len(c.Args); i += 3 {
		lon, lat, err := lonLatArgs(c.Args[i : i+2])
		if err != nil {
			c.Err(err)
			return
		}
		zadd = append(zadd, strconv.AppendUint(nil, geoScore(lon, lat), 10), c.Args[i+2])
	}
	// As Redis, GEOADD is ZADD with the positions' scores, and is replicated as that ZADD.
	c.Propagate(zadd)
	c.Args = zadd
	zaddCmd(c)
}

// readGeo reads key's sorted set for a geo read: nil when the key does not exist.
func readGeo(c *Ctx, key []byte) (*zsetValue, error) {
	z, found, err := readValue(c, key, typeZSet, decodeZSet)
	if err != nil || !found {
		return nil, err
	}
	return z, nil
}

func geodistCmd(c *Ctx) {
	conv := 1.0
	switch {
	case len(c.Args) == 5:
		var err error
		if conv, err = unitArg(c.Args[4]); err != nil {
			c.Err(err)
			return
		}
	case len(c.Args) > 5:
		c.Err(ErrSyntax)
		return
	}
	z, err := readGeo(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if z == nil {
		c.W.Null()
		return
	}
	s1, ok1 := z.score(c.Args[2])
	s2, ok2 := z.score(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Null()
		return
	}
	lon1, lat1 := geoDecode(uint64(s1))
	lon2, lat2 := geoDecode(uint64(s2))
	c.W.BulkString(formatGeoDist(geoDistance(lon1, lat1, lon2, lat2) / conv))
}

func geohashCmd(c *Ctx) {
	z, err := readGeo(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		var s float64
		ok := false
		if z != nil {
			s, ok = z.score(m)
		}
		if !ok {
			c.W.Null()
			continue
		}
		c.W.BulkString(geohashString(uint64(s)))
	}
}

func geoposCmd(c *Ctx) {
	z, err := readGeo(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		var s float64
		ok := false
		if z != nil {
			s, ok = z.score(m)
		}
		if !ok {
			c.W.NullArray()
			continue
		}
		lon, lat := geoDecode(uint64(s))
		c.W.Array(2)
		c.W.BulkString(formatGeoCoord(lon))
		c.W.BulkString(formatGeoCoord(lat))
	}
}

// Search kinds, as Redis's georadiusGeneric flags.
const (
	geoFromCoords = 1 << iota
	geoFromMember
	geoSearch
	geoSearchStore
	geoNoStore
)

// geoQuery is a parsed search.
type geoQuery struct {
	box                     bool
	x, y                    float64 // centre
	radius, width, height   float64 // in the unit
	conv                    float64 // the unit in metres
	withDist, withHash      bool
	withCoord, any          bool
	sort                    int // 0 none, 1 asc, -1 desc
	count                   int64
	store                   []byte
	storeDist               bool
	fromMember, fromLonLat  bool
	byRadius, byBox         bool
	memberMissing, noSource bool
}

// geoPoint is a member found by a search.
type geoPoint struct {
	member   []byte
	lon, lat float64
	dist     float64
	score    float64
}

func distanceArgs(args [][]byte) (r, conv float64, err error) {
	r, ok := geoFloat(args[0])
	if !ok {
		return 0, 0, Error("ERR need numeric radius")
	}
	if r < 0 {
		return 0, 0, Error("ERR radius cannot be negative")
	}
	conv, err = unitArg(args[1])
	return r, conv, err
}

// memberPos is a member's decoded position.
func memberPos(z *zsetValue, m []byte) (float64, float64, error) {
	s, ok := z.score(m)
	if !ok {
		return 0, 0, Error("ERR could not decode requested zset member")
	}
	lon, lat := geoDecode(uint64(s))
	return lon, lat, nil
}

// parseGeoQuery parses a search's arguments in Redis's order of checks; z is the source set
// (nil when missing), looked up first as Redis does.
func parseGeoQuery(c *Ctx, z *zsetValue, flags int) (q geoQuery, err error) {
	args := c.Args
	var base int
	switch {
	case flags&geoFromCoords != 0:
		base = 6
		if q.x, q.y, err = lonLatArgs(args[2:4]); err != nil {
			return q, err
		}
		if q.radius, q.conv, err = distanceArgs(args[4:6]); err != nil {
			return q, err
		}
	case flags&geoFromMember != 0 && z == nil:
		base = 5
	case flags&geoFromMember != 0:
		base = 5
		if q.x, q.y, err = memberPos(z, args[2]); err != nil {
			return q, err
		}
		if q.radius, q.conv, err = distanceArgs(args[3:5]); err != nil {
			return q, err
		}
	default:
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			q.store = args[1]
		}
	}
	rem := len(args) - base
	for i := 0; i < rem; i++ {
		a := args[base+i]
		more := func(n int) bool { return i+n < rem }
		switch {
		case is(a, "WITHDIST"):
			q.withDist = true
		case is(a, "WITHHASH"):
			q.withHash = true
		case is(a, "WITHCOORD"):
			q.withCoord = true
		case is(a, "ANY"):
			q.any = true
		case is(a, "ASC"):
			q.sort = 1
		case is(a, "DESC"):
			q.sort = -1
		case is(a, "COUNT") && more(1):
			if q.count, err = intArg(args[base+i+1]); err != nil {
				return q, err
			}
			if q.count <= 0 {
				return q, Error("ERR COUNT must be > 0")
			}
			i++
		case (is(a, "STORE") || is(a, "STOREDIST")) && more(1) && flags&(geoNoStore|geoSearch) == 0:
			q.store, q.storeDist = args[base+i+1], is(a, "STOREDIST")
			i++
		case is(a, "STOREDIST") && flags&geoSearchStore != 0:
			q.storeDist = true
		case is(a, "FROMMEMBER") && more(1) && flags&geoSearch != 0 && !q.fromLonLat:
			if z != nil {
				if q.x, q.y, err = memberPos(z, args[base+i+1]); err != nil {
					return q, err
				}
			}
			q.fromMember = true
			i++
		case is(a, "FROMLONLAT") && more(2) && flags&geoSearch != 0 && !q.fromMember:
			if q.x, q.y, err = lonLatArgs(args[base+i+1 : base+i+3]); err != nil {
				return q, err
			}
			q.fromLonLat = true
			i += 2
		case is(a, "BYRADIUS") && more(2) && flags&geoSearch != 0 && !q.byBox:
			if q.radius, q.conv, err = distanceArgs(args[base+i+1 : base+i+3]); err != nil {
				return q, err
			}
			q.byRadius = true
			i += 2
		case is(a, "BYBOX") && more(3) && flags&geoSearch != 0 && !q.byRadius:
			w, ok1 := geoFloat(args[base+i+1])
			if !ok1 {
				return q, Error("ERR need numeric width")
			}
			h, ok2 := geoFloat(args[base+i+2])
			if !ok2 {
				return q, Error("ERR need numeric height")
			}
			if h < 0 || w < 0 {
				return q, Error("ERR height or width cannot be negative")
			}
			if q.conv, err = unitArg(args[base+i+3]); err != nil {
				return q, err
			}
			q.width, q.height, q.box, q.byBox = w, h, true, true
			i += 3
		default:
			return q, ErrSyntax
		}
	}
	if q.store != nil && (q.withDist || q.withHash || q.withCoord) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		return q, Error("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	}
	if flags&geoSearch != 0 && !q.fromMember && !q.fromLonLat {
		return q, Error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
	}
	if flags&geoSearch != 0 && !q.byRadius && !q.byBox {
		return q, Error("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
	}
	if q.any && q.count == 0 {
		return q, Error("ERR the ANY argument requires COUNT argument")
	}
	if q.count != 0 && q.sort == 0 && !q.any {
		q.sort = 1
	}
	return q, nil
}

// search returns the members of z inside q's shape, found as Redis finds them: the members of
// the nine geohash cells around the centre (geoSearchCells), each cell's in score order, so
// that unsorted results and COUNT ANY pick the same members in the same order; then sorted as
// q asks and cut to its count.
func (q *geoQuery) search(z *zsetValue) []geoPoint {
	halfW, halfH := q.radius*q.conv, q.radius*q.conv
	radius := q.radius
	if q.box {
		halfW, halfH = q.width/2*q.conv, q.height/2*q.conv
		radius = math.Sqrt((q.width/2)*(q.width/2) + (q.height/2)*(q.height/2))
	}
	cells := geoSearchCells(q.x, q.y, halfW, halfH, radius*q.conv)
	var out []geoPoint
	limit := int64(0)
	if q.any {
		limit = q.count
	}
	last := 0
	for i, cell := range cells {
		if cell == (geoCell{}) {
			continue
		}
		if last != 0 && cell == cells[last] {
			continue // a huge radius makes neighbours repeat
		}
		if limit > 0 && int64(len(out)) >= limit {
			break
		}
		lo, hi := cell.scoreRange()
		j := sort.Search(len(z.items), func(k int) bool { return z.items[k].score >= float64(lo) })
		for ; j < len(z.items) && z.items[j].score < float64(hi); j++ {
			it := z.items[j]
			lon, lat := geoDecode(uint64(it.score))
			var d float64
			var in bool
			if q.box {
				d, in = geoInRect(q.width*q.conv, q.height*q.conv, q.x, q.y, lon, lat)
			} else {
				d = geoDistance(q.x, q.y, lon, lat)
				in = d <= q.radius*q.conv
			}
			if in {
				out = append(out, geoPoint{member: it.member, lon: lon, lat: lat, dist: d, score: it.score})
			}
			if limit > 0 && int64(len(out)) >= limit {
				break
			}
		}
		last = i
	}
	if q.sort != 0 {
		sort.SliceStable(out, func(i, j int) bool {
			if q.sort > 0 {
				return out[i].dist < out[j].dist
			}
			return out[i].dist > out[j].dist
		})
	}
	if q.count > 0 && int64(len(out)) > q.count {
		out = out[:q.count]
	}
	for i := range out {
		out[i].dist /= q.conv
	}
	return out
}

func (q *geoQuery) reply(c *Ctx, pts []geoPoint) {
	opts := b2i(q.withDist) + b2i(q.withHash) + b2i(q.withCoord)
	c.W.Array(len(pts))
	for _, p := range pts {
		if opts > 0 {
			c.W.Array(int(opts) + 1)
		}
		c.W.Bulk(p.member)
		if q.withDist {
			c.W.BulkString(formatGeoDist(p.dist))
		}
		if q.withHash {
			c.W.Int(int64(p.score))
		}
		if q.withCoord {
			c.W.Array(2)
			c.W.BulkString(formatGeoCoord(p.lon))
			c.W.BulkString(formatGeoCoord(p.lat))
		}
	}
}

func georadiusCmd(c *Ctx)           { geoSearchGeneric(c, 1, geoFromCoords) }
func georadiusbymemberCmd(c *Ctx)   { geoSearchGeneric(c, 1, geoFromMember) }
func georadiusRoCmd(c *Ctx)         { geoSearchGeneric(c, 1, geoFromCoords|geoNoStore) }
func georadiusbymemberRoCmd(c *Ctx) { geoSearchGeneric(c, 1, geoFromMember|geoNoStore) }
func geosearchCmd(c *Ctx)           { geoSearchGeneric(c, 1, geoSearch) }
func geosearchstoreCmd(c *Ctx)      { geoSearchGeneric(c, 2, geoSearch|geoSearchStore) }

func geoSearchGeneric(c *Ctx, src int, flags int) {
	z, err := readGeo(c, c.Args[src])
	if err != nil {
		c.Err(err)
		return
	}
	q, err := parseGeoQuery(c, z, flags)
	if err != nil {
		c.Err(err)
		return
	}
	if q.store == nil {
		if z == nil {
			c.W.Array(0)
			return
		}
		q.reply(c, q.search(z))
		return
	}
	// Storing: read the source again inside the transaction that writes the destination.
	var n int
	keys := []kspKey{{DB: c.DB(), Key: q.store}, {DB: c.DB(), Key: c.Args[src]}}
	err = c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		n = 0
		m, ok := tx.Meta(1)
		if !ok {
			tx.Delete(0)
			return nil
		}
		if m.Type != typeZSet {
			return ErrWrongType
		}
		b, _, err := tx.Value(1)
		if err != nil {
			return err
		}
		sz, err := decodeZSet(b)
		if err != nil {
			return err
		}
		pts := q.search(sz)
		dst := newZSet()
		for _, p := range pts {
			s := p.score
			if q.storeDist {
				s = p.dist
			}
			dst.set(p.member, s)
		}
		n = len(pts)
		return putValue(tx, 0, dst, 0, typeZSet)
	})
	if err != nil {
		c.Err(err)
		return
	}
	event := "georadiusstore"
	if flags&geoSearch != 0 {
		event = "geosearchstore"
	}
	notifyStore(c, pubsub.ZSet, event, q.store, n)
	c.W.Int(int64(n))
}
