// Command idemctl inspects and repairs the PostgreSQL store of a service
// that uses github.com/seed-a84bb619/idempotency: the inbox's counts and
// events, the ledger's records, one event's records, redrive, forget,
// prune, recovery from the Events API, and migrations.
//
//	go run github.com/seed-a84bb619/idempotency/cmd/idemctl -database-url postgres://... [-schema name] <command> [flags]
//
// Run it from the service's module, after adding the command's own
// dependencies to its go.sum once, at the library's version that module
// requires (go run stops at "missing go.sum entry" without them):
//
//	go get -tool github.com/seed-a84bb619/idempotency/cmd/idemctl@<version>
//
// The database URL may come from DATABASE_URL instead; -schema is the
// store's PgxConfig.Schema ("public" by default). The global flags may
// come before or after the command; every flag comes before the command's
// arguments (ids), and a flag after them is refused (exit 2). Commands:
//
//	stats                 counts by state (events and tasks), the age of the oldest one still to be applied and of the last attempt, dead letters
//	list                  events and tasks by -state, -type, -object, -account, -kind, -since/-until, -limit, -after (the next page); a table or -json; no payloads
//	ledger                the ledger's records (events applied, skipped, ignored; a synchronous-mode service's record) by -outcome, -type, -object, -account, -since/-until, -limit, -after (the next page); a table or -json; no payloads
//	show <event-id>       the inbox record (a task's with its idempotency key), what holds it back, the ledger record; the payload only with -payload
//	redrive               dead-lettered (or -state failed) events and tasks, or -state ignored events, back to pending, by -id, -type, -object, -account, -since/-until, or -all (-state ignored needs -type or -id); -dry-run counts; -json
//	forget <event-id>...  delete an event's claim, guards and inbox row, so that it is applied again when it comes next
//	prune                 delete what the retention windows (-event-ids 45d, -payloads 7d, -dead-letters 90d, -guards, -tasks) no longer keep; -dry-run counts; -json
//	recover               store the events the Events API lists since -since, of -types, in the inbox for the service's workers
//	migrate               PgxStore.Migrate
//
// idemctl <command> -h describes a command and its flags. Times (-since,
// -until) are RFC 3339, a date (UTC), or a duration before now by the
// database's clock, such as 2h or 7d. Durations take days: 45d, 1d12h.
//
// Results go to stdout; errors to stderr, one line each starting
// "idemctl: " (recover also writes there the library's log records at Warn
// and Error, as slog text lines: a page of the Events API asked for again
// after a 429, a 5xx or the network, an event that failed to be stored and
// why, an event of another API version, the run's end when it stopped).
// Nothing idemctl prints holds a payload (unless show -payload
// asks for it), the database password or the Stripe API key, which recover
// reads from STRIPE_SECRET_KEY alone. Text that payloads and handlers put
// in the store (ids, last errors) is printed without its control
// characters, so that it cannot drive the terminal: in tables each, and
// each bidirectional control (which reorders what follows it), becomes
// U+FFFD (a run of white space, line breaks and NEL included, one space),
// in -json the C1 and bidirectional ones are \u escapes too.
//
// Long operations (prune, recover, redrive) show progress on stderr: a bar
// when stderr is a terminal; one line per step with -progress lines;
// nothing with -quiet or -progress off. SIGINT or SIGTERM stops them
// between steps: prune between batches (each its own transaction), recover
// after the event in hand with its checkpoint saved; what was done is
// reported and the exit code is 130. A second signal kills at once.
//
// Exit codes:
//
//	0    done
//	1    the operation failed (the message says why)
//	2    usage: a bad flag, argument or time
//	3    not found: show, forget, redrive -id, list -after or ledger -after of an id the store does not have
//	4    the database is unavailable (refused, unreachable, shutting down)
//	5    prune: another prune (in any process) is running; nothing was done
//	130  interrupted (SIGINT or SIGTERM)
//
// They are a built idemctl's (go install or go build it for a script) and
// go tool idemctl's: go run exits 1 for any of them but 0, and adds
// "exit status N" to stderr.
package main
