package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	datav1 "github.com/lavikdb/lavik/proto/lavik/data/v1"
)

const rebuildHelp = `Calls DataAdmin.Rebuild on the follower at --data (its admin address): it drops its data and
copies everything again from --primary (the primary's RESP address, host:port), switching to
that primary if it followed another. A primary or standalone node refuses (its data is the
authoritative copy: exit status 1), as does a node whose epoch is not --expected-epoch.

Under lavik-meta the node takes a rebuild only at its current epoch and only from the primary
meta made it follow, so that a rebuild cannot race a failover: without --expected-epoch,
lavikctl passes the epoch the node reported just before (if a failover comes in between, the
node refuses; look at lavikctl status and ask again). While the copy runs the node's data is
incomplete and meta will not promote it; if its primary dies meanwhile the group waits for the
primary to come back rather than lose data.

Then, unless --no-wait, it polls Status every 200 ms and shows the bytes of the full sync
received so far (a spinner on a terminal; on anything else a plain line at most once a second,
on stderr), until the follower's link is ONLINE and its offset has reached its primary's, and
prints how long it took. The byte count is the largest one seen while polling: a sync shorter
than a poll shows less than it moved. The rebuild goes on in the node if lavikctl stops
waiting (Ctrl-C, --wait-timeout): watch it with lavikctl status.

With --json: {"data", "primary", "already_running", "waited", "done", "seconds",
"full_sync_bytes_received", "replication_offset", "keys"}.`

// pollInterval is how often rebuild asks the follower how far it got.
const pollInterval = 200 * time.Millisecond

func rebuildCommand(stdout, stderr io.Writer) *cli.Command {
	return withGlobals(&cli.Command{
		Name:        "rebuild",
		Usage:       "resync a follower from a primary from scratch, and wait until it is back in step",
		UsageText:   "lavikctl rebuild --data host:port --primary host:port [--expected-epoch N] [--no-wait] [--wait-timeout 0]",
		Description: rebuildHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "the follower's admin address (lavik-data --admin-port), `host:port`"},
			&cli.StringFlag{Name: "primary", Usage: "the primary's RESP address, `host:port`"},
			&cli.Uint64Flag{Name: "expected-epoch", Usage: "rebuild only if the node is at this epoch (0: the epoch it reports now)"},
			&cli.BoolFlag{Name: "no-wait", Usage: "return once the rebuild has started"},
			&cli.DurationFlag{Name: "wait-timeout", Usage: "stop waiting after this long, with exit status 3 (0: wait until done)"},
		},
		Action: func(c *cli.Context) error {
			g, err := parseGlobals(c)
			if err != nil {
				return err
			}
			o, err := parseRebuild(c)
			if err != nil {
				return err
			}
			return runRebuild(c.Context, g, o, stdout, newProgress(stderr, isTerminal(stderr)))
		},
	})
}

// rebuildOpts are rebuild's parsed flags.
type rebuildOpts struct {
	Data, Primary string
	ExpectedEpoch uint64
	NoWait        bool
	WaitTimeout   time.Duration // 0: no limit
}

func parseRebuild(c *cli.Context) (rebuildOpts, error) {
	if err := noArgs(c); err != nil {
		return rebuildOpts{}, err
	}
	o := rebuildOpts{Data: c.String("data"), Primary: c.String("primary"), ExpectedEpoch: c.Uint64("expected-epoch"),
		NoWait: c.Bool("no-wait"), WaitTimeout: c.Duration("wait-timeout")}
	if o.Data == "" || o.Primary == "" {
		return o, usageErrorf("rebuild needs --data (the follower's admin address) and --primary (the primary's RESP address)")
	}
	if err := checkAddr(o.Data); err != nil {
		return o, usageErrorf("--data: %v", err)
	}
	if err := checkAddr(o.Primary); err != nil {
		return o, usageErrorf("--primary: %v", err)
	}
	if o.WaitTimeout < 0 {
		return o, usageErrorf("--wait-timeout %v: want 0 (no limit) or a positive duration", o.WaitTimeout)
	}
	if o.NoWait && o.WaitTimeout > 0 {
		return o, usageErrorf("--no-wait and --wait-timeout %v conflict: --no-wait does not wait at all", o.WaitTimeout)
	}
	return o, nil
}

