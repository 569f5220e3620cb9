package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrHelp and ErrVersion are returned by Parse for --help and --version.
var (
	ErrHelp    = errors.New("config: help requested")
	ErrVersion = errors.New("config: version requested")
)

// Parse builds a Config from redis-server style arguments: an optional config file first, then
// "--name value" options (a value may span several words until the next "--"; "--name=value"
// is accepted too). Command-line options override the file.
func Parse(args []string) (*Config, error) {
	c := New()
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		data, err := os.ReadFile(args[0])
		if err != nil {
			return nil, fmt.Errorf("config: read config file: %w", err)
		}
		if err := c.LoadFile(string(data), args[0]); err != nil {
			return nil, err
		}
		args = args[1:]
	}
	for i := 0; i < len(args); {
		a := args[i]
		switch a {
		case "-h", "--help":
			return nil, ErrHelp
		case "-v", "--version":
			return nil, ErrVersion
		}
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			return nil, fmt.Errorf("config: unexpected argument %q (options look like --port 6380)", a)
		}
		name := a[2:]
		var vals []string
		if k, v, ok := strings.Cut(name, "="); ok {
			name, vals = k, []string{v}
			i++
		} else {
			i++
			for i < len(args) && (!strings.HasPrefix(args[i], "--") || len(vals) == 0 && args[i] == "--") {
				vals = append(vals, args[i])
				i++
			}
		}
		if Lookup(name) == nil {
			return nil, fmt.Errorf("config: unknown option --%s (see --help)", name)
		}
		if len(vals) == 0 {
			if d := Lookup(name).Default; d == "" {
				vals = []string{""} // "--requirepass" alone, like redis-server's "--save"
			} else {
				return nil, fmt.Errorf("config: option --%s needs a value", name)
			}
		}
		if err := c.SetStartup(name, strings.Join(vals, " ")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// LoadFile applies a Redis-style config file: one "name value" per line, # comments, values
// optionally in double or single quotes.
func (c *Config) LoadFile(text, path string) error {
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		val := strings.TrimSpace(rest)
		if len(val) >= 2 && (val[0] == '"' && val[len(val)-1] == '"' || val[0] == '\'' && val[len(val)-1] == '\'') {
			val = val[1 : len(val)-1]
		}
		if err := c.SetStartup(name, val); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
	}
	return nil
}

// Usage is the --help text.
func Usage(prog string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [config-file] [--option value ...]\n\n", prog)
	b.WriteString("Starts a Lavik data node: a Redis-compatible server whose values live on SSD.\n")
	b.WriteString("Options (also valid as \"name value\" lines in the config file):\n\n")
	for _, p := range Params {
		def := p.Default
		if def == "" {
			def = `""`
		}
		mut := ""
		if p.Mutable {
			mut = " [CONFIG SET]"
		}
		fmt.Fprintf(&b, "  --%-26s %s (default %s)%s\n", p.Name+" <value>", p.Doc, def, mut)
	}
	b.WriteString("\n  --help                     this text\n  --version                  print the version\n")
	b.WriteString("\nExample: " + prog + " --port 6380 --dir /var/lib/lavik --appendfsync always\n")
	return b.String()
}
