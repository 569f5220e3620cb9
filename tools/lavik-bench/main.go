package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit statuses.
const (
	exitOK          = 0
	exitErrors      = 1   // an operation failed: error reply, wrong or missing value, I/O error; or a check failed
	exitUsage       = 2   // bad flags, or the benchmark could not be set up (server would not start)
	exitUnsupported = 3   // nothing failed, but the server does not know a command the workload needs
	exitInterrupted = 130 // SIGINT or SIGTERM
)

// exitError carries an exit status out of a command action.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, a second one kills the process the default way (the servers
		// it started die with it: see setChildAttrs).
		<-ctx.Done()
		stop()
	}()
	os.Exit(runMain(ctx, os.Args, os.Stdout, os.Stderr))
}

// runMain runs the command line args and returns the exit status.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code := exitOK
	app := newApp(stdout, stderr, &code)
	err := app.RunContext(ctx, args)
	var ee *exitError
	switch {
	case err == nil:
		return code
	case errors.As(err, &ee):
		if ee.err != nil && ee.code != exitOK {
			fmt.Fprintf(stderr, "lavik-bench: %v\n", ee.err)
		}
		return ee.code
	case errors.Is(err, errInterrupted) || ctx.Err() != nil:
		fmt.Fprintln(stderr, "lavik-bench: interrupted")
		return exitInterrupted
	default:
		// urfave/cli's own flag errors; it has printed the usage.
		fmt.Fprintf(stderr, "lavik-bench: %v\n", err)
		return exitUsage
	}
}

func newApp(stdout, stderr io.Writer, code *int) *cli.App {
	return &cli.App{
		Name:  "lavik-bench",
		Usage: "load generator for RESP servers, and a side-by-side comparison of Lavik and Redis",
		Description: "Measures any Redis-compatible server the same way: closed-loop connections with a fixed\n" +
			"pipeline depth, a warm-up then a fixed window, HDR histograms per operation type, and every\n" +
			"read reply checked against the value that was written. See tools/lavik-bench/README.md.",
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {}, // runMain maps errors to exit statuses
		Commands: []*cli.Command{
			{
				Name:      "run",
				Usage:     "run one workload against one server (optionally a sweep over connection counts)",
				UsageText: "lavik-bench run --addr 127.0.0.1:6379 --workload get --keys 1000000 --conns 50 --pipeline 1",
				Flags:     runFlags(),
				Action: func(c *cli.Context) error {
					cfg, err := parseRunConfig(c)
					if err != nil {
						return usageError(err)
					}
					*code, err = runCommand(c.Context, cfg, stdout, stderr)
					return err
				},
			},
			{
				Name:      "compare",
				Usage:     "start redis-server and lavik-data, load both, run the matrix alternating them, print one table",
				UsageText: "lavik-bench compare --lavik-bin bin/lavik-data --redis-bin redis-server [--full --chart bench.html]",
				Flags:     compareFlags(),
				Action: func(c *cli.Context) error {
					cfg, err := parseCompareConfig(c)
					if err != nil {
						return usageError(err)
					}
					*code, err = compareCommand(c.Context, cfg, stdout, stderr)
					return err
				},
			},
			{
				Name:      "capacity",
				Usage:     "larger than memory: lavik-data in a memory cgroup, GET at --base-keys keys, then grown to --keys, side by side",
				UsageText: "lavik-bench capacity --lavik-bin bin/lavik-data --memory-limit 2GiB --base-keys 1000000 --keys 20000000",
				Flags:     capacityFlags(),
				Action: func(c *cli.Context) error {
					cfg, err := parseCapacityConfig(c)
					if err != nil {
						return usageError(err)
					}
					*code, err = capacityCommand(c.Context, cfg, stdout, stderr)
					return err
				},
			},
			{
				Name:      "repl",
				Usage:     "replication, Lavik and Redis side by side: full resync time, the primary under load while a follower syncs, lag under SET load",
				UsageText: "lavik-bench repl --lavik-bin bin/lavik-data --redis-bin redis-server --keys 1000000 --value-size 1024 [--pin server=0,client=1 --json repl.json]",
				Flags:     replFlags(),
				Action: func(c *cli.Context) error {
					cfg, err := parseReplConfig(c)
					if err != nil {
						return usageError(err)
					}
					*code, err = replCommand(c.Context, cfg, stdout, stderr)
					return err
				},
			},
			{
				Name:      "failover",
				Usage:     "kill -9 failover drill, Lavik (lavik-meta) and Redis (Sentinel) side by side: failover time, acknowledged writes lost with and without WAIT, spurious failovers",
				UsageText: "lavik-bench failover --lavik-bin bin/lavik-data --meta-bin bin/lavik-meta --redis-bin redis-server --trials 20 [--json failover.json]",
				Flags:     failoverFlags(),
				Action: func(c *cli.Context) error {
					cfg, err := parseFailoverConfig(c)
					if err != nil {
						return usageError(err)
					}
					*code, err = failoverCommand(c.Context, cfg, stdout, stderr)
					return err
				},
			},
		},
	}
}
