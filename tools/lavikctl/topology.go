package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

const topologyHelp = `Calls Meta.GetTopology and prints every shard group: its epoch and hash slots, then its
nodes (primary first) with their role, health, addresses, replication offset and the age of
their last heartbeat. What nodes report (health, offset, heartbeat) only the meta leader knows:
asked of another member, those columns show "-".

A node whose data is incomplete (a full resync emptied it and has not finished, or it has never
completed one) is never promoted: its HEALTH shows SYNCING and a note below the table says why.
A group that needs a new primary and has no follower fit to be one says why each is not.

With --json: {"version", "linearizable", "applied_index", "heartbeats_known", "shard_groups": [{"id", "epoch",
"no_primary_reason", "slots": [{"start", "end"}], "nodes": [{"node_id", "data_address", "admin_address", "role",
"health", "health_detail", "data_incomplete", "replication_id", "replication_offset",
"last_heartbeat_unix_ms", "version"}]}]}
(nodes primary first; roles PRIMARY, FOLLOWER, UNSPECIFIED; health OK, LOADING, SYNCING,
DEGRADED, UNSPECIFIED).`

func topologyCommand(stdout, stderr io.Writer) *cli.Command {
	return withGlobals(&cli.Command{
		Name:        "topology",
		Usage:       "show lavik-meta's shard groups, their epochs, slots and nodes (needs --meta)",
		UsageText:   "lavikctl --meta host:port topology [--stale] [--json]",
		Description: topologyHelp,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stale", Usage: "answer from the member's applied state, without a quorum (may be behind)"},
		},
		Action: func(c *cli.Context) error {
			g, m, err := metaSetup(c, "topology", stderr)
			if err != nil {
				return err
			}
			if err := noArgs(c); err != nil {
				return err
			}
			topo, err := getTopology(c.Context, m, g.Timeout, c.Bool("stale"))
			if err != nil {
				return err
			}
			doc := topologyFromProto(topo)
			return printErr((printer{w: stdout, json: g.JSON}).print(doc, doc.tables))
		},
	})
}

func getTopology(ctx context.Context, m *metaClient, timeout time.Duration, stale bool) (*metav1.GetTopologyResponse, error) {
	var resp *metav1.GetTopologyResponse
	err := m.call(ctx, "GetTopology", timeout, func(ctx context.Context, mc metav1.MetaClient) (err error) {
		resp, err = mc.GetTopology(ctx, &metav1.GetTopologyRequest{Consistency: consistency(stale)})
		return err
	})
	return resp, err
}

// topologyDoc is topology's result; its json tags are the documented --json fields.
type topologyDoc struct {
	Version      uint64 `json:"version"`
	Linearizable bool   `json:"linearizable"`
	AppliedIndex uint64 `json:"applied_index"`
	// HeartbeatsKnown: the answer came from the leader, which knows what nodes report.
	HeartbeatsKnown bool         `json:"heartbeats_known"`
	ShardGroups     []shardGroup `json:"shard_groups"`

	now time.Time // for heartbeat ages in the table
}

type shardGroup struct {
	ID    string `json:"id"`
	Epoch uint64 `json:"epoch"`
	// NoPrimaryReason: the group needs a primary and no follower is fit (the leader's words).
	NoPrimaryReason string      `json:"no_primary_reason"`
	Slots           []slotRange `json:"slots"`
	Nodes           []topoNode  `json:"nodes"`
}

type slotRange struct {
	Start uint32 `json:"start"`
	End   uint32 `json:"end"`
}

type topoNode struct {
	NodeID              string `json:"node_id"`
	DataAddress         string `json:"data_address"`
	AdminAddress        string `json:"admin_address"`
	Role                string `json:"role"`
	Health              string `json:"health"`
	HealthDetail        string `json:"health_detail"`
	DataIncomplete      bool   `json:"data_incomplete"`
	ReplicationID       string `json:"replication_id"`
	ReplicationOffset   uint64 `json:"replication_offset"`
	LastHeartbeatUnixMs int64  `json:"last_heartbeat_unix_ms"`
	Version             string `json:"version"`
}

