package resp

// Free returns how many bytes the read buffer can take before it must grow (CLIENT LIST's
// qbuf-free).
func (r *Reader) Free() int { return cap(r.buf) - r.end }
