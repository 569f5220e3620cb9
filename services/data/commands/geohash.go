package commands

// Geohash as Redis's geohash.c and geohash_helper.c: longitude and latitude, each scaled to 26
// bits over its range (latitude limited to what EPSG:3785 can project), interleaved into a
// 52-bit integer that is the member's score in the sorted set. Distances are haversine on
// Redis's earth radius.

import (
	"math"
	"strconv"
	"strings"
)

const (
	geoStepMax   = 26
	geoLatMin    = -85.05112878
	geoLatMax    = 85.05112878
	geoLongMin   = -180.0
	geoLongMax   = 180.0
	earthRadiusM = 6372797.560856
	geoAlphabet  = "0123456789bcdefghjkmnpqrstuvwxyz"
)

// interleave64 puts x's bits in the even positions and y's in the odd ones.
func interleave64(x, y uint32) uint64 {
	spread := func(v uint32) uint64 {
		u := uint64(v)
		u = (u | u<<16) & 0x0000FFFF0000FFFF
		u = (u | u<<8) & 0x00FF00FF00FF00FF
		u = (u | u<<4) & 0x0F0F0F0F0F0F0F0F
		u = (u | u<<2) & 0x3333333333333333
		u = (u | u<<1) & 0x5555555555555555
		return u
	}
	return spread(x) | spread(y)<<1
}

// deinterleave64 undoes interleave64: x in the low 32 bits, y in the high.
func deinterleave64(v uint64) uint64 {
	squash := func(u uint64) uint64 {
		u &= 0x5555555555555555
		u = (u | u>>1) & 0x3333333333333333
		u = (u | u>>2) & 0x0F0F0F0F0F0F0F0F
		u = (u | u>>4) & 0x00FF00FF00FF00FF
		u = (u | u>>8) & 0x0000FFFF0000FFFF
		u = (u | u>>16) & 0x00000000FFFFFFFF
		return u
	}
	return squash(v) | squash(v>>1)<<32
}

// geohashEncode is Redis's geohashEncode over the given ranges at 26 bits a coordinate.
func geohashEncode(lon, lat, latMin, latMax float64) uint64 {
	latOff := (lat - latMin) / (latMax - latMin)
	lonOff := (lon - geoLongMin) / (geoLongMax - geoLongMin)
	latOff *= 1 << geoStepMax
	lonOff *= 1 << geoStepMax
	return interleave64(uint32(latOff), uint32(lonOff))
}

// geoScore is the sorted-set score of a position (geohashEncodeWGS84 at step 26).
func geoScore(lon, lat float64) uint64 { return geohashEncode(lon, lat, geoLatMin, geoLatMax) }

// geoDecode is the position a score stands for: the centre of its cell, clamped to the ranges
// (geohashDecodeToLongLatWGS84).
func geoDecode(bits uint64) (lon, lat float64) {
	sep := deinterleave64(bits)
	ilat, ilon := uint32(sep), uint32(sep>>32)
	const cells = float64(uint64(1) << geoStepMax)
	latScale, lonScale := geoLatMax-geoLatMin, geoLongMax-geoLongMin
	latLo := geoLatMin + (float64(ilat)*1.0/cells)*latScale
	latHi := geoLatMin + (float64(uint64(ilat)+1)*1.0/cells)*latScale
	lonLo := geoLongMin + (float64(ilon)*1.0/cells)*lonScale
	lonHi := geoLongMin + (float64(uint64(ilon)+1)*1.0/cells)*lonScale
	lon = min(max((lonLo+lonHi)/2, geoLongMin), geoLongMax)
	lat = min(max((latLo+latHi)/2, geoLatMin), geoLatMax)
	return lon, lat
}

// geohashString is GEOHASH's 11-character standard geohash of a score: the position
// re-encoded over latitude -90..90, the 11th character 0 (52 bits give 10 and a bit).
func geohashString(score uint64) string {
	lon, lat := geoDecode(score)
	bits := geohashEncode(lon, lat, -90, 90)
	var b [11]byte
	for i := 0; i < 11; i++ {
		idx := 0
		if i < 10 {
			idx = int(bits >> (52 - (i+1)*5) & 0x1f)
		}
		b[i] = geoAlphabet[idx]
	}
	return string(b[:])
}

// degToRad is Redis's D_R, M_PI / 180.0 computed in doubles: a Go constant expression would be
// rounded once from the exact quotient and can differ in the last bit.
var degToRad = func() float64 { pi, d := float64(math.Pi), 180.0; return pi / d }()

func degRad(d float64) float64 { return d * degToRad }

func geoLatDistance(lat1, lat2 float64) float64 {
	return earthRadiusM * math.Abs(degRad(lat2)-degRad(lat1))
}

// geoDistance is Redis's geohashGetDistance (haversine), in metres.
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * earthRadiusM * math.Asin(math.Sqrt(a))
}

// geoInRect is geohashGetDistanceIfInRectangle: whether (x2, y2) lies in the box of width and
// height metres centred on (x1, y1), and its distance from the centre.
func geoInRect(width, height, x1, y1, x2, y2 float64) (float64, bool) {
	if geoLatDistance(y2, y1) > height/2 {
		return 0, false
	}
	if geoDistance(x2, y2, x1, y2) > width/2 {
		return 0, false
	}
	return geoDistance(x1, y1, x2, y2), true
}

