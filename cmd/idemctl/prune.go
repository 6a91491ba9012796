package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/display"
)

var pruneCommand = command{
	name:    "prune",
	args:    "[-event-ids d] [-payloads d] [-dead-letters d] [-guards d] [-tasks d] [-batch n] [-pause d] [-dry-run] [-json]",
	summary: "delete what the retention windows no longer keep, batch by batch",
	help: `Deletes what the retention windows no longer keep (PgxStore.Prune): claimed
event ids, finished inbox events with their payloads, dead letters,
OnCurrent's rows of objects not fetched within -event-ids, and, when
their windows are set, guards and finished tasks. It clears the arguments
of tasks finished longer than -payloads ago, keeping their rows (a
dead-lettered task keeps them for a redrive). Each window is
measured back from now; an unset flag is the library's default
(idempotency.Retention). A window that breaks one of Retention's rules is
refused with the rule, and nothing is deleted.

Rows go in batches of -batch, each its own transaction, so that deliveries
and workers are not held up. On SIGINT or SIGTERM the prune stops between
batches: every batch reported is committed, none is half done, and the
report says what was deleted; run it again to go on. On an error it
stops, says what it deleted before it (every batch reported committed),
and the error follows on stderr.

-dry-run counts what the prune would delete and clear with the same
windows, and deletes and clears nothing: the report says "would delete",
with the counts a prune run then would report (Retention.DryRun). It
counts each kind of row at once, in one snapshot of the database, locks
no row and does not wait for another prune; -batch and -pause are not
used. Interrupted (exit 130), it shows no counts: it had not counted
everything (with -json, "interrupted": true and its counts incomplete).

Only one prune runs at a time on a database: when another one (a service's
PruneEvery, another idemctl) is deleting a batch as this one starts, it
exits 5 and deletes nothing. A dry run never does.

Durations are written 45d, 36h, 1d12h. With -json the report is one JSON
document: {"event_ids":N,"events":N,"dead_letters":N,"guards":N,"tasks":N,
"objects":N,"total":N,"task_args_cleared":N,"dry_run":bool,
"interrupted":bool}; total counts the rows deleted, task_args_cleared the
tasks whose arguments were cleared (with -dry-run: would be).`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		var eventIDs, payloads, deadLetters, guards, tasks durationFlag
		fs.Var(&eventIDs, "event-ids", fmt.Sprintf("keep claimed event ids this long (default %s, the least accepted)", formatDuration(idempotency.DefaultEventIDRetention)))
		fs.Var(&payloads, "payloads", fmt.Sprintf("keep finished inbox events and their payloads this long after they finished (default %s)", formatDuration(idempotency.DefaultPayloadRetention)))
		fs.Var(&deadLetters, "dead-letters", fmt.Sprintf("keep dead-lettered events this long (default %s; at least -payloads); dead-lettered tasks are kept -event-ids plus -dead-letters, or -tasks when longer", formatDuration(idempotency.DefaultDeadLetterRetention)))
		fs.Var(&guards, "guards", "keep natural-key guards and CheckOrder keys this long (default: keep them; else at least -event-ids plus -dead-letters)")
		fs.Var(&tasks, "tasks", "keep finished tasks this long (default: keep them; else at least -event-ids plus -dead-letters)")
		batch := fs.Int("batch", idempotency.DefaultPruneBatch, fmt.Sprintf("rows per transaction, 1 to %d", idempotency.MaxPruneBatch))
		pause := fs.Duration("pause", idempotency.DefaultPrunePause, "wait after each batch, so that deliveries keep most of the database (0: no wait, for a quiet time)")
		dryRun := fs.Bool("dry-run", false, "count what would be deleted and cleared; delete and clear nothing")
		asJSON := fs.Bool("json", false, "the report as one JSON document")
		return func(ctx context.Context, a *app, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if *pause < 0 {
				return usageError("-pause %s: want 0 or more", *pause)
			}
			r := idempotency.Retention{
				EventIDs: eventIDs.d, Payloads: payloads.d, DeadLetters: deadLetters.d,
				Guards: guards.d, Tasks: tasks.d, BatchSize: *batch, Pause: retentionPause(*pause), DryRun: *dryRun,
				Now: a.dbNow, // the windows on the replicas' clock, not this machine's
			}
			for _, f := range []struct {
				name string
				d    durationFlag
			}{{"-event-ids", eventIDs}, {"-payloads", payloads}, {"-dead-letters", deadLetters}} {
				if f.d.set && f.d.d == 0 {
					// Zero is Retention's "default"; on the command line it
					// would read as "keep nothing".
					return usageError("%s 0: leave the flag out for the default", f.name)
				}
			}
			if *batch < 1 {
				return usageError("-batch %d: want 1 to %d", *batch, idempotency.MaxPruneBatch)
			}
			// A window that breaks the library's rules is a usage error,
			// found before connecting.
			if err := r.Validate(); err != nil {
				return usageError("%s", retentionFlags.Replace(err.Error()))
			}
			store, closeFn, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			m := a.meter("prune", "rows")
			if *dryRun {
				// Counts, no batches: the bar only shows that it is running.
				m.set(0, "counting (dry run)")
			}
			r.OnBatch = func(rep idempotency.PruneReport) {
				m.set(rep.Total(), fmt.Sprintf("%s deleted (event ids %d, events %d, dead letters %d, guards %d, tasks %d, objects %d; task arguments cleared %d)",
					display.Count(rep.Total(), "row", "rows"), rep.EventIDs, rep.Events, rep.DeadLetters, rep.Guards, rep.Tasks, rep.Objects, rep.TaskArgsCleared))
			}
			rep, err := store.Prune(ctx, r)
			m.done()
			return a.pruneEnded(ctx, rep, err, *dryRun, *asJSON)
		}
	},
}

