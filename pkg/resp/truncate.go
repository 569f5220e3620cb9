package resp

// Truncate drops everything written after the first n bytes. The server uses it to discard a
// reply (CLIENT REPLY OFF|SKIP) or to replace replies whose writes could not be made durable.
func (w *Writer) Truncate(n int) {
	if n >= 0 && n < len(w.buf) {
		w.buf = w.buf[:n]
	}
}
