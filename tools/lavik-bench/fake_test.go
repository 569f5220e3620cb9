package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is a tiny RESP server keeping strings in a map, with ways to misbehave: the
// generator must notice each of them however fast the server answers.
type fakeServer struct {
	ln   net.Listener
	mu   sync.Mutex
	data map[string][]byte
	gets atomic.Int64

	corruptEvery int64 // flip one byte of every nth GET reply, past the header
	otherKey     bool  // answer GET with the value of a neighbouring key
	dropSets     bool  // acknowledge SET without storing
}

func startFake(t *testing.T, configure func(*fakeServer)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, data: map[string][]byte{}}
	if configure != nil {
		configure(f)
	}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				f.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) serve(c net.Conn) {
	r := newRespReader(c)
	w := bufio.NewWriter(c)
	for {
		req, err := r.readReply()
		if err != nil || req.kind != '*' || len(req.elems) == 0 {
			return
		}
		args := req.elems
		switch strings.ToUpper(args[0].str) {
		case "PING":
			w.WriteString("+PONG\r\n")
		case "SET":
			if !f.dropSets {
				f.mu.Lock()
				f.data[args[1].str] = []byte(args[2].str)
				f.mu.Unlock()
			}
			w.WriteString("+OK\r\n")
		case "GET":
			key := args[1].str
			if f.otherKey {
				n, _ := strconv.Atoi(key[4:])
				key = keyString(key[:4], n^1)
			}
			f.mu.Lock()
			v, ok := f.data[key]
			v = append([]byte(nil), v...)
			f.mu.Unlock()
			if !ok {
				w.WriteString("$-1\r\n")
				break
			}
			if n := f.gets.Add(1); f.corruptEvery > 0 && n%f.corruptEvery == 0 {
				v[len(v)-1] ^= 0x20
			}
			w.Write(appendBulkHeader(nil, len(v)))
			w.Write(v)
			w.WriteString("\r\n")
		case "DBSIZE":
			f.mu.Lock()
			n := len(f.data)
			f.mu.Unlock()
			w.WriteString(":" + strconv.Itoa(n) + "\r\n")
		default:
			w.WriteString("-ERR unknown command '" + args[0].str + "', with args beginning with:\r\n")
		}
		if r.br.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// runCLI runs lavik-bench in-process and returns its exit status, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	code := runMain(context.Background(), append([]string{"lavik-bench"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func smallRun(addr string, extra ...string) []string {
	return append([]string{"run", "--addr", addr, "--keys", "300", "--duration", "300ms", "--warmup", "0s",
		"--conns", "3", "--pipeline", "4", "--load-conns", "2", "--no-progress"}, extra...)
}

func TestFakeServerHonest(t *testing.T) {
	f := startFake(t, nil)
	code, out, errOut := runCLI(t, smallRun(f.addr(), "--workload", "mixed", "--verify-sample", "1")...)
	if code != exitOK || !strings.Contains(out, "result: OK") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestCorruptValueFailsRun: a server that returns a wrong byte now and then must make the run
// fail, with the errors counted and a non-zero exit status.
func TestCorruptValueFailsRun(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.corruptEvery = 50 })
	code, out, errOut := runCLI(t, smallRun(f.addr(), "--verify-sample", "1", "--json", "-")...)
	if code != exitErrors {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitErrors, out, errOut)
	}
	var rep struct {
		Result  string
		Errors  map[string]int64
		Results []RunResult
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Result != "ERRORS" || rep.Errors["wrong-value"] == 0 {
		t.Errorf("result %s, errors %v", rep.Result, rep.Errors)
	}
	if !strings.Contains(errOut, "result: ERRORS") || !strings.Contains(errOut, "bytes differ") {
		t.Errorf("summary does not say ERRORS:\n%s", errOut)
	}
}

func TestWrongKeyFailsRunWithoutSampling(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.otherKey = true })
	code, out, _ := runCLI(t, smallRun(f.addr(), "--verify-sample", "0")...)
	if code != exitErrors || !strings.Contains(out, "wrong-value") || !strings.Contains(out, "does not start with its key") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestDroppedWritesFailLoad(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.dropSets = true })
	code, out, errOut := runCLI(t, smallRun(f.addr())...)
	if code != exitErrors || !strings.Contains(errOut, "holds 0 keys after 300 were written") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestMissingValuesFailRun(t *testing.T) {
	f := startFake(t, nil)
	// Nothing loaded, but the run is told the data is there.
	code, out, _ := runCLI(t, smallRun(f.addr(), "--load=false")...)
	if code != exitErrors || !strings.Contains(out, "missing") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestUnsupportedCommandIsReported(t *testing.T) {
	f := startFake(t, nil)
	code, out, errOut := runCLI(t, smallRun(f.addr(), "--workload", "ycsb-a")...)
	if code != exitUnsupported || !strings.Contains(out, "result: UNSUPPORTED") || !strings.Contains(out, "HSET") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestUsageErrorExitStatus(t *testing.T) {
	code, _, errOut := runCLI(t, "run", "--value-min", "5000", "--value-max", "10")
	if code != exitUsage || !strings.Contains(errOut, "--value-min 5000 is larger than --value-max 10") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, _ := runCLI(t, "run", "--bogus"); code != exitUsage {
		t.Fatalf("unknown flag: exit %d", code)
	}
}

// TestLoadRange grows a dataset in two ranges: the second starts where the first ended, the
// first keys stay readable, and DBSIZE must cover everything below the range's end.
func TestLoadRange(t *testing.T) {
	f := startFake(t, nil)
	ks := newKeyspace(stringPrefix, kindString, 500)
	ks.Value = ValueSpec{Min: 64, Max: 64}
	p := loadParams{System: "fake", Addr: f.addr(), Conns: 3, Pipeline: 7, Progress: io.Discard, Timeout: 5 * time.Second}
	lr, err := loadRange(context.Background(), p, ks, 0, 120)
	if err != nil || lr.First != 0 || lr.Keys != 120 || lr.DBSize != 120 || lr.Bytes != 120*64 || ks.Loaded {
		t.Fatalf("first range: %+v, %v, loaded %v", lr, err, ks.Loaded)
	}
	lr, err = loadRange(context.Background(), p, ks, 120, 500)
	if err != nil || lr.First != 120 || lr.Keys != 380 || lr.DBSize != 500 || !ks.Loaded {
		t.Fatalf("second range: %+v, %v, loaded %v", lr, err, ks.Loaded)
	}
	if !strings.Contains(lr.String(), "380 keys (120 to 499)") {
		t.Errorf("summary %q", lr)
	}
	f.mu.Lock()
	n := len(f.data)
	f.mu.Unlock()
	if n != 500 {
		t.Errorf("server holds %d keys", n)
	}
	if n, err := verifySample(f.addr(), ks, 500, 1); err != nil || n != 500 {
		t.Errorf("verify: %d, %v", n, err)
	}
	// On an empty server, a range whose lower keys were never written leaves DBSIZE short.
	p.Addr = startFake(t, nil).addr()
	gap := newKeyspace(stringPrefix, kindString, 100)
	gap.Value = ks.Value
	if _, err := loadRange(context.Background(), p, gap, 50, 100); err == nil ||
		!strings.Contains(err.Error(), "holds 50 keys after 100 were written") {
		t.Errorf("gap below the range: %v", err)
	}
	if _, err := loadRange(context.Background(), p, ks, 400, 600); err == nil {
		t.Error("range past the keyspace accepted")
	}
}
