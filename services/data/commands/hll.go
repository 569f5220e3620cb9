package commands

// HyperLogLog, ported from Redis's hyperloglog.c so that values are byte-compatible: the same
// 16-byte header ("HYLL", encoding, three unused bytes, the cached cardinality little-endian
// with bit 7 of its last byte meaning "stale"), the same dense layout (16384 6-bit registers,
// least significant bits first) and the same sparse opcodes (ZERO 00xxxxxx, XZERO 01xxxxxx
// yyyyyyyy, VAL 1vvvvvxx), edited in the same way, so that the same PFADDs give the same bytes.

import (
	"encoding/binary"
	"math"
)

const (
	hllP          = 14
	hllQ          = 64 - hllP
	hllRegisters  = 1 << hllP
	hllPMask      = hllRegisters - 1
	hllBits       = 6
	hllRegMax     = 1<<hllBits - 1
	hllHdrSize    = 16
	hllDenseSize  = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense      = 0
	hllSparse     = 1
	hllMaxEnc     = 1
	hllSparseMax  = 3000 // hll-sparse-max-bytes
	hllValMaxVal  = 32
	hllValMaxLen  = 4
	hllZeroMaxLen = 64
	hllXZeroMax   = 16384
	hllAlphaInf   = 0.721347520444481703680
)

