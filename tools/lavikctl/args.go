package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// globals are the options every command shares.
type globals struct {
	// Meta is the lavik-meta members' client addresses, in the order to try them; empty when
	// --meta is not given (the commands that need meta then refuse with exit status 2).
	Meta []string
	// JSON selects machine output: one JSON document on stdout.
	JSON bool
	// Timeout bounds each gRPC call. Too low and a loaded node reads as unreachable (exit 3);
	// too high and a hung node holds the command up that long.
	Timeout time.Duration
}

const defaultTimeout = 5 * time.Second

// globalFlags returns fresh instances of the global flags: the app and every command get their
// own (see withGlobals).
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "meta", Usage: "lavik-meta members' client addresses, `host:port[,host:port...]` (needed by promote, topology, meta)"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout instead of a table"},
		&cli.DurationFlag{Name: "timeout", Value: defaultTimeout, Usage: "time limit of each call to a node or to meta"},
	}
}

// setIn returns the innermost context in c's lineage where the flag name was given, or nil.
func setIn(c *cli.Context, name string) *cli.Context {
	for _, x := range c.Lineage() {
		if slices.Contains(x.LocalFlagNames(), name) {
			return x
		}
	}
	return nil
}

// parseGlobals reads and validates the global flags, wherever on the command line they were.
func parseGlobals(c *cli.Context) (globals, error) {
	g := globals{Timeout: defaultTimeout}
	if x := setIn(c, "json"); x != nil {
		g.JSON = x.Bool("json")
	}
	if x := setIn(c, "timeout"); x != nil {
		g.Timeout = x.Duration("timeout")
		if g.Timeout <= 0 {
			return g, usageErrorf("--timeout %v: want a positive duration such as 5s", g.Timeout)
		}
	}
	if x := setIn(c, "meta"); x != nil {
		var err error
		if g.Meta, err = parseAddrList("--meta", x.String("meta")); err != nil {
			return g, err
		}
	}
	return g, nil
}

// parseAddrList parses a comma-separated list of host:port addresses (flag names the flag in
// errors). Duplicates are errors: they would show a node twice.
func parseAddrList(flag, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usageErrorf("%s: want host:port[,host:port...]", flag)
	}
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if err := checkAddr(a); err != nil {
			return nil, usageErrorf("%s: %v", flag, err)
		}
		if slices.Contains(out, a) {
			return nil, usageErrorf("%s: %s is listed twice", flag, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// checkAddr accepts host:port with a non-empty host and a port in 1..65535. A bare port is
// refused rather than taken as localhost: an operator's command should name the machine.
func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q: want host:port", a)
	}
	if host == "" {
		return fmt.Errorf("%q: the host is missing (want host:port, e.g. 127.0.0.1%s)", a, a)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q is not a number in 1..65535", a, port)
	}
	return nil
}

// noArgs refuses positional arguments for a command that takes none (a forgotten flag name,
// as in `lavikctl status 10.0.0.1:7000`).
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("%s takes no arguments, got %q (see lavikctl %s --help)", c.Command.Name, c.Args().Slice(), c.Command.Name)
	}
	return nil
}

// flagsFirst refuses a flag after a positional argument: urfave/cli v2 stops parsing flags at
// the first argument, so `promote data-2 --force` would take --force for a second NODE.
func flagsFirst(command string, args []string) error {
	for _, a := range args[min(1, len(args)):] {
		if strings.HasPrefix(a, "-") {
			return usageErrorf("%s: flag %s after an argument: put the flags before it (lavikctl %s [flags] %s)", command, a, command, args[0])
		}
	}
	return nil
}