// pruneEnded reports the prune that returned rep and err: interrupted
// only when the signal stopped it (it returned the context's error), not
// when the signal landed after its last batch, and the prune had done
// everything.
func (a *app) pruneEnded(ctx context.Context, rep idempotency.PruneReport, err error, dryRun, asJSON bool) error {
	end := pruneDone
	switch {
	case interrupted(ctx, err):
		end = pruneInterrupted
	case errors.Is(err, idempotency.ErrPruneRunning):
		return &exitError{code: exitPruneRunning, err: errors.New("another prune is running on this database (a service's PruneEvery, or another idemctl); nothing was deleted")}
	case err != nil:
		end = pruneFailed
	}
	if werr := a.writePrune(rep, dryRun, end, asJSON); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return a.storeErr(err)
	}
	return nil
}

// retentionFlags writes the library's refusal of a window with prune's
// flags for Retention's fields, so that the rule reads in the flags the
// operator typed (the windows are written in days already).
var retentionFlags = strings.NewReplacer(
	"idempotency: ", "",
	"Retention.EventIDs", "-event-ids", "Retention.Payloads", "-payloads", "Retention.DeadLetters", "-dead-letters",
	"Retention.Guards", "-guards", "Retention.Tasks", "-tasks", "Retention.BatchSize", "-batch",
	"(Payloads,", "(-payloads,", "(EventIDs ", "(-event-ids ", "+ DeadLetters ", "+ -dead-letters ",
)

// pruneJSON is prune -json's document.
type pruneJSON struct {
	EventIDs    int `json:"event_ids"`
	Events      int `json:"events"`
	DeadLetters int `json:"dead_letters"`
	Guards      int `json:"guards"`
	Tasks       int `json:"tasks"`
	Objects     int `json:"objects"`
	Total       int `json:"total"`
	// TaskArgsCleared counts the finished tasks whose arguments were
	// cleared, their rows kept: not in Total.
	TaskArgsCleared int `json:"task_args_cleared"`
	// DryRun says that the counts are what a prune would delete and
	// clear: nothing was.
	DryRun      bool `json:"dry_run"`
	Interrupted bool `json:"interrupted"`
}

// pruneEnd is how a prune ended: what its report says of itself.
type pruneEnd int

const (
	pruneDone        pruneEnd = iota
	pruneInterrupted          // by SIGINT or SIGTERM
	pruneFailed               // on an error, which stderr gives
)

func (a *app) writePrune(rep idempotency.PruneReport, dryRun bool, end pruneEnd, asJSON bool) error {
	if asJSON {
		return writeJSON(a.stdout, pruneJSON{EventIDs: rep.EventIDs, Events: rep.Events, DeadLetters: rep.DeadLetters,
			Guards: rep.Guards, Tasks: rep.Tasks, Objects: rep.Objects, Total: rep.Total(),
			TaskArgsCleared: rep.TaskArgsCleared, DryRun: dryRun, Interrupted: end == pruneInterrupted})
	}
	switch {
	case dryRun && end == pruneInterrupted:
		// The signal cancelled the count running then: what it counted
		// before is part of the answer, and the kinds not counted read 0.
		_, err := fmt.Fprintln(a.stdout, "interrupted: the dry run stopped before it had counted everything; nothing deleted (run it again for the counts)")
		return err
	case dryRun && end == pruneFailed:
		return nil // it deleted nothing, and its counts are not all made: the error says why
	}
	rows := display.Count(rep.Total(), "row", "rows")
	switch {
	case dryRun:
		fmt.Fprintf(a.stdout, "would delete %s (dry run: nothing deleted):\n", rows)
	case end == pruneInterrupted:
		fmt.Fprintf(a.stdout, "interrupted: stopped between batches; %s deleted, every batch committed:\n", rows)
	case end == pruneFailed:
		fmt.Fprintf(a.stdout, "stopped by an error after deleting %s, every batch reported committed:\n", rows)
	default:
		fmt.Fprintf(a.stdout, "deleted %s:\n", rows)
	}
	tw := newTable(a.stdout)
	fmt.Fprintf(tw, "  event ids\t%d\n", rep.EventIDs)
	fmt.Fprintf(tw, "  events\t%d\n", rep.Events)
	fmt.Fprintf(tw, "  dead letters\t%d\n", rep.DeadLetters)
	fmt.Fprintf(tw, "  guards\t%d\n", rep.Guards)
	fmt.Fprintf(tw, "  tasks\t%d\n", rep.Tasks)
	fmt.Fprintf(tw, "  objects\t%d\n", rep.Objects)
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := rep.TaskArgsCleared; n > 0 {
		kept, cleared := "their rows kept", "cleared"
		if n == 1 {
			kept = "its row kept"
		}
		if dryRun {
			cleared = "would clear"
		}
		_, err := fmt.Fprintf(a.stdout, "%s the arguments of %s, %s\n", cleared, display.Count(n, "finished task", "finished tasks"), kept)
		return err
	}
	return nil
}

// retentionPause is -pause as Retention.Pause: 0 on the command line is
// no wait, which Retention spells -1 (its zero is the default pause).
func retentionPause(flag time.Duration) time.Duration {
	if flag == 0 {
		return -1
	}
	return flag
}