// rebuildDoc is rebuild's result; its json tags are the documented --json fields.
type rebuildDoc struct {
	Data                  string  `json:"data"`
	Primary               string  `json:"primary"`
	AlreadyRunning        bool    `json:"already_running"`
	Waited                bool    `json:"waited"`
	Done                  bool    `json:"done"`
	Seconds               float64 `json:"seconds"`
	FullSyncBytesReceived uint64  `json:"full_sync_bytes_received"`
	ReplicationOffset     uint64  `json:"replication_offset"`
	Keys                  uint64  `json:"keys"`
}

func (d rebuildDoc) tables() []table {
	switch {
	case !d.Waited && d.AlreadyRunning:
		return []table{{notes: []string{fmt.Sprintf("a rebuild of %s from %s was already running; watch it with lavikctl status --data %s", d.Data, d.Primary, d.Data)}}}
	case !d.Waited:
		return []table{{notes: []string{fmt.Sprintf("rebuild of %s from %s started; watch it with lavikctl status --data %s", d.Data, d.Primary, d.Data)}}}
	}
	return []table{{notes: []string{fmt.Sprintf("rebuild of %s from %s done in %.1fs: %s (%d bytes) received in the full sync; offset %d, %d keys",
		d.Data, d.Primary, d.Seconds, humanBytes(d.FullSyncBytesReceived), d.FullSyncBytesReceived, d.ReplicationOffset, d.Keys)}}}
}