func topologyFromProto(t *metav1.GetTopologyResponse) topologyDoc {
	d := topologyDoc{Version: t.Version, Linearizable: t.Linearizable, AppliedIndex: t.AppliedIndex, HeartbeatsKnown: t.HeartbeatsKnown, ShardGroups: []shardGroup{}, now: time.Now()}
	for _, g := range t.ShardGroups {
		sg := shardGroup{ID: g.Id, Epoch: g.Epoch, NoPrimaryReason: g.NoPrimaryReason, Slots: []slotRange{}, Nodes: []topoNode{}}
		for _, r := range g.Slots {
			sg.Slots = append(sg.Slots, slotRange{Start: r.Start, End: r.End})
		}
		if g.Primary != nil {
			sg.Nodes = append(sg.Nodes, topoNodeFromProto(g.Primary))
		}
		for _, n := range g.Followers {
			sg.Nodes = append(sg.Nodes, topoNodeFromProto(n))
		}
		d.ShardGroups = append(d.ShardGroups, sg)
	}
	return d
}

func topoNodeFromProto(n *metav1.NodeInfo) topoNode {
	return topoNode{NodeID: n.NodeId, DataAddress: n.DataAddress, AdminAddress: n.AdminAddress,
		Role: strings.TrimPrefix(n.Role.String(), "ROLE_"), Health: strings.TrimPrefix(n.Health.String(), "HEALTH_"),
		HealthDetail: n.HealthDetail, DataIncomplete: n.DataIncomplete,
		ReplicationID: n.ReplicationId, ReplicationOffset: n.ReplicationOffset, LastHeartbeatUnixMs: n.LastHeartbeatUnixMs, Version: n.Version}
}

func (d topologyDoc) tables() []table {
	read := "linearizable"
	if !d.Linearizable {
		read = fmt.Sprintf("stale, applied index %d", d.AppliedIndex)
	}
	notes := []string{fmt.Sprintf("topology version %d (%s), %d shard groups", d.Version, read, len(d.ShardGroups))}
	if !d.HeartbeatsKnown {
		notes = append(notes, "this member does not lead: what the nodes report (health, offset, heartbeat) is known only to the leader (lavikctl meta list names it)")
	}
	out := []table{{notes: notes}}
	for _, g := range d.ShardGroups {
		t := table{title: fmt.Sprintf("shard group %s  epoch %d  slots %s", g.ID, g.Epoch, slotsString(g.Slots)),
			columns: []string{"NODE", "ROLE", "HEALTH", "DATA", "ADMIN", "OFFSET", "HEARTBEAT", "VERSION"}}
		switch {
		case g.NoPrimaryReason != "":
			t.notes = append(t.notes, "no writable primary, and no follower is fit to be promoted: "+g.NoPrimaryReason)
		case len(g.Nodes) == 0 || g.Nodes[0].Role != "PRIMARY":
			t.notes = append(t.notes, "no primary (a failover may be in progress)")
		}
		for _, n := range g.Nodes {
			health, offset, age := n.Health, strconv.FormatUint(n.ReplicationOffset, 10), heartbeatAge(d.now, n.LastHeartbeatUnixMs)
			if !d.HeartbeatsKnown {
				health, offset, age = "-", "-", "-"
			}
			t.rows = append(t.rows, []string{n.NodeID, n.Role, health, n.DataAddress, n.AdminAddress, offset, age, n.Version})
			if d.HeartbeatsKnown && n.HealthDetail != "" {
				t.notes = append(t.notes, n.NodeID+": "+n.HealthDetail)
			}
		}
		out = append(out, t)
	}
	return out
}

func slotsString(rs []slotRange) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.Start == r.End {
			parts[i] = strconv.FormatUint(uint64(r.Start), 10)
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r.Start, r.End)
		}
	}
	return strings.Join(parts, ",")
}

func heartbeatAge(now time.Time, unixMs int64) string {
	if unixMs == 0 {
		return "never"
	}
	return now.Sub(time.UnixMilli(unixMs)).Round(time.Millisecond).String() + " ago"
}