// murmurHash64A is Austin Appleby's MurmurHash64A as Redis uses it (little-endian blocks).
func murmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	n := len(key) / 8
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint64(key[i*8:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := key[n*8:]
	switch len(key) & 7 {
	case 7:
		h ^= uint64(tail[6]) << 48
		fallthrough
	case 6:
		h ^= uint64(tail[5]) << 40
		fallthrough
	case 5:
		h ^= uint64(tail[4]) << 32
		fallthrough
	case 4:
		h ^= uint64(tail[3]) << 24
		fallthrough
	case 3:
		h ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint64(tail[0])
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen returns the register an element goes to and the length of the run of zeros of its
// hash plus one (the register's candidate value).
func hllPatLen(ele []byte) (index int, count int) {
	hash := murmurHash64A(ele, 0xadc83b19)
	index = int(hash & hllPMask)
	hash >>= hllP
	hash |= 1 << hllQ
	bit := uint64(1)
	count = 1
	for hash&bit == 0 {
		count++
		bit <<= 1
	}
	return index, count
}

// The dense registers. regs has one byte of slack past the last register (Redis's sds has its
// terminator there).
func hllDenseGet(regs []byte, i int) int {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	b0, b1 := regs[b], byte(0)
	if b+1 < len(regs) {
		b1 = regs[b+1]
	}
	return int((b0>>fb | b1<<(8-fb)) & hllRegMax)
}

func hllDenseSetReg(regs []byte, i, v int) {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	val := byte(v)
	regs[b] &^= hllRegMax << fb
	regs[b] |= val << fb
	if b+1 < len(regs) {
		regs[b+1] &^= hllRegMax >> (8 - fb)
		regs[b+1] |= val >> (8 - fb)
	}
}

// Sparse opcodes.
func spIsZero(b byte) bool  { return b&0xc0 == 0 }
func spIsXZero(b byte) bool { return b&0xc0 == 0x40 }
func spIsVal(b byte) bool   { return b&0x80 != 0 }
func spZeroLen(b byte) int  { return int(b&0x3f) + 1 }
func spXZeroLen(b, c byte) int {
	return (int(b&0x3f)<<8 | int(c)) + 1
}
func spValValue(b byte) int      { return int(b>>2&0x1f) + 1 }
func spValLen(b byte) int        { return int(b&3) + 1 }
func spVal(val, n int) byte      { return byte((val-1)<<2|(n-1)) | 0x80 }
func spZero(n int) byte          { return byte(n - 1) }
func spXZero(n int) (byte, byte) { return byte((n-1)>>8) | 0x40, byte((n - 1) & 0xff) }

// hllNew is an empty HLL as Redis creates it: sparse, one XZERO of every register, cached
// cardinality 0 and valid.
func hllNew() []byte {
	v := make([]byte, hllHdrSize, hllHdrSize+2)
	copy(v, "HYLL")
	v[4] = hllSparse
	a, b := spXZero(hllRegisters)
	return append(v, a, b)
}

// hllValid is Redis's isHLLObjectOrReply check.
func hllValid(v []byte) bool {
	if len(v) < hllHdrSize || string(v[:4]) != "HYLL" || v[4] > hllMaxEnc {
		return false
	}
	return v[4] != hllDense || len(v) == hllDenseSize
}

func hllInvalidate(v []byte) { v[15] |= 0x80 }

func hllCacheValid(v []byte) bool { return v[15]&0x80 == 0 }

// hllToDense converts a sparse value to dense, keeping the header; false if it is corrupt.
func hllToDense(v []byte) ([]byte, bool) {
	if v[4] == hllDense {
		return v, true
	}
	d := make([]byte, hllDenseSize)
	copy(d, v[:hllHdrSize])
	d[4] = hllDense
	regs := d[hllHdrSize:]
	idx := 0
	p := v[hllHdrSize:]
	for i := 0; i < len(p); {
		switch {
		case spIsZero(p[i]):
			idx += spZeroLen(p[i])
			i++
		case spIsXZero(p[i]):
			if i+1 >= len(p) {
				return nil, false
			}
			idx += spXZeroLen(p[i], p[i+1])
			i += 2
		default:
			n, val := spValLen(p[i]), spValValue(p[i])
			if idx+n > hllRegisters {
				return nil, false
			}
			for ; n > 0; n-- {
				hllDenseSetReg(regs, idx, val)
				idx++
			}
			i++
		}
	}
	if idx != hllRegisters {
		return nil, false
	}
	return d, true
}

// hllSet raises register index to count if it is lower, in a dense or sparse value (promoting
// it as Redis does). It returns the value (possibly new), 1 if changed, 0 if not, -1 if the
// value is corrupt.
func hllSet(v []byte, index, count int) ([]byte, int) {
	if v[4] == hllDense {
		regs := v[hllHdrSize:]
		if hllDenseGet(regs, index) < count {
			hllDenseSetReg(regs, index, count)
			return v, 1
		}
		return v, 0
	}
	if count > hllValMaxVal {
		return hllPromote(v, index, count)
	}
	sp := v[hllHdrSize:]
	end := len(sp)
	first, span, prev, p := 0, 0, -1, 0
	for p < end {
		oplen := 1
		switch {
		case spIsZero(sp[p]):
			span = spZeroLen(sp[p])
		case spIsVal(sp[p]):
			span = spValLen(sp[p])
		default:
			if p+1 >= end {
				return v, -1
			}
			span = spXZeroLen(sp[p], sp[p+1])
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return v, -1
	}
	isZero, isXZero, isVal := spIsZero(sp[p]), spIsXZero(sp[p]), spIsVal(sp[p])
	var runlen int
	switch {
	case isZero:
		runlen = spZeroLen(sp[p])
	case isXZero:
		runlen = spXZeroLen(sp[p], sp[p+1])
	default:
		runlen = spValLen(sp[p])
	}
	updated := false
	if isVal {
		if spValValue(sp[p]) >= count {
			return v, 0
		}
		if runlen == 1 {
			sp[p] = spVal(count, 1)
			updated = true
		}
	}
	if !updated && isZero && runlen == 1 {
		sp[p] = spVal(count, 1)
		updated = true
	}
	if !updated {
		seq := make([]byte, 0, 5)
		last := first + span - 1
		zeros := func(n int) {
			if n > hllZeroMaxLen {
				a, b := spXZero(n)
				seq = append(seq, a, b)
			} else {
				seq = append(seq, spZero(n))
			}
		}
		if isZero || isXZero {
			if index != first {
				zeros(index - first)
			}
			seq = append(seq, spVal(count, 1))
			if index != last {
				zeros(last - index)
			}
		} else {
			cur := spValValue(sp[p])
			if index != first {
				seq = append(seq, spVal(cur, index-first))
			}
			seq = append(seq, spVal(count, 1))
			if index != last {
				seq = append(seq, spVal(cur, last-index))
			}
		}
		oldlen := 1
		if isXZero {
			oldlen = 2
		}
		delta := len(seq) - oldlen
		if delta > 0 && len(v)+delta > hllSparseMax {
			return hllPromote(v, index, count)
		}
		nv := make([]byte, 0, len(v)+delta)
		nv = append(nv, v[:hllHdrSize+p]...)
		nv = append(nv, seq...)
		nv = append(nv, v[hllHdrSize+p+oldlen:]...)
		v = nv
		sp = v[hllHdrSize:]
		end = len(sp)
	}
	// Merge adjacent VAL opcodes of the same value, scanning up to 5 opcodes from prev.
	q := 0
	if prev >= 0 {
		q = prev
	}
	for scan := 5; q < end && scan > 0; scan-- {
		if spIsXZero(sp[q]) {
			q += 2
			continue
		}
		if spIsZero(sp[q]) {
			q++
			continue
		}
		if q+1 < end && spIsVal(sp[q+1]) {
			v1, v2 := spValValue(sp[q]), spValValue(sp[q+1])
			if v1 == v2 {
				if n := spValLen(sp[q]) + spValLen(sp[q+1]); n <= hllValMaxLen {
					sp[q+1] = spVal(v1, n)
					copy(sp[q:], sp[q+1:])
					v = v[:len(v)-1]
					sp = v[hllHdrSize:]
					end--
					continue
				}
			}
		}
		q++
	}
	hllInvalidate(v)
	return v, 1
}

func hllPromote(v []byte, index, count int) ([]byte, int) {
	d, ok := hllToDense(v)
	if !ok {
		return v, -1
	}
	hllDenseSetReg(d[hllHdrSize:], index, count)
	return d, 1
}

// hllAdd adds ele: the value (possibly new) and 1 if a register changed, 0 if not, -1 if the
// value is corrupt.
func hllAdd(v []byte, ele []byte) ([]byte, int) {
	index, count := hllPatLen(ele)
	return hllSet(v, index, count)
}

// hllMergeInto raises max[i] to every register of v; false if v is corrupt.
func hllMergeInto(max *[hllRegisters]uint8, v []byte) bool {
	if v[4] == hllDense {
		regs := v[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			if r := uint8(hllDenseGet(regs, i)); r > max[i] {
				max[i] = r
			}
		}
		return true
	}
	p := v[hllHdrSize:]
	i := 0
	for j := 0; j < len(p); {
		switch {
		case spIsZero(p[j]):
			i += spZeroLen(p[j])
			j++
		case spIsXZero(p[j]):
			if j+1 >= len(p) {
				return false
			}
			i += spXZeroLen(p[j], p[j+1])
			j += 2
		default:
			n, val := spValLen(p[j]), uint8(spValValue(p[j]))
			if n+i > hllRegisters {
				return false
			}
			for ; n > 0; n-- {
				if val > max[i] {
					max[i] = val
				}
				i++
			}
			j++
		}
	}
	return i == hllRegisters
}

// hllHisto is the registers' histogram; false if a sparse value is corrupt.
func hllHisto(v []byte) ([64]int, bool) {
	var h [64]int
	if v[4] == hllDense {
		regs := v[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			h[hllDenseGet(regs, i)]++
		}
		return h, true
	}
	p := v[hllHdrSize:]
	idx := 0
	for j := 0; j < len(p); {
		switch {
		case spIsZero(p[j]):
			n := spZeroLen(p[j])
			idx += n
			h[0] += n
			j++
		case spIsXZero(p[j]):
			if j+1 >= len(p) {
				return h, false
			}
			n := spXZeroLen(p[j], p[j+1])
			idx += n
			h[0] += n
			j += 2
		default:
			n := spValLen(p[j])
			idx += n
			h[spValValue(p[j])] += n
			j++
		}
	}
	return h, idx == hllRegisters
}

func hllRawHisto(regs *[hllRegisters]uint8) [64]int {
	var h [64]int
	for _, r := range regs {
		h[r]++
	}
	return h
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zp := z
		z += x * y
		y += y
		if zp == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zp := z
		y *= 0.5
		z -= math.Pow(1-x, 2) * y
		if zp == z {
			return z / 3
		}
	}
}

// hllEstimate is Redis's hllCount on a histogram (Ertl's improved estimator).
func hllEstimate(h [64]int) uint64 {
	m := float64(hllRegisters)
	z := m * hllTau((m-float64(h[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += m * hllSigma(float64(h[0])/m)
	return uint64(math.Round(hllAlphaInf * m * m / z))
}
