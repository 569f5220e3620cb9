package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

const promoteHelp = `Calls Meta.Promote: meta makes NODE (a follower) the primary of its shard group at a higher
epoch. With the current primary alive it is a switchover: meta withholds the primary's lease,
so it stops taking writes at its next heartbeat, waits for it to report that (or, if it is
unreachable, for its lease to run out), waits up to --catch-up-timeout for NODE to reach the
primary's final offset, then commits the new epoch. If NODE does not catch up in time, nothing changes
(exit status 3) unless --force, which switches anyway and loses the writes NODE lacks (the
result says how many bytes).

Without NODE, --shard-group is needed and meta picks its most advanced healthy follower.
Without --shard-group, NODE's group is looked up in meta's topology first. The call may take
--catch-up-timeout plus --timeout.

It prints how long writes were paused: from the old primary's stop to the new epoch's commit.

With --json: {"shard_group", "primary_node_id", "epoch", "caught_up", "lag_bytes",
"writes_paused_ms"}.`

func promoteCommand(stdout, stderr io.Writer) *cli.Command {
	return withGlobals(&cli.Command{
		Name:        "promote",
		Usage:       "make a follower the primary of its shard group (switchover or failover; needs --meta); flags before NODE",
		UsageText:   "lavikctl --meta host:port promote [--shard-group G] [--catch-up-timeout 10s] [--force] [--expected-epoch N] [NODE]",
		Description: promoteHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "shard-group", Usage: "the shard group (default: NODE's, from meta's topology)"},
			&cli.DurationFlag{Name: "catch-up-timeout", Value: 10 * time.Second, Usage: "how long meta waits for NODE to reach the primary's offset (0: switch only if it has already)"},
			&cli.BoolFlag{Name: "force", Usage: "switch even if NODE has not caught up: acknowledged writes it lacks are lost"},
			&cli.Uint64Flag{Name: "expected-epoch", Usage: "promote only if the group is still at this epoch"},
		},
		Action: func(c *cli.Context) error {
			g, m, err := metaSetup(c, "promote", stderr)
			if err != nil {
				return err
			}
			req, err := parsePromote(c.Args().Slice(), c.String("shard-group"), c.Duration("catch-up-timeout"), c.Bool("force"), c.Uint64("expected-epoch"))
			if err != nil {
				return err
			}
			if req.ShardGroup == "" {
				topo, err := getTopology(c.Context, m, g.Timeout, false)
				if err != nil {
					return err
				}
				if req.ShardGroup, err = groupOf(topo, req.TargetNodeId); err != nil {
					return err
				}
			}
			var resp *metav1.PromoteResponse
			err = m.call(c.Context, "Promote", g.Timeout+c.Duration("catch-up-timeout"), func(ctx context.Context, mc metav1.MetaClient) (err error) {
				resp, err = mc.Promote(ctx, req)
				return err
			})
			if err != nil {
				return err
			}
			doc := struct {
				ShardGroup    string `json:"shard_group"`
				PrimaryNodeID string `json:"primary_node_id"`
				Epoch         uint64 `json:"epoch"`
				CaughtUp      bool   `json:"caught_up"`
				LagBytes      uint64 `json:"lag_bytes"`
				PausedMs      uint32 `json:"writes_paused_ms"`
			}{req.ShardGroup, resp.PrimaryNodeId, resp.Epoch, resp.CaughtUp, resp.LagBytes, resp.WritesPausedMs}
			return printErr((printer{w: stdout, json: g.JSON}).print(doc, func() []table {
				s := fmt.Sprintf("%s is the primary of shard group %s at epoch %d; writes paused for %d ms (it takes them from its next heartbeat)",
					doc.PrimaryNodeID, doc.ShardGroup, doc.Epoch, doc.PausedMs)
				if !doc.CaughtUp {
					s += fmt.Sprintf("; it had not caught up: %d bytes of acknowledged writes are lost", doc.LagBytes)
				}
				return []table{{notes: []string{s}}}
			}))
		},
	})
}

// parsePromote checks promote's arguments: NODE or --shard-group, or both.
func parsePromote(args []string, group string, catchUp time.Duration, force bool, epoch uint64) (*metav1.PromoteRequest, error) {
	if err := flagsFirst("promote", args); err != nil {
		return nil, err
	}
	if len(args) > 1 {
		return nil, usageErrorf("promote takes at most one NODE, got %q", args)
	}
	req := &metav1.PromoteRequest{ShardGroup: group, Force: force, ExpectedEpoch: epoch}
	if len(args) == 1 {
		req.TargetNodeId = args[0]
	}
	if req.TargetNodeId == "" && req.ShardGroup == "" {
		return nil, usageErrorf("promote needs a NODE to promote, or --shard-group for meta to choose one")
	}
	if catchUp < 0 || catchUp.Milliseconds() > 1<<32-1 {
		return nil, usageErrorf("--catch-up-timeout %v: want 0 or a positive duration", catchUp)
	}
	req.CatchUpTimeoutMs = uint32(catchUp.Milliseconds())
	return req, nil
}

// groupOf finds the shard group node belongs to in topo.
func groupOf(topo *metav1.GetTopologyResponse, node string) (string, error) {
	for _, g := range topo.ShardGroups {
		if g.Primary != nil && g.Primary.NodeId == node {
			return g.Id, nil
		}
		for _, f := range g.Followers {
			if f.NodeId == node {
				return g.Id, nil
			}
		}
	}
	return "", failed(fmt.Errorf("node %q is in no shard group of meta's topology: see lavikctl topology", node))
}
