package script

import (
	"context"
	"log/slog"
	"testing"

	"github.com/lavikdb/lavik/pkg/resp"
)

type echoHost struct{}

func (echoHost) Call(args [][]byte, proto int) []byte {
	w := resp.NewWriter()
	w.SetProto(proto)
	w.Error("ERR nope")
	return w.Bytes()
}

func run(t *testing.T, e *Engine, body string) string {
	t.Helper()
	e.Lock()
	defer e.Unlock()
	s, err := e.LoadLocked([]byte(body))
	if err != nil {
		return err.Error()
	}
	ctx := e.Begin(RunInfo{})
	defer e.End()
	w := resp.NewWriter()
	e.RunLocked(ctx, s, nil, nil, echoHost{}, w)
	return string(w.Bytes())
}

// TestErrorLines checks the error texts against Redis 7.0.15's.
func TestErrorLines(t *testing.T) {
	e := New(slog.Default())
	_ = context.Background()
	for body, want := range map[string]string{
		"x = 1":                      "-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n",
		"return a":                   "-ERR user_script:1: Script attempted to access nonexistent global variable 'a' script: bbfcd1ececc90deec823f7fb730e4bfb2a4ba625, on @user_script:1.\r\n",
		"error('boom')":              "-ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.\r\n",
		"error({err='MY custom'})":   "-MY custom script: 784d3ae9e6566ecb57138d89d618d989007a9bc6, on @user_script:1.\r\n",
		"\nreturn redis.call('x')":   "",
		"return math.random(1,1000)": ":397\r\n",
	} {
		if got := run(t, e, body); want != "" && got != want {
			t.Errorf("%q: got %q want %q", body, got, want)
		} else if want == "" {
			t.Logf("%q: %q", body, got)
		}
	}
}
