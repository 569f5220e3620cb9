package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	datav1 "github.com/lavikdb/lavik/proto/lavik/data/v1"
)

func TestTableRender(t *testing.T) {
	tb := table{title: "T", columns: []string{"A", "LONGER", "C"},
		rows:  [][]string{{"xyz", "1", ""}, {"é", "22", "last"}, {"short"}},
		notes: []string{"note"}}
	var b bytes.Buffer
	if err := tb.render(&b); err != nil {
		t.Fatal(err)
	}
	want := "T\n" +
		"A      LONGER  C\n" +
		"xyz    1\n" +
		"é      22      last\n" +
		"short\n" +
		"note\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 1 << 62: "4.0 EiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// sampleStatus is a primary with a lagging follower, the follower, and an unreachable node.
func sampleStatus() statusDoc {
	p := nodeFromStatus("10.0.0.1:7000", &datav1.StatusResponse{Role: commonv1.Role_ROLE_STANDALONE, Writable: true,
		ReplicationId: "r1", ReplicationOffset: 1000, KeyCount: 5, DiskBytes: 2048, Version: "0.1.0",
		Followers: []*datav1.FollowerLink{{Address: "10.0.0.2:6379", State: datav1.LinkState_LINK_STATE_ONLINE, AckedOffset: 900}}})
	f := nodeFromStatus("10.0.0.2:7000", &datav1.StatusResponse{NodeId: "data-2", Role: commonv1.Role_ROLE_FOLLOWER, Epoch: 3,
		ReplicationId: "r1", ReplicationOffset: 900, KeyCount: 5, DiskBytes: 1 << 20, Version: "0.1.0",
		PrimaryLink: &datav1.PrimaryLink{PrimaryAddress: "10.0.0.1:6379", State: datav1.LinkState_LINK_STATE_FULL_SYNC,
			PrimaryOffset: 1000, FullSyncBytesReceived: 3 << 20},
		DataIncomplete: true, DataIncompleteReason: "full resync from 10.0.0.1:6379 not finished"})
	down := nodeStatus{Address: "10.0.0.3:7000", failure: &exitError{code: exitFailed, err: errString("cannot reach data node 10.0.0.3:7000 (connection refused): x")}}
	down.Error = down.failure.err.Error()
	slow := nodeStatus{Address: "10.0.0.4:7000", failure: &exitError{code: exitTimeout, err: errString("did not answer")}}
	return statusDoc{Nodes: []nodeStatus{p, f, down, slow}, Meta: metaSection{Message: "meta: not configured", Members: []memberDesc{}}}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestStatusTable(t *testing.T) {
	var b bytes.Buffer
	doc := sampleStatus()
	if err := (printer{w: &b}).print(doc, doc.tables); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NODE           ROLE         EPOCH  WRITABLE  OFFSET  LAG                                 DATA        KEYS  DISK     VERSION\n" +
		"10.0.0.1:7000  STANDALONE   0      yes       1000    10.0.0.2:6379 100 B ONLINE          complete    5     2.0 KiB  0.1.0\n" +
		"data-2         FOLLOWER     3      no        900     100 B FULL_SYNC (3.0 MiB received)  INCOMPLETE  5     1.0 MiB  0.1.0\n" +
		"10.0.0.3:7000  UNREACHABLE  -      -         -       -                                   -           -     -        -\n" +
		"10.0.0.4:7000  TIMEOUT      -      -         -       -                                   -           -     -        -\n" +
		"data-2: data incomplete, never promoted: full resync from 10.0.0.1:6379 not finished\n" +
		"\n" +
		"meta: not configured\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestStatusJSONFields pins the --json field names statusHelp documents: scripts depend on them.
func TestStatusJSONFields(t *testing.T) {
	var b bytes.Buffer
	doc := sampleStatus()
	if err := (printer{w: &b, json: true}).print(doc, doc.tables); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Nodes []map[string]json.RawMessage `json:"nodes"`
		Meta  map[string]json.RawMessage   `json:"meta"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	keys := func(m map[string]json.RawMessage) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	if k := keys(got.Nodes[0]); k != "address,data_incomplete,data_incomplete_reason,disk_bytes,epoch,error,followers,keys,node_id,reachable,replication_id,replication_offset,role,version,writable" {
		t.Errorf("primary's fields: %s", k)
	}
	if k := keys(got.Nodes[1]); !strings.Contains(k, "primary_link") {
		t.Errorf("follower's fields: %s", k)
	}
	var link map[string]json.RawMessage
	json.Unmarshal(got.Nodes[1]["primary_link"], &link)
	if k := keys(link); k != "full_sync_bytes_received,lag_bytes,last_io_age_ms,primary_address,primary_offset,state" {
		t.Errorf("primary_link's fields: %s", k)
	}
	var fl []map[string]json.RawMessage
	json.Unmarshal(got.Nodes[0]["followers"], &fl)
	if k := keys(fl[0]); k != "acked_offset,address,lag_bytes,last_ack_age_ms,state" {
		t.Errorf("followers' fields: %s", k)
	}
	if string(fl[0]["lag_bytes"]) != "100" || string(got.Nodes[0]["role"]) != `"STANDALONE"` {
		t.Errorf("primary: %s", b.String())
	}
	if string(got.Nodes[2]["reachable"]) != "false" || !strings.Contains(string(got.Nodes[2]["error"]), "connection refused") {
		t.Errorf("unreachable node: %s", b.String())
	}
	if k := keys(got.Meta); k != "configured,leader,linearizable,members,message" || string(got.Meta["message"]) != `"meta: not configured"` {
		t.Errorf("meta: %s", k)
	}
}

// TestCombine: the exit status of several failures is 3 only when all of them are timeouts.
func TestCombine(t *testing.T) {
	to := &exitError{code: exitTimeout, err: errString("slow")}
	bad := &exitError{code: exitFailed, err: errString("down")}
	if combine(nil, "x") != nil {
		t.Fatal("no failures is no error")
	}
	if e := asExit(combine([]*exitError{to, to}, "x")); e.code != exitTimeout {
		t.Fatalf("two timeouts: %d", e.code)
	}
	if e := asExit(combine([]*exitError{to, bad}, "x")); e.code != exitFailed || !strings.Contains(e.Error(), "slow") || !strings.Contains(e.Error(), "down") {
		t.Fatalf("mixed: %d %v", e.code, e)
	}
}
