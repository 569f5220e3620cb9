package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	datav1 "github.com/lavikdb/lavik/proto/lavik/data/v1"
	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

const statusHelp = `Calls DataAdmin.Status on every data node of --data at once (each call limited by --timeout)
and prints one row per node, in the order given. Without --data, the nodes are those lavik-meta's
topology names (--meta), each at the admin address it registered, by shard group.

   NODE      the node's id (nodes under meta), else the admin address asked
   ROLE      STANDALONE, PRIMARY or FOLLOWER; UNREACHABLE, TIMEOUT or ERROR when the call failed
             (the reason goes to stderr, and the exit status is 1, or 3 if every failure was a timeout)
   EPOCH     the highest epoch the node has seen (0 without meta)
   WRITABLE  whether it takes writes right now
   OFFSET    its replication offset (bytes of its replication history it holds)
   LAG       a follower: its primary's offset as it knows it minus its own, and the link's state;
             a node with followers: each follower's address, the node's offset minus the
             follower's acknowledged offset, and the link's state
   DATA      complete, or INCOMPLETE: a full resync emptied the node and has not finished (or,
             under meta, it has never completed one); such a node is never promoted, and a note
             below the table says why
   KEYS      live keys in all databases
   DISK      bytes the value log takes on disk
   VERSION   lavik-data's version

Then the meta section: "meta: not configured" without --meta; with --meta, lavik-meta's
members and leader (a stale read, so it answers without a quorum), and the shard groups as the
leader sees them: epoch, primary, and, when a group needs a primary and no follower is fit to be
one, why each is not.

With --json, one document with these stable fields (offsets and sizes in bytes, ages in ms):

   {"nodes": [{"address", "reachable", "error", "node_id", "role", "epoch", "writable",
               "replication_id", "replication_offset", "data_incomplete", "data_incomplete_reason",
               "keys", "disk_bytes", "version",
               "primary_link": {"primary_address", "state", "primary_offset", "lag_bytes",
                                "last_io_age_ms", "full_sync_bytes_received"},   (followers only)
               "followers": [{"address", "state", "acked_offset", "lag_bytes", "last_ack_age_ms"}]}],
    "meta": {"configured", "message", "error", "linearizable", "leader", "members":
             [{"id", "name", "peer_address", "client_address", "is_leader"}],
             "groups": [{"id", "epoch", "primary", "no_primary_reason"}]}}

A node with "reachable": false has only "address" and "error" filled in. Link states are
HANDSHAKE, FULL_SYNC, ONLINE (or UNSPECIFIED); "error" is empty when the call worked.`

func statusCommand(stdout io.Writer) *cli.Command {
	return withGlobals(&cli.Command{
		Name:        "status",
		Usage:       "show every data node's role, epoch, replication offset and lag, keys and disk use",
		UsageText:   "lavikctl [--meta host:port,...] status [--data host:port[,host:port...]] [--json] [--timeout 5s]",
		Description: statusHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "data nodes' admin addresses (lavik-data --admin-port), `host:port[,host:port...]`"},
		},
		Action: func(c *cli.Context) error {
			g, err := parseGlobals(c)
			if err != nil {
				return err
			}
			if err := noArgs(c); err != nil {
				return err
			}
			var addrs []string
			switch {
			case c.IsSet("data"):
				if addrs, err = parseAddrList("--data", c.String("data")); err != nil {
					return err
				}
			case len(g.Meta) > 0:
				if addrs, err = topologyAdminAddrs(c.Context, g); err != nil {
					return err
				}
			default:
				return usageErrorf("status needs --data host:port[,host:port...] (the data nodes' admin addresses) or --meta to find them")
			}
			return runStatus(c.Context, g, addrs, stdout)
		},
	})
}

// topologyAdminAddrs are the admin addresses of the data nodes meta's topology names (a stale
// read: status works without a quorum), primaries first within each group.
func topologyAdminAddrs(ctx context.Context, g globals) ([]string, error) {
	topo, err := getTopology(ctx, newMetaClient(g, io.Discard), g.Timeout, true)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, sg := range topo.ShardGroups {
		nodes := sg.Followers
		if sg.Primary != nil {
			nodes = append([]*metav1.NodeInfo{sg.Primary}, nodes...)
		}
		for _, n := range nodes {
			if n.AdminAddress == "" {
				return nil, failed(fmt.Errorf("node %s registered no admin address (start lavik-data with --admin-port), or give --data", n.NodeId))
			}
			addrs = append(addrs, n.AdminAddress)
		}
	}
	if len(addrs) == 0 {
		return nil, failed(errors.New("meta's topology has no data nodes yet: start lavik-data with --meta, or give --data"))
	}
	return addrs, nil
}

