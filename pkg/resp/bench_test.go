package resp

import (
	"strconv"
	"testing"
)

// loopReader returns its data over and over, as a client pipelining forever would.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

// BenchmarkReadCommands reads a pipeline of 128 GET and SET commands per operation.
func BenchmarkReadCommands(b *testing.B) {
	var pipeline []byte
	for i := range 64 {
		key := "key:" + strconv.Itoa(i)
		pipeline = AppendCommandStrings(pipeline, "SET", key, "value-of-sixteen")
		pipeline = AppendCommandStrings(pipeline, "GET", key)
	}
	r := NewReader(&loopReader{data: pipeline}, Limits{})
	cmds := make([]Command, 0, 128)
	b.SetBytes(int64(len(pipeline)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for n := 0; n < 128; {
			var err error
			cmds, err = r.ReadCommands(cmds, 128-n)
			if err != nil {
				b.Fatal(err)
			}
			n += len(cmds)
		}
	}
}

// BenchmarkReadCommandsInline reads 128 inline commands per operation.
func BenchmarkReadCommandsInline(b *testing.B) {
	var pipeline []byte
	for i := range 64 {
		pipeline = append(pipeline, "SET key:"+strconv.Itoa(i)+" \"value of sixteen\"\r\nGET key:"+strconv.Itoa(i)+"\r\n"...)
	}
	r := NewReader(&loopReader{data: pipeline}, Limits{})
	cmds := make([]Command, 0, 128)
	b.SetBytes(int64(len(pipeline)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for n := 0; n < 128; {
			var err error
			cmds, err = r.ReadCommands(cmds, 128-n)
			if err != nil {
				b.Fatal(err)
			}
			n += len(cmds)
		}
	}
}

// BenchmarkWriter encodes the replies to a typical mix of commands.
func BenchmarkWriter(b *testing.B) {
	for _, proto := range []int{2, 3} {
		b.Run("RESP"+strconv.Itoa(proto), func(b *testing.B) {
			w := NewWriter()
			w.SetProto(proto)
			value := []byte("value-of-sixteen")
			b.ReportAllocs()
			for range b.N {
				w.Reset()
				for range 16 {
					w.Simple("OK")
					w.Bulk(value)
					w.Null()
					w.Int(42)
					w.Int(123456789)
					w.Array(3)
					w.BulkString("a")
					w.BulkString("b")
					w.Bulk(value)
					w.Map(1)
					w.BulkString("score")
					w.Double(3.25)
					w.Error("ERR no such key")
				}
			}
			b.SetBytes(int64(w.Len()))
		})
	}
}

// BenchmarkReplyReader reads simple and bulk replies, copying (Read) and not (Skip).
func BenchmarkReplyReader(b *testing.B) {
	w := NewWriter()
	for range 64 {
		w.Simple("OK")
		w.BulkString("value-of-sixteen")
	}
	data := w.Bytes()
	for _, skip := range []bool{false, true} {
		name := "Read"
		if skip {
			name = "Skip"
		}
		b.Run(name, func(b *testing.B) {
			rr := NewReplyReader(&loopReader{data: data})
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for range b.N {
				for range 128 {
					var err error
					if skip {
						_, err = rr.Skip()
					} else {
						_, err = rr.Read()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
