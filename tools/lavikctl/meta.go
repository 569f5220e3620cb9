package main

import (
	"context"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

// metaCommand is `lavikctl meta add|remove|list`: lavik-meta's own raft membership.
func metaCommand(stdout, stderr io.Writer) *cli.Command {
	return withGlobals(&cli.Command{
		Name:  "meta",
		Usage: "list, add and remove lavik-meta members (needs --meta)",
		Subcommands: []*cli.Command{
			withGlobals(&cli.Command{
				Name:      "list",
				Usage:     "list lavik-meta's members and its leader",
				UsageText: "lavikctl --meta host:port meta list [--stale] [--json]",
				Description: "Calls Meta.ListMembers. With --json: {\"linearizable\", \"leader\", \"members\": [{\"id\", \"name\",\n" +
					"\"peer_address\", \"client_address\", \"is_leader\"}]}.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "stale", Usage: "answer from the member's applied state, without a quorum (may be behind)"},
				},
				Action: func(c *cli.Context) error {
					g, m, err := metaSetup(c, "meta list", stderr)
					if err != nil {
						return err
					}
					if err := noArgs(c); err != nil {
						return err
					}
					var resp *metav1.ListMembersResponse
					err = m.call(c.Context, "ListMembers", g.Timeout, func(ctx context.Context, mc metav1.MetaClient) (err error) {
						resp, err = mc.ListMembers(ctx, &metav1.ListMembersRequest{Consistency: consistency(c.Bool("stale"))})
						return err
					})
					if err != nil {
						return err
					}
					s := metaSection{Configured: true, Linearizable: resp.Linearizable, Members: membersDesc(resp.Members)}
					for _, mb := range s.Members {
						if mb.IsLeader {
							s.Leader = mb.Name
						}
					}
					doc := struct {
						Linearizable bool         `json:"linearizable"`
						Leader       string       `json:"leader"`
						Members      []memberDesc `json:"members"`
					}{s.Linearizable, s.Leader, s.Members}
					return printErr((printer{w: stdout, json: g.JSON}).print(doc, s.tables))
				},
			}),
			withGlobals(&cli.Command{
				Name:      "add",
				Usage:     "add a lavik-meta member (a raft configuration change); start it afterwards with the id printed and --join",
				UsageText: "lavikctl --meta host:port meta add --name meta-4 --peer 10.0.0.4:7481 --client 10.0.0.4:7480",
				Description: "Calls Meta.AddMember, which returns once the current members have committed the change.\n" +
					"With --json: {\"member\": {...}, \"members\": [...]} (fields as in meta list).",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Usage: "the new member's name (e.g. meta-4)"},
					&cli.StringFlag{Name: "peer", Usage: "`host:port` where it will serve raft to the other members"},
					&cli.StringFlag{Name: "client", Usage: "`host:port` where it will serve the Meta service"},
				},
				Action: func(c *cli.Context) error {
					g, m, err := metaSetup(c, "meta add", stderr)
					if err != nil {
						return err
					}
					if err := noArgs(c); err != nil {
						return err
					}
					req, err := parseAddMember(c.String("name"), c.String("peer"), c.String("client"))
					if err != nil {
						return err
					}
					var resp *metav1.AddMemberResponse
					err = m.call(c.Context, "AddMember", g.Timeout, func(ctx context.Context, mc metav1.MetaClient) (err error) {
						resp, err = mc.AddMember(ctx, req)
						return err
					})
					if err != nil {
						return err
					}
					added := membersDesc([]*metav1.Member{resp.Member})
					doc := struct {
						Member  memberDesc   `json:"member"`
						Members []memberDesc `json:"members"`
					}{added[0], membersDesc(resp.Members)}
					return printErr((printer{w: stdout, json: g.JSON}).print(doc, func() []table {
						t := membersTable(doc.Members)
						t.title = "added member " + strconv.FormatUint(doc.Member.ID, 10) + " (" + doc.Member.Name + "); start it with this id and --join. Members now:"
						return []table{t}
					}))
				},
			}),
			withGlobals(&cli.Command{
				Name:        "remove",
				Usage:       "remove a lavik-meta member by id (a raft configuration change)",
				UsageText:   "lavikctl --meta host:port meta remove [--json] ID",
				Description: "Calls Meta.RemoveMember. With --json: {\"members\": [...]} (fields as in meta list).",
				Action: func(c *cli.Context) error {
					g, m, err := metaSetup(c, "meta remove", stderr)
					if err != nil {
						return err
					}
					id, err := parseMemberID(c.Args().Slice())
					if err != nil {
						return err
					}
					var resp *metav1.RemoveMemberResponse
					err = m.call(c.Context, "RemoveMember", g.Timeout, func(ctx context.Context, mc metav1.MetaClient) (err error) {
						resp, err = mc.RemoveMember(ctx, &metav1.RemoveMemberRequest{Id: id})
						return err
					})
					if err != nil {
						return err
					}
					doc := struct {
						Members []memberDesc `json:"members"`
					}{membersDesc(resp.Members)}
					return printErr((printer{w: stdout, json: g.JSON}).print(doc, func() []table {
						t := membersTable(doc.Members)
						t.title = "removed member " + strconv.FormatUint(id, 10) + ". Members now:"
						return []table{t}
					}))
				},
			}),
		},
	})
}

// metaSetup parses the global flags of a command that needs meta and returns its client.
func metaSetup(c *cli.Context, command string, stderr io.Writer) (globals, *metaClient, error) {
	g, err := parseGlobals(c)
	if err != nil {
		return g, nil, err
	}
	if err := needMeta(command, g); err != nil {
		return g, nil, err
	}
	return g, newMetaClient(g, stderr), nil
}

func parseAddMember(name, peer, client string) (*metav1.AddMemberRequest, error) {
	if name == "" || peer == "" || client == "" {
		return nil, usageErrorf("meta add needs --name, --peer host:port and --client host:port")
	}
	if err := checkAddr(peer); err != nil {
		return nil, usageErrorf("--peer: %v", err)
	}
	if err := checkAddr(client); err != nil {
		return nil, usageErrorf("--client: %v", err)
	}
	if peer == client {
		return nil, usageErrorf("--peer and --client are both %s: raft and the Meta service need a port each", peer)
	}
	return &metav1.AddMemberRequest{Name: name, PeerAddress: peer, ClientAddress: client}, nil
}

func parseMemberID(args []string) (uint64, error) {
	if err := flagsFirst("meta remove", args); err != nil {
		return 0, err
	}
	if len(args) != 1 {
		return 0, usageErrorf("meta remove takes one member id (see lavikctl meta list), got %d arguments", len(args))
	}
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil || id == 0 {
		return 0, usageErrorf("meta remove: member id %q: want a positive integer (see lavikctl meta list)", args[0])
	}
	return id, nil
}

func consistency(stale bool) metav1.ReadConsistency {
	if stale {
		return metav1.ReadConsistency_READ_CONSISTENCY_STALE
	}
	return metav1.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE
}

// printErr wraps a failure to write the output (a closed pipe) as an operation failure.
func printErr(err error) error {
	if err != nil {
		return failed(err)
	}
	return nil
}