// statusDoc is status's result; its json tags are the documented --json fields (statusHelp).
type statusDoc struct {
	Nodes []nodeStatus `json:"nodes"`
	Meta  metaSection  `json:"meta"`
}

// nodeStatus is one data node's row. Only Address and Error are set when Reachable is false.
type nodeStatus struct {
	Address           string         `json:"address"`
	Reachable         bool           `json:"reachable"`
	Error             string         `json:"error"`
	NodeID            string         `json:"node_id"`
	Role              string         `json:"role"`
	Epoch             uint64         `json:"epoch"`
	Writable          bool           `json:"writable"`
	ReplicationID     string         `json:"replication_id"`
	ReplicationOffset uint64         `json:"replication_offset"`
	DataIncomplete    bool           `json:"data_incomplete"`
	IncompleteReason  string         `json:"data_incomplete_reason"`
	PrimaryLink       *primaryLink   `json:"primary_link,omitempty"`
	Followers         []followerLink `json:"followers"`
	Keys              uint64         `json:"keys"`
	DiskBytes         uint64         `json:"disk_bytes"`
	Version           string         `json:"version"`

	failure *exitError // why the call failed, for the exit status
}

type primaryLink struct {
	PrimaryAddress string `json:"primary_address"`
	State          string `json:"state"`
	PrimaryOffset  uint64 `json:"primary_offset"`
	// LagBytes is PrimaryOffset minus the follower's replication offset (0 if the follower is
	// ahead of what it last heard, which a primary's announcement in flight can cause).
	LagBytes              uint64 `json:"lag_bytes"`
	LastIOAgeMs           uint32 `json:"last_io_age_ms"`
	FullSyncBytesReceived uint64 `json:"full_sync_bytes_received"`
}

type followerLink struct {
	Address     string `json:"address"`
	State       string `json:"state"`
	AckedOffset uint64 `json:"acked_offset"`
	// LagBytes is the node's replication offset minus AckedOffset.
	LagBytes     uint64 `json:"lag_bytes"`
	LastAckAgeMs uint32 `json:"last_ack_age_ms"`
}

func runStatus(ctx context.Context, g globals, addrs []string, stdout io.Writer) error {
	doc := statusDoc{Nodes: make([]nodeStatus, len(addrs))}
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { doc.Nodes[i] = queryNode(ctx, a, g.Timeout) })
	}
	var metaErr *exitError
	wg.Go(func() { doc.Meta, metaErr = metaSummary(ctx, g) })
	wg.Wait()

	var failures []*exitError
	for _, n := range doc.Nodes {
		if n.failure != nil {
			failures = append(failures, n.failure)
		}
	}
	if metaErr != nil {
		failures = append(failures, metaErr)
	}
	if err := (printer{w: stdout, json: g.JSON}).print(doc, doc.tables); err != nil {
		return failed(err)
	}
	return combine(failures, fmt.Sprintf("%d of %d calls failed", len(failures), len(addrs)+min(len(g.Meta), 1)))
}

// combine folds the failures of one command's calls into its exit error: status 3 when every
// failure was a timeout, 1 otherwise; nil when there were none. header introduces a list.
func combine(failures []*exitError, header string) error {
	switch len(failures) {
	case 0:
		return nil
	case 1:
		return failures[0]
	}
	code := exitTimeout
	msgs := make([]string, len(failures))
	for i, f := range failures {
		if f.code != exitTimeout {
			code = exitFailed
		}
		msgs[i] = "  " + f.err.Error()
	}
	return &exitError{code: code, err: fmt.Errorf("%s:\n%s", header, strings.Join(msgs, "\n"))}
}

// queryNode calls Status on one node's admin address.
func queryNode(ctx context.Context, addr string, timeout time.Duration) nodeStatus {
	n := nodeStatus{Address: addr}
	st, err := nodeStatusCall(ctx, addr, timeout)
	if err != nil {
		n.failure = asExit(err)
		n.Error = n.failure.err.Error()
		return n
	}
	return nodeFromStatus(addr, st)
}

func asExit(err error) *exitError {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee
	}
	return &exitError{code: exitFailed, err: err}
}

// nodeStatusCall dials addr and calls Status once.
func nodeStatusCall(ctx context.Context, addr string, timeout time.Duration) (*datav1.StatusResponse, error) {
	c, err := dial(addr, dataPeer)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.status(ctx, timeout)
}

