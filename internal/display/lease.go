package display

import "time"

// Lease says, as idemctl's show and the dashboard's event page say it,
// what became of the lease of an event a worker leased (processing):
// until is the lease's end as the tool writes a time; running, that the
// lease runs by the tool's clock; held, that events of its object hold it
// back (Inbox.HeldBy).
//
// A worker applying an event is held back by nothing, on either store: an
// earlier event of its object that comes in meanwhile waits behind it.
// Only an event whose lease expired (its worker died, hung or lost its
// connection, and its transaction is no longer open) can be processing and
// held back: the next lease takes it over once nothing holds it back, but
// dead-letters it after its last attempt without waiting.
func Lease(until string, running, held bool) string {
	switch {
	case running:
		return "a worker holds it under a lease until " + until
	case held:
		return "its worker's lease expired at " + until +
			"; the next lease retries it once nothing holds it back, or dead-letters it after its last attempt without waiting"
	}
	return "its worker's lease expired at " + until + "; the next lease retries it, or dead-letters it after its last attempt"
}

// OverdueAfter is how long past its next attempt a record still to be
// applied is overdue, as idemctl show and the dashboard say it. A worker
// takes a due record within InboxConfig.PollInterval (a second by
// default), or at once when PostgreSQL notifies it, unless the workers
// are busy, down or cut off from the database, or it waits behind an
// earlier event of its object; five minutes is the README's "Events
// wait" alert, so that a record overdue is one that alert fires for.
const OverdueAfter = 5 * time.Minute

// Overdue reports whether a record still to be applied whose next
// attempt is next (zero: none, as for one processing) is past it by more
// than OverdueAfter at now.
func Overdue(next, now time.Time) bool {
	return !next.IsZero() && now.Sub(next) > OverdueAfter
}
