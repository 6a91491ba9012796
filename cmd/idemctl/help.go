package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// exitCodesHelp is the exit code table of -h; the package doc (doc.go)
// has the same codes.
const exitCodesHelp = `Exit codes:
  0    done
  1    the operation failed (the message says why)
  2    usage: a bad flag, argument or time
  3    not found: show, forget, redrive -id, list -after or ledger -after of an id the store does not have
  4    the database is unavailable (refused, unreachable, shutting down)
  5    prune: another prune (in any process) is running; nothing was done
  130  interrupted (SIGINT or SIGTERM): long operations stop between
       steps, report what was done, and leave nothing half done`

// usage writes the top-level help.
func (a *app) usage(w io.Writer) {
	fmt.Fprint(w, `idemctl inspects and repairs the store of a service that uses
github.com/seed-a84bb619/idempotency on PostgreSQL.

Usage:
  idemctl [-database-url URL] [-schema name] <command> [flags] [args]

Commands:
`)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	_ = tw.Flush()
	fmt.Fprint(w, `
Run idemctl <command> -h (or idemctl help <command>) for a command's flags.

Global flags (before or after the command; flags go before its ids):
`)
	fs := a.flagSet("idemctl")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w)
	fmt.Fprintln(w, timesHelp)
	fmt.Fprintln(w)
	fmt.Fprintln(w, exitCodesHelp)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Results go to stdout; errors to stderr, one line each starting \"idemctl: \"")
	fmt.Fprintln(w, "(recover also writes there the library's warnings and errors, as slog text lines).")
}

// timesHelp says how -since and -until are written, and sinceHelp how
// -since is, for a command without -until (recover).
const (
	timeForms = `RFC 3339 (2026-11-30T14:00:00Z), a date
(2026-11-30, UTC), or a duration before now by the database's clock
(90m, 2h, 7d, 1d12h).`
	timesHelp = "Times (-since, -until) are " + timeForms
	sinceHelp = "-since is " + timeForms
)

// commandUsage writes a command's help.
func (a *app) commandUsage(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n\n", strings.TrimSpace("idemctl "+c.name+" "+c.args), strings.TrimSpace(c.help))
	fmt.Fprintln(w, "Flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintln(w)
	fmt.Fprintln(w, exitCodesHelp)
}
