package test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// TestReplShipBeforeReply: a write's bytes are on their way to an online follower no later than
// its reply is on its way to the client, as Redis fills its replicas' buffers before it writes
// replies. A bare follower (PSYNC on a raw connection) watches the stream while a client writes;
// the moment the client has a write's reply, the primary is killed with SIGKILL, and what the
// follower then reads until the connection ends must hold the write. A primary that shipped the
// stream on its own time, after the reply, would let a failover lose writes acknowledged
// without WAIT.
func TestReplShipBeforeReply(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("Lavik's ordering (Redis's is what it follows; see make bench-failover)")
	}
	for trial := 0; trial < 8; trial++ {
		p := replNode(t)
		fc := p.Conn()
		fc.SetDeadline(time.Now().Add(replSyncWait))
		br := bufio.NewReader(fc)
		for _, c := range []string{"PING", "REPLCONF listening-port 1", "REPLCONF capa eof capa psync2", "PSYNC ? -1"} {
			fmt.Fprintf(fc, "%s\r\n", c)
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if strings.HasPrefix(line, "-") {
				t.Fatalf("%s: %s", c, line)
			}
		}
		pc := p.Client()
		ctx := context.Background()
		harness.Eventually(t, replSyncWait, "the bare follower is online", func() bool {
			info, err := pc.Info(ctx, "replication").Result()
			return err == nil && strings.Contains(info, "state=online")
		})
		// The follower reads everything from here on, concurrently, until the primary dies.
		got := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(br)
			got <- b
		}()
		for i := 0; i < 100; i++ { // the link carries writes already
			if err := pc.Set(ctx, fmt.Sprintf("warm:%d:%d", trial, i), "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		key := fmt.Sprintf("acked:%d", trial)
		if err := pc.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		p.Kill()
		stream := <-got
		if !bytes.Contains(stream, []byte(key)) {
			t.Fatalf("trial %d: SET %s was acknowledged, then the primary was killed; the follower got %d bytes of stream without it", trial, key, len(stream))
		}
	}
}
