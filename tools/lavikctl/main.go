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

// Exit statuses, documented in the help (exitCodesHelp) and in doc.go.
const (
	exitOK      = 0
	exitFailed  = 1 // an operation failed: a node unreachable, a call refused, a rebuild that broke off
	exitUsage   = 2 // bad flags or arguments, or a command that needs --meta without it
	exitTimeout = 3 // every failure was a timeout (--timeout, or rebuild's --wait-timeout)
)

const exitCodesHelp = `EXIT STATUS:
   0  every operation succeeded
   1  an operation failed: a node unreachable, a call refused (a rebuild of a primary, an epoch
      that does not match), a rebuild that broke off
   2  usage error: bad flags or arguments, or a meta command without --meta
   3  timeout: every failure was a call exceeding --timeout (or rebuild's --wait-timeout)`

// exitError carries an exit status out of a command action. A nil err with a non-zero code
// means the command already printed what went wrong (a status table with an unreachable row).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func failed(err error) error { return &exitError{code: exitFailed, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runMain(ctx, os.Args, os.Stdout, os.Stderr))
}

// runMain runs the command line args and returns the exit status. Only it prints the final
// "lavikctl: ..." error line, so every command reports one way.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, args)
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(stderr, "lavikctl: %v\n", ee.err)
		}
		return ee.code
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "lavikctl: interrupted")
		return exitFailed
	default:
		// urfave/cli's own errors: an unknown flag, a malformed value, an unknown command.
		fmt.Fprintf(stderr, "lavikctl: %v (see lavikctl --help)\n", err)
		return exitUsage
	}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:  "lavikctl",
		Usage: "operate a Lavik deployment: data nodes' state, rebuilds; topology and failover through lavik-meta",
		UsageText: "lavikctl [--meta host:port,...] [--json] [--timeout 5s] command [command options]\n\n" +
			"   lavikctl status --data 10.0.0.1:7000,10.0.0.2:7000\n" +
			"   lavikctl rebuild --data 10.0.0.2:7000 --primary 10.0.0.1:6379",
		Description: "The global flags may also be given after the command (lavikctl status --data a:7000 --json).\n" +
			"Data nodes are named by their admin address: host:port of lavik-data's --admin-port.\n\n" + exitCodesHelp,
		Writer:                 stdout,
		ErrWriter:              stderr,
		Flags:                  globalFlags(),
		HideVersion:            true,
		UseShortOptionHandling: false,
		ExitErrHandler:         func(*cli.Context, error) {}, // runMain maps errors to exit statuses
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &exitError{code: exitUsage, err: err}
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("unknown command %q (see lavikctl --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			statusCommand(stdout),
			rebuildCommand(stdout, stderr),
			promoteCommand(stdout, stderr),
			topologyCommand(stdout, stderr),
			metaCommand(stdout, stderr),
		},
	}
}

// withGlobals adds the global flags to a command's own, so that they may follow the command's
// name too; parseGlobals reads the innermost one given. It also maps a command's flag errors to
// exit status 2.
func withGlobals(cmd *cli.Command) *cli.Command {
	cmd.Flags = append(cmd.Flags, globalFlags()...)
	cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: %w (see lavikctl %s --help)", cmd.Name, err, cmd.Name)}
	}
	cmd.Description = joinNonEmpty(cmd.Description, exitCodesHelp)
	return cmd
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}