func runRebuild(ctx context.Context, g globals, o rebuildOpts, stdout io.Writer, prog progress) error {
	c, err := dial(o.Data, dataPeer)
	if err != nil {
		return err
	}
	defer c.Close()
	// The state before, so that a link already ONLINE is not taken for the rebuilt one: done
	// needs a link seen not ONLINE since, or one that changed history or primary.
	before, err := c.status(ctx, g.Timeout)
	if err != nil {
		return err
	}
	epoch := o.ExpectedEpoch
	if epoch == 0 {
		epoch = before.Epoch // 0 for a node without meta, which takes any
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, g.Timeout)
	resp, err := datav1.NewDataAdminClient(c.cc).Rebuild(rctx, &datav1.RebuildRequest{PrimaryAddress: o.Primary, ExpectedEpoch: epoch})
	cancel()
	if err != nil {
		return c.callError("Rebuild", g.Timeout, err)
	}
	doc := rebuildDoc{Data: o.Data, Primary: o.Primary, AlreadyRunning: resp.AlreadyRunning}
	p := printer{w: stdout, json: g.JSON}
	if o.NoWait {
		return printErr(p.print(doc, doc.tables))
	}
	doc.Waited = true
	w := rebuildWatch{primary: o.Primary, before: before, restarted: resp.AlreadyRunning}
	var deadline <-chan time.Time
	if o.WaitTimeout > 0 {
		t := time.NewTimer(o.WaitTimeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var failingSince time.Time
	for {
		st, err := c.status(ctx, g.Timeout)
		switch {
		case err != nil && ctx.Err() != nil:
			prog.finish()
			return failed(fmt.Errorf("interrupted while waiting; the rebuild of %s goes on: watch it with lavikctl status --data %s", o.Data, o.Data))
		case err != nil:
			// The node may be busy replacing its data: give it --timeout before giving up.
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > g.Timeout {
				prog.finish()
				return err
			}
		default:
			failingSince = time.Time{}
			done, err := w.observe(st)
			prog.update(st, w.bytes)
			if err != nil {
				prog.finish()
				return failed(fmt.Errorf("rebuild of %s: %w", o.Data, err))
			}
			if done {
				prog.finish()
				doc.Done = true
				doc.Seconds = time.Since(start).Seconds()
				doc.FullSyncBytesReceived, doc.ReplicationOffset, doc.Keys = w.bytes, st.ReplicationOffset, st.KeyCount
				return printErr(p.print(doc, doc.tables))
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			prog.finish()
			return &exitError{code: exitTimeout, err: fmt.Errorf("rebuild of %s not done after %v (%s); it goes on in the node: watch it with lavikctl status --data %s",
				o.Data, o.WaitTimeout, w.describe(), o.Data)}
		case <-ctx.Done():
			prog.finish()
			return failed(fmt.Errorf("interrupted while waiting; the rebuild of %s goes on: watch it with lavikctl status --data %s", o.Data, o.Data))
		}
	}
}

// rebuildWatch decides from successive Status answers when a rebuild is over.
type rebuildWatch struct {
	primary string
	before  *datav1.StatusResponse
	// restarted is set once the link has been seen not ONLINE since the call, or following
	// another history or primary than before it: the ONLINE link seen after that is the
	// rebuilt one. (Rebuild returns before the node drops its link, which then waits a second
	// before it reconnects, so a poll every 200 ms sees it down.)
	restarted bool
	bytes     uint64 // the most full-sync bytes seen
	last      *datav1.StatusResponse
}

// observe takes one Status answer and reports whether the rebuild is done: the link ONLINE to
// the primary asked for, restarted since the call, and the node's offset at its primary's.
func (w *rebuildWatch) observe(st *datav1.StatusResponse) (bool, error) {
	w.last = st
	l := st.PrimaryLink
	if l == nil {
		return false, fmt.Errorf("the node no longer follows a primary (role %s): something else changed it", strings.TrimPrefix(st.Role.String(), "ROLE_"))
	}
	w.bytes = max(w.bytes, l.FullSyncBytesReceived)
	if l.State != datav1.LinkState_LINK_STATE_ONLINE || st.ReplicationId != w.before.ReplicationId ||
		w.before.PrimaryLink == nil || l.PrimaryAddress != w.before.PrimaryLink.PrimaryAddress {
		w.restarted = true
	}
	if l.PrimaryAddress != w.primary {
		return false, fmt.Errorf("the node now follows %s, not %s: another rebuild or REPLICAOF overtook this one", l.PrimaryAddress, w.primary)
	}
	return w.restarted && l.State == datav1.LinkState_LINK_STATE_ONLINE && st.ReplicationOffset >= l.PrimaryOffset, nil
}

// describe is the last state seen, for a message.
func (w *rebuildWatch) describe() string {
	if w.last == nil || w.last.PrimaryLink == nil {
		return "no answer yet"
	}
	l := w.last.PrimaryLink
	return fmt.Sprintf("link %s, %s received, %d B behind", linkStateName(l.State), humanBytes(w.bytes),
		l.PrimaryOffset-min(l.PrimaryOffset, w.last.ReplicationOffset))
}

// progress shows a rebuild's progress while rebuild waits.
type progress interface {
	update(st *datav1.StatusResponse, bytes uint64)
	finish()
}

func newProgress(w io.Writer, tty bool) progress {
	if !tty {
		return &lineProgress{w: w, every: time.Second}
	}
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetDescription("rebuild: starting"),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return &barProgress{bar: bar}
}

// barProgress is a byte-counting spinner: the snapshot's total size is not known in advance.
type barProgress struct{ bar *progressbar.ProgressBar }

func (b *barProgress) update(st *datav1.StatusResponse, bytes uint64) {
	// The spinner of an unknown length shows a rate but not a count: the count goes in the
	// description.
	if l := st.PrimaryLink; l != nil {
		b.bar.Describe(fmt.Sprintf("rebuild: link %s, %s received", linkStateName(l.State), humanBytes(bytes)))
	}
	b.bar.Set64(int64(bytes))
}

func (b *barProgress) finish() { b.bar.Finish() }

// lineProgress prints a plain line at most every `every`, for logs and pipes.
type lineProgress struct {
	w     io.Writer
	every time.Duration
	last  time.Time
}

func (p *lineProgress) update(st *datav1.StatusResponse, bytes uint64) {
	if time.Since(p.last) < p.every || st.PrimaryLink == nil {
		return
	}
	p.last = time.Now()
	l := st.PrimaryLink
	fmt.Fprintf(p.w, "rebuild: link %s, %s received, offset %d of %d\n", linkStateName(l.State), humanBytes(bytes), st.ReplicationOffset, l.PrimaryOffset)
}

func (p *lineProgress) finish() {}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
