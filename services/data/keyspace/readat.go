package keyspace

// ReadAt returns up to n bytes of key i's value from byte off, as the transaction sees it
// (fewer at the value's end, none past it or for a missing key). The bytes must not be modified.
// Of a chunked value only the manifest and the chunks the range overlaps are read, so a bit
// command on a large string (SETBIT, GETBIT, BITFIELD) reads a chunk, not the value; a small
// value is read whole. Like Value, it may return an error the function must return as is, and
// the function is called again with the data it needs.
func (tx *Tx) ReadAt(i int, off, n int64) ([]byte, error) {
	k := tx.keys[i]
	if !k.found || n <= 0 || off < 0 {
		return nil, nil
	}
	if k.op == opPut || k.op == opGroups || k.op != opEdit && !k.entry.chunked() {
		v, _, err := tx.Value(i)
		if err != nil {
			return nil, err
		}
		if off >= int64(len(v)) {
			return nil, nil
		}
		return v[off:min(off+n, int64(len(v)))], nil
	}
	if !k.manValid() {
		k.wantMan = true
		return nil, errNeedValue
	}
	cur := k.man.length
	if k.op == opEdit {
		cur = k.elen
	}
	end := min(off+n, cur)
	if off >= end {
		return nil, nil
	}
	cs := int64(k.man.chunk)
	var need []int
	for j := off / cs; j <= (end-1)/cs; j++ {
		if _, ok := k.chunkNow(int(j)); !ok {
			need = append(need, int(j))
		}
	}
	if len(need) > 0 {
		k.wantParts = append(k.wantParts, need...)
		return nil, errNeedValue
	}
	if off/cs == (end-1)/cs {
		c, _ := k.chunkNow(int(off / cs))
		from := off / cs * cs
		return c[off-from : end-from], nil
	}
	out := make([]byte, 0, end-off)
	for j := off / cs; j <= (end-1)/cs; j++ {
		c, _ := k.chunkNow(int(j))
		from := j * cs
		out = append(out, c[max(off-from, 0):min(end-from, int64(len(c)))]...)
	}
	return out, nil
}
