// Package idempotencytest is the test kit for services that use package
// idempotency, as net/http/httptest is for net/http and rivertest for River.
// It lives apart from package idempotency so that production binaries never
// link it.
//
// It has five parts:
//
//   - Deliveries: [Derive] makes the events a test needs from one real
//     event, a fixture's payload with fields set by their dotted paths;
//     [SignatureHeader], [NewSignedRequest] and friends sign a
//     payload as Stripe does ([SignatureHeaderSecrets] with every secret of
//     a roll); [Deliver] sends it once to a handler and
//     [Replay] sends n copies at once, as Stripe's retries and duplicates
//     might, [ReplayAll] n copies of each of several payloads at once
//     (twin events of one object racing), and all return what the
//     handler answered and which event each delivery sent ([Answer],
//     [Answers]).
//   - A fake clock: [NewClock] gives a [Clock] (the zero Clock starts at
//     the real time of its first use) to set as
//     idempotency.InboxConfig.Now (and Config.Now), advanced by the test
//     ([Clock.Advance]) or set to an event's next attempt ([Clock.Set]), so
//     that Inbox.WorkDue reaches a retry's backoff or a lease's expiry
//     without sleeping; [Drain] does both until nothing is left to apply
//     (every retry, up to a dead letter, in one call).
//   - A fake Stripe API: [NewStripeClient] gives a stripe-go client whose
//     requests an http.Handler serves in the process, without a network,
//     and [V2Events] is that handler for thin (v2) events: [V2Events.Add]
//     keeps a [ThinEvent] for the Handler's fetch of it (Config.StripeClient)
//     and returns its notification, to [Deliver]; [V1Events] is that
//     handler for the Events API's list, which Handler.Recover pages
//     through: [V1Events.Add] keeps a payload Stripe delivered,
//     [V1Events.AddUndelivered] one whose delivery failed.
//     [WriteStripeError] answers a request as the API fails one (429,
//     5xx, 401), from a handler that serves either otherwise.
//   - A throwaway PostgreSQL: [Postgres] gives a test its own empty schema
//     on a real server, and [Database.NewStore] a migrated PgxStore in it.
//   - The store conformance suite: [RunStoreTests] checks that an
//     implementation of idempotency.Store keeps every guarantee that
//     MemoryStore and PgxStore keep; [Waiting] counts the waiting runs of
//     one that wraps either.
//
// # Which store to test handlers on
//
// The memory store (idempotency.NewMemoryStore) has the PostgreSQL store's
// semantics and needs nothing: use it for the logic of handlers, with fakes
// of your tables whose writes apply in tx.AfterCommit, so that they commit
// and roll back with the claim (see the package example). [Table] is such
// a fake, rows by key, that keeps the later of two writes of one row
// whatever order their AfterCommit funcs run in, as an OnCurrent
// handler's fake must.
//
// Handlers that write SQL through idempotency.PgxTx can be tested for real
// instead: on [Postgres], the handler's own SQL runs in the event's
// transaction against your real schema, so you do not write every business
// write twice, once in SQL and once as a fake, and the test sees what the
// constraints, triggers and isolation level of PostgreSQL make of it (see
// the example of [Postgres]).
//
// # The throwaway PostgreSQL
//
// The first call to [Postgres] in a test binary starts a PostgreSQL cluster
// from the local server binaries (initdb, pg_ctl, postgres) in a new
// temporary directory, tuned for tests (fsync off), listening on a unix
// socket in that directory and on a free port of 127.0.0.1. Every later call
// in the binary shares it: a cluster starts in about a second, a schema in
// milliseconds. The binaries are taken from the directory named by
// [EnvPgBinDir] if it is set, otherwise from PATH, then from the newest
// /usr/lib/postgresql/<version>/bin (Debian and Ubuntu: apt install
// postgresql). PostgreSQL refuses to run as root, so when the tests run as
// root the cluster runs as the existing OS user "postgres" (create it with
// useradd --system --no-create-home postgres).
//
// With [EnvDatabaseURL] (IDEMPOTENCY_TEST_DATABASE_URL) set, no cluster is
// started: each test's schema is created in, and dropped from, that server
// instead; the schemas of a test binary that died before its tests ended
// are dropped by the next test binary that uses the server.
//
// When no server can be had (no binaries, no "postgres" user when root, a
// failed start), every test that calls [Postgres] is skipped, and one
// message on stderr says why and how to get PostgreSQL, so that the skips
// are not silent. With CI=true those tests fail instead: a CI run that
// tested nothing on PostgreSQL does not pass. An unreachable
// IDEMPOTENCY_TEST_DATABASE_URL always fails.
//
// A package whose tests call [Postgres] needs
//
//	func TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }
//
// so that the cluster is stopped and removed after the tests; see [Main] for
// what happens without it and when a test binary dies.
//
// Isolation is by search_path: tests connect as the same role, and a test
// that qualifies names could still reach another test's schema.
package idempotencytest
