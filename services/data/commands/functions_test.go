package commands

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/script"
)

func libNames(e *script.Engine) []string {
	var out []string
	for _, l := range e.Libraries() {
		out = append(out, l.Name)
	}
	return out
}

// TestFunctionsFileCrash: a crash at any point of saving the libraries (every file-system
// operation from the first on fails, as in a process that stopped there, and the machine then
// loses whatever was not synced, a random part of it) leaves the old set of libraries or the
// new one, never a mixture or an unreadable file.
func TestFunctionsFileCrash(t *testing.T) {
	const dir = "/data"
	codes := []string{
		"#!lua name=one\nredis.register_function('f1', function() return 1 end)",
		"#!lua name=two\nredis.register_function('f2', function() return 2 end)",
	}
	errCrash := errors.New("crash")
	for seed := uint64(0); seed < 8; seed++ {
		for n := 1; ; n++ {
			mem := vfs.NewMem()
			if err := mem.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			e := script.New(slog.Default())
			e.Lock()
			if _, err := e.LoadLibraryLocked(codes[0], false); err != nil {
				t.Fatal(err)
			}
			if err := SaveFunctions(mem, dir, e); err != nil {
				t.Fatal(err)
			}
			if _, err := e.LoadLibraryLocked(codes[1], false); err != nil {
				t.Fatal(err)
			}
			inj := vfs.InjectAfter(vfs.OpAny, n, errCrash)
			err := SaveFunctions(vfs.NewErrorFS(mem, inj), dir, e)
			e.Unlock()
			clone := mem.CrashCloneRandom(rand.New(rand.NewPCG(seed, uint64(n))))
			after := script.New(slog.Default())
			if lerr := LoadFunctions(clone, dir, after); lerr != nil {
				t.Fatalf("seed %d, crash at operation %d: the libraries do not load: %v", seed, n, lerr)
			}
			got := libNames(after)
			old, both := []string{"one"}, []string{"one", "two"}
			if !reflect.DeepEqual(got, old) && !reflect.DeepEqual(got, both) {
				t.Fatalf("seed %d, crash at operation %d: libraries %v, want %v or %v", seed, n, got, old, both)
			}
			if err == nil {
				// The save got through without reaching operation n: it is durable.
				if !reflect.DeepEqual(got, both) {
					t.Fatalf("seed %d: a save that succeeded left %v", seed, got)
				}
				break
			}
		}
	}
}

// TestLibrariesPayload: the payload round-trips, a damaged one is refused as Redis refuses
// one, and a Redis dump is named as such.
func TestLibrariesPayload(t *testing.T) {
	e := script.New(slog.Default())
	e.Lock()
	code := "#!lua name=one\nredis.register_function('f1', function() return 1 end)"
	if _, err := e.LoadLibraryLocked(code, false); err != nil {
		t.Fatal(err)
	}
	e.Unlock()
	p := e.LibrariesPayload()
	codes, err := script.DecodeLibraries(p)
	if err != nil || !reflect.DeepEqual(codes, []string{code}) {
		t.Fatalf("round trip: %q %v", codes, err)
	}
	for i := range p {
		b := append([]byte(nil), p...)
		b[i] ^= 0x20
		if _, err := script.DecodeLibraries(b); err == nil {
			t.Fatalf("a flipped byte at %d was accepted", i)
		}
	}
	for n := range len(p) {
		if _, err := script.DecodeLibraries(p[:n]); err == nil {
			t.Fatalf("a payload cut to %d bytes was accepted", n)
		}
	}
	redisDump := append([]byte{0xf5, 0xc3}, []byte("#!lua name=x\n...\x0a\x00\x01\x02\x03\x04\x05\x06\x07\x08")...)
	if _, err := script.DecodeLibraries(redisDump); !errors.Is(err, script.ErrRedisDump) {
		t.Fatalf("a Redis dump: %v", err)
	}
}