// status calls DataAdmin.Status within timeout.
func (c *conn) status(ctx context.Context, timeout time.Duration) (*datav1.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := datav1.NewDataAdminClient(c.cc).Status(ctx, &datav1.StatusRequest{})
	if err != nil {
		return nil, c.callError("Status", timeout, err)
	}
	return st, nil
}

// nodeFromStatus is the row of a node that answered.
func nodeFromStatus(addr string, st *datav1.StatusResponse) nodeStatus {
	n := nodeStatus{
		Address:           addr,
		Reachable:         true,
		NodeID:            st.NodeId,
		Role:              strings.TrimPrefix(st.Role.String(), "ROLE_"),
		Epoch:             st.Epoch,
		Writable:          st.Writable,
		ReplicationID:     st.ReplicationId,
		ReplicationOffset: st.ReplicationOffset,
		DataIncomplete:    st.DataIncomplete,
		IncompleteReason:  st.DataIncompleteReason,
		Followers:         []followerLink{},
		Keys:              st.KeyCount,
		DiskBytes:         st.DiskBytes,
		Version:           st.Version,
	}
	if l := st.PrimaryLink; l != nil {
		n.PrimaryLink = &primaryLink{
			PrimaryAddress:        l.PrimaryAddress,
			State:                 linkStateName(l.State),
			PrimaryOffset:         l.PrimaryOffset,
			LagBytes:              l.PrimaryOffset - min(l.PrimaryOffset, st.ReplicationOffset),
			LastIOAgeMs:           l.LastIoAgeMs,
			FullSyncBytesReceived: l.FullSyncBytesReceived,
		}
	}
	for _, f := range st.Followers {
		n.Followers = append(n.Followers, followerLink{
			Address:      f.Address,
			State:        linkStateName(f.State),
			AckedOffset:  f.AckedOffset,
			LagBytes:     st.ReplicationOffset - min(st.ReplicationOffset, f.AckedOffset),
			LastAckAgeMs: f.LastAckAgeMs,
		})
	}
	return n
}

func linkStateName(s datav1.LinkState) string { return strings.TrimPrefix(s.String(), "LINK_STATE_") }

// tables is the person's view of the document.
func (d statusDoc) tables() []table {
	t := table{columns: []string{"NODE", "ROLE", "EPOCH", "WRITABLE", "OFFSET", "LAG", "DATA", "KEYS", "DISK", "VERSION"}}
	for _, n := range d.Nodes {
		if !n.Reachable {
			t.rows = append(t.rows, []string{n.Address, failureRole(n.failure), "-", "-", "-", "-", "-", "-", "-", "-"})
			continue
		}
		name := n.NodeID
		if name == "" {
			name = n.Address
		}
		data := "complete"
		if n.DataIncomplete {
			data = "INCOMPLETE"
			t.notes = append(t.notes, fmt.Sprintf("%s: data incomplete, never promoted: %s", name, n.IncompleteReason))
		}
		t.rows = append(t.rows, []string{name, n.Role, strconv.FormatUint(n.Epoch, 10), yesNo(n.Writable),
			strconv.FormatUint(n.ReplicationOffset, 10), n.lagCell(), data, strconv.FormatUint(n.Keys, 10),
			humanBytes(n.DiskBytes), n.Version})
	}
	return append([]table{t}, d.Meta.tables()...)
}

func failureRole(e *exitError) string {
	switch {
	case e == nil:
		return "ERROR"
	case e.code == exitTimeout:
		return "TIMEOUT"
	case strings.HasPrefix(e.err.Error(), "cannot reach"):
		return "UNREACHABLE"
	}
	return "ERROR"
}

// lagCell is the LAG column: a follower's lag behind its primary, or a node's followers' lags.
func (n nodeStatus) lagCell() string {
	if l := n.PrimaryLink; l != nil {
		s := fmt.Sprintf("%d B %s", l.LagBytes, l.State)
		if l.FullSyncBytesReceived > 0 {
			s += fmt.Sprintf(" (%s received)", humanBytes(l.FullSyncBytesReceived))
		}
		return s
	}
	if len(n.Followers) == 0 {
		return "-"
	}
	parts := make([]string, len(n.Followers))
	for i, f := range n.Followers {
		parts[i] = fmt.Sprintf("%s %d B %s", f.Address, f.LagBytes, f.State)
	}
	return strings.Join(parts, "; ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