// formatGeoCoord formats a coordinate as Redis's addReplyHumanLongDouble: 17 decimals, trailing
// zeros dropped.
func formatGeoCoord(f float64) string {
	s := strconv.FormatFloat(f, 'f', 17, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// formatGeoDist formats a distance as Redis does: 4 decimals.
func formatGeoDist(d float64) string { return strconv.FormatFloat(d, 'f', 4, 64) }

// geoCell is a geohash cell of step bits a coordinate; the zero cell means none.
type geoCell struct {
	bits uint64
	step uint
}

// geoArea is a cell's extent.
type geoArea struct{ lonMin, lonMax, latMin, latMax float64 }

func geoEncodeStep(lon, lat float64, step uint) geoCell {
	latOff := (lat - geoLatMin) / (geoLatMax - geoLatMin)
	lonOff := (lon - geoLongMin) / (geoLongMax - geoLongMin)
	latOff *= float64(uint64(1) << step)
	lonOff *= float64(uint64(1) << step)
	return geoCell{interleave64(uint32(latOff), uint32(lonOff)), step}
}

func (h geoCell) area() geoArea {
	sep := deinterleave64(h.bits)
	ilat, ilon := uint32(sep), uint32(sep>>32)
	cells := float64(uint64(1) << h.step)
	latScale, lonScale := geoLatMax-geoLatMin, geoLongMax-geoLongMin
	return geoArea{
		latMin: geoLatMin + (float64(ilat)*1.0/cells)*latScale,
		latMax: geoLatMin + (float64(uint64(ilat)+1)*1.0/cells)*latScale,
		lonMin: geoLongMin + (float64(ilon)*1.0/cells)*lonScale,
		lonMax: geoLongMin + (float64(uint64(ilon)+1)*1.0/cells)*lonScale,
	}
}

// move is geohash_move_x (dx) and geohash_move_y (dy): the cell next to h.
func (h geoCell) move(dx, dy int) geoCell {
	if dx != 0 {
		x, y := h.bits&0xaaaaaaaaaaaaaaaa, h.bits&0x5555555555555555
		zz := uint64(0x5555555555555555) >> (64 - h.step*2)
		if dx > 0 {
			x += zz + 1
		} else {
			x |= zz
			x -= zz + 1
		}
		x &= 0xaaaaaaaaaaaaaaaa >> (64 - h.step*2)
		h.bits = x | y
	}
	if dy != 0 {
		x, y := h.bits&0xaaaaaaaaaaaaaaaa, h.bits&0x5555555555555555
		zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - h.step*2)
		if dy > 0 {
			y += zz + 1
		} else {
			y |= zz
			y -= zz + 1
		}
		y &= 0x5555555555555555 >> (64 - h.step*2)
		h.bits = x | y
	}
	return h
}

// geoStepsByRadius is geohashEstimateStepsByRadius.
func geoStepsByRadius(meters, lat float64) uint {
	if meters == 0 {
		return 26
	}
	step := 1
	for meters < 20037726.37 {
		meters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint(min(max(step, 1), 26))
}

func radDeg(r float64) float64 { return r / degToRad }

// geoSearchCells is geohashCalculateAreasByShapeWGS84: the cell of the centre and its eight
// neighbours (zero where useless), in the order Redis scans them: centre, north, south, east,
// west, north-east, north-west, south-east, south-west. halfW and halfH are the shape's
// half-extents in metres (the radius for a circle), radius the distance to its farthest point.
func geoSearchCells(lon, lat, halfW, halfH, radius float64) [9]geoCell {
	latDelta := radDeg(halfH / earthRadiusM)
	lonTop := radDeg(halfW / earthRadiusM / math.Cos(degRad(lat+latDelta)))
	lonBottom := radDeg(halfW / earthRadiusM / math.Cos(degRad(lat-latDelta)))
	minLon, maxLon := lon-lonTop, lon+lonTop
	if lat < 0 {
		minLon, maxLon = lon-lonBottom, lon+lonBottom
	}
	minLat, maxLat := lat-latDelta, lat+latDelta
	steps := geoStepsByRadius(radius, lat)
	h := geoEncodeStep(lon, lat, steps)
	if n, s, e, w := h.move(0, 1).area(), h.move(0, -1).area(), h.move(1, 0).area(), h.move(-1, 0).area(); steps > 1 &&
		(n.latMax < maxLat || s.latMin > minLat || e.lonMax < maxLon || w.lonMin > minLon) {
		steps--
		h = geoEncodeStep(lon, lat, steps)
	}
	cells := [9]geoCell{h, h.move(0, 1), h.move(0, -1), h.move(1, 0), h.move(-1, 0), h.move(1, 1), h.move(-1, 1), h.move(1, -1), h.move(-1, -1)}
	if steps >= 2 {
		a := h.area()
		zero := func(is ...int) {
			for _, i := range is {
				cells[i] = geoCell{}
			}
		}
		if a.latMin < minLat {
			zero(2, 8, 7) // south, south-west, south-east
		}
		if a.latMax > maxLat {
			zero(1, 5, 6) // north, north-east, north-west
		}
		if a.lonMin < minLon {
			zero(4, 8, 6) // west, south-west, north-west
		}
		if a.lonMax > maxLon {
			zero(3, 7, 5) // east, south-east, north-east
		}
	}
	return cells
}

// scoreRange is the [min, max) of the 52-bit scores inside the cell.
func (h geoCell) scoreRange() (uint64, uint64) {
	return h.bits << (52 - h.step*2), (h.bits + 1) << (52 - h.step*2)
}
