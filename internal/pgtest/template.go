package pgtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Template gives tests schemas that prepare (a migration, say) has already
// run on, as [NewWithConfig] would give an empty one. Preparing a schema
// for every test costs far more than the test often does, so a Template
// keeps, per test binary, the schemas its tests are done with and hands
// them to later tests.
//
// When a test ends, its pool is closed and every session still connected
// with its [DB.URL] terminated, as for [New] ([Template.NewPooled] keeps
// the pool and a few of its sessions, reset, for the next test). Then, in
// one transaction, every table of the schema is truncated (without
// CASCADE: no table of another schema is touched), the rows prepare wrote
// are put back, every sequence is set back to where prepare left it, and
// the activity counters of its tables (pg_stat_user_tables), which
// autovacuum reads, are zeroed. The schema goes back to the template only
// if, after that, its fingerprint equals that of the first schema the
// template prepared, taken right after prepare: its tables, columns,
// defaults, indexes, constraints, functions, triggers, rules, policies,
// types, sequences (and their positions), comments, privileges and
// planner statistics, by names and definitions, and every object that
// lives in it. A test that dropped an index, added a column or a table,
// or left statistics (ANALYZE) behind therefore has its schema dropped,
// as [New]'s is; so does a test that failed, or whose pool was still in
// use, or whose sessions could not all be ended. The reset writes
// pg_class and zeroes statistics counters, which only a superuser may: on
// an external server whose role is not one, every schema is dropped, as
// [New]'s, and a Template saves nothing.
//
// Isolation is as for [New]: a test never shares its schema with a test
// running at the same time, and sees no row, sequence value or object
// another test left. The schema's name is not new, though: a test must
// not take it for unique over the run. On an external server the schemas
// kept carry the owner comment New's have, so the next binary sweeps them
// if this one dies; [Main] drops them.
type Template struct {
	prepare func(ctx context.Context, db *DB) error

	mu          sync.Mutex
	fingerprint string       // of the first schema prepared; "" before
	free        []*pooledSch // schemas ready for a test
}

// pooledSch is a schema of a Template, and what prepare left in it.
type pooledSch struct {
	schema string
	// pool is the pool [Template.NewPooled] gave the schema's last test,
	// kept open with its idle sessions reset, gate its gate and maxConns
	// its MaxConns; nil when that test's pool was closed.
	pool     *pgxpool.Pool
	gate     *poolGate
	maxConns int32
	kept     int // sessions of pool, or bouncerPIDs, counted in keptSessions
	// bouncerDB is the PgBouncer database name under which PgBouncer
	// holds idle server sessions of the schema's last test (their process
	// ids bouncerPIDs), for the next [Bouncer.NewFrom]; "" when none.
	bouncerDB   string
	bouncerPIDs []int32
	rows        map[string]string // table → its rows after prepare, as a JSON array
	seqs        string            // JSON object: sequence → its last value after prepare, if one was taken
	sizes       string            // JSON array: the sizes pg_class records of its tables and indexes after prepare
}

var templates struct {
	sync.Mutex
	all []*Template
}

// NewTemplate returns a Template whose schemas prepare has run on. prepare
// is called once for each schema the template creates, with a pool of its
// own on it (search_path the schema, as for [New]) that is closed after;
// it must give every schema the same objects.
func NewTemplate(prepare func(ctx context.Context, db *DB) error) *Template {
	tp := &Template{prepare: prepare}
	templates.Lock()
	templates.all = append(templates.all, tp)
	templates.Unlock()
	return tp
}

// New is [NewWithConfig], but the schema is one prepare has run on: one
// another test is done with and that was reset, or, when there is none, a
// new one prepared now. See [Template] for when a schema is kept.
func (tp *Template) New(t testing.TB, configure func(*pgxpool.Config)) *DB {
	t.Helper()
	s := shared(t)
	db, _ := tp.take(t, s, 0, nil)
	if db.Pool == nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		db.Pool = s.openTestPool(ctx, t, db.Schema, configure)
	}
	return db
}

// NewPooled is [Template.New] with a pool of maxConns connections and no
// other setting but a PrepareConn of its own, which the schema keeps when
// the test ends, with up to four of the sessions it then has, for the next
// test NewPooled gives the schema to: a PostgreSQL session costs a
// process, and its start and end cost more CPU than most tests do with it.
// The binary keeps 48 sessions at most; past that, the schemas longest
// unused lose theirs first.
//
// A session kept is reset as DISCARD ALL would reset it, but for the
// statements pgx's statement cache prepared (and their plans), which the
// cache knows: cursors closed, session authorization and every setting
// back to how the session started (RESET ALL), no LISTEN, no notification
// received and left unread in pgx's connection, no advisory lock, no
// temporary table, no sequence value remembered, no statement a test
// prepared by name (PREPARE, pgx's Conn.Prepare: then the cache's go too,
// as they do when the test dropped them in SQL, with DISCARD ALL say). Two
// traces stay: a custom setting a test SET (myapp.flag) is defined and
// empty, as after DISCARD ALL, where a fresh session has none; and a
// statement the cache prepared may be planned generically at once, if the
// last test ran it five times. The pool is kept only if, when the test
// ends, none of its connections is in use and every session it keeps is
// reset without error; otherwise it is closed as [Template.New]'s is. A
// test must therefore not count the sessions of its schema, or ask for one
// that has not run a statement; it uses [Template.New] then.
//
// Once the test has ended, the pool refuses a connection to whoever asks
// (a goroutine the test left running), as a closed pool would, and the
// next test gets another pool. A goroutine that waits to ask until the
// next test has the pool is not told apart from that test's own: a test
// must stop what it started on the pool before it ends.
func (tp *Template) NewPooled(t testing.TB, maxConns int32) *DB {
	t.Helper()
	s := shared(t)
	db, gate := tp.take(t, s, maxConns, nil)
	if db.Pool == nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		db.Pool = s.openTestPool(ctx, t, db.Schema, func(c *pgxpool.Config) {
			c.MaxConns = maxConns
			c.PrepareConn = gate.prepareConn
		})
	}
	return db
}

// take gives t a schema of tp, prepared, and ends t's use of it when t
// ends: it closes the DB's Pool, which the caller sets unless take did,
// and gives the schema back or drops it. With pooled above 0 (NewPooled's
// maxConns), the DB's Pool is the one the schema kept, if it has one of
// that size that no goroutine asked a connection of meanwhile, and is
// kept in turn when it can be; the gate returned is that pool's, or the
// one the caller gives the pool it opens (its PrepareConn). With pooled
// 0 the gate is nil. With b, the DB is for [Bouncer.NewFrom]: its
// bouncerDB is the PgBouncer database name the caller opens its Pool
// under, and PgBouncer's server sessions under it are kept in turn when
// they can be.
func (tp *Template) take(t testing.TB, s *server, pooled int32, b *Bouncer) (*DB, *poolGate) {
	t.Helper()
	tp.mu.Lock()
	var p *pooledSch
	if n := len(tp.free); n > 0 {
		p, tp.free = tp.free[n-1], tp.free[:n-1]
	}
	tp.mu.Unlock()
	fresh := p == nil
	if fresh {
		p = &pooledSch{schema: s.createSchema(t)}
	}
	db := &DB{Schema: p.schema, URL: withSchema(s.url, p.schema)}
	var gate *poolGate
	if p.pool != nil {
		if pooled > 0 && p.maxConns == pooled && p.gate.open() {
			db.Pool, gate = p.pool, p.gate
		} else {
			p.pool.Close()
		}
	}
	if pooled > 0 && gate == nil {
		gate = &poolGate{}
	}
	if b != nil {
		// The server sessions kept under p.bouncerDB serve this test;
		// under a new name, none of an earlier test's can.
		db.bouncerDB = p.bouncerDB
		if db.bouncerDB == "" {
			db.bouncerDB = p.schema + "_" + randomHex(4)
		}
	}
	// Any other test's cleanup terminates PgBouncer's sessions kept under
	// p.bouncerDB (they carry the schema's name): the name is dropped.
	releaseSessions(p.kept)
	p.pool, p.gate, p.kept, p.bouncerDB, p.bouncerPIDs = nil, nil, 0, "", nil
	prepared := !fresh
	t.Cleanup(func() {
		keep := func(ctx context.Context, pool *pgxpool.Pool, idle []int32) bool {
			return prepared && !t.Failed() && tp.put(ctx, s, p, pool, gate, pooled, idle)
		}
		switch {
		case !prepared || t.Failed():
		case pooled > 0 && s.endPooledSchema(t, db, gate, tp.evictSessions, keep):
			return
		case b != nil && s.endBouncerSchema(t, db, b, tp.evictSessions, func(ctx context.Context, idle []int32) bool {
			p.bouncerDB, p.bouncerPIDs = db.bouncerDB, idle
			if keep(ctx, nil, idle) {
				return true
			}
			p.bouncerDB, p.bouncerPIDs = "", nil
			return false
		}):
			return
		}
		s.endSchema(t, db, func(ctx context.Context) bool { return keep(ctx, nil, nil) })
	})
	if fresh {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := tp.prepareSchema(ctx, t, s, p); err != nil {
			t.Fatalf("pgtest: prepare schema %s: %v", p.schema, err)
		}
		prepared = true
	}
	return db, gate
}

// evictSessions closes the pools of the schemas longest in tp's free
// list, oldest first, and terminates the PgBouncer server sessions they
// keep, until n sessions of the budget of kept sessions are free or none
// is left to end: a schema deep in the list may wait long for a test, and
// its sessions would hold the budget meanwhile.
func (tp *Template) evictSessions(n int) {
	var closing []*pgxpool.Pool
	var ending []int32
	tp.mu.Lock()
	for _, p := range tp.free {
		if freeSessions() >= n {
			break
		}
		if p.pool != nil {
			closing = append(closing, p.pool)
		}
		ending = append(ending, p.bouncerPIDs...)
		releaseSessions(p.kept)
		p.pool, p.gate, p.kept, p.bouncerDB, p.bouncerPIDs = nil, nil, 0, "", nil
	}
	tp.mu.Unlock()
	for _, pool := range closing {
		pool.Close()
	}
	if len(ending) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		// Under a name no test opens again: PgBouncer drops them unused.
		_ = srv.adminExec(ctx, `SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, ending)
	}
}

// poolGate shuts the pool of a test of [Template.NewPooled] when the test
// ends, for as long as the pool waits for the next test of its schema: a
// goroutine the test left running on it then gets an error, as from a
// closed pool, rather than reach the schema the next test gets, and that
// test gets another pool.
type poolGate struct {
	state atomic.Int32 // gateOpen, gateShut or gateRefused
}

const (
	gateOpen    = iota // the pool's test runs
	gateShut           // the test has ended
	gateRefused        // and a connection was asked for since: the pool is not given to another test
)

// errPoolShut is what a goroutine gets that asks the pool of a test
// that has ended for a connection.
var errPoolShut = errors.New("pgtest: the pool's test has ended")

// prepareConn is the pool's PrepareConn: it refuses every connection
// once the gate is shut.
func (g *poolGate) prepareConn(context.Context, *pgx.Conn) (bool, error) {
	if g.state.Load() == gateOpen {
		return true, nil
	}
	g.state.Store(gateRefused)
	return true, errPoolShut
}

// shut shuts the gate, as the pool's test ends.
func (g *poolGate) shut() { g.state.CompareAndSwap(gateOpen, gateShut) }

// open opens the gate for the pool's next test and reports whether it
// could: not when a connection was asked for while it was shut.
func (g *poolGate) open() bool { return g.state.CompareAndSwap(gateShut, gateOpen) }

// refused reports whether a connection was asked for while the gate was
// shut.
func (g *poolGate) refused() bool { return g.state.Load() == gateRefused }

// prepareSchema runs prepare on p's new schema, and records what it left
// there: the rows of its tables, the positions of its sequences and, for
// the first schema, the fingerprint.
func (tp *Template) prepareSchema(ctx context.Context, t testing.TB, s *server, p *pooledSch) error {
	t.Helper()
	pool := s.openTestPool(ctx, t, p.schema, func(c *pgxpool.Config) { c.MaxConns = 2 })
	err := tp.prepare(ctx, &DB{Pool: pool, Schema: p.schema, URL: withSchema(s.url, p.schema)})
	pool.Close()
	if err != nil {
		return err
	}
	tables, err := schemaTables(ctx, s.admin, p.schema)
	if err != nil {
		return err
	}
	p.rows = map[string]string{}
	for _, table := range tables {
		var rows *string
		if err := s.admin.QueryRow(ctx, `SELECT json_agg(t)::text FROM `+pgx.Identifier{p.schema, table.name}.Sanitize()+` t`).Scan(&rows); err != nil {
			return err
		}
		if rows != nil {
			p.rows[table.name] = *rows
		}
	}
	if err := s.admin.QueryRow(ctx, `SELECT coalesce(jsonb_object_agg(c.relname, pg_sequence_last_value(c.oid))
    FILTER (WHERE pg_sequence_last_value(c.oid) IS NOT NULL), '{}')::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'S'`, p.schema).Scan(&p.seqs); err != nil {
		return err
	}
	if err := s.admin.QueryRow(ctx, `SELECT coalesce(json_agg(json_build_object('name', c.relname, 'pages', c.relpages, 'tuples', c.reltuples, 'allvisible', c.relallvisible)), '[]')::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'i', 'I')`, p.schema).Scan(&p.sizes); err != nil {
		return err
	}
	tp.mu.Lock()
	first := tp.fingerprint == ""
	tp.mu.Unlock()
	if first {
		fp, err := fingerprint(ctx, s.admin, p.schema)
		if err != nil {
			return err
		}
		tp.mu.Lock()
		if tp.fingerprint == "" {
			tp.fingerprint = fp
		}
		tp.mu.Unlock()
	}
	return nil
}

// errSchemaInUse and errSchemaChanged say why a schema is not kept.
var (
	errSchemaInUse   = errors.New("a session is still connected to the schema")
	errSchemaChanged = errors.New("the schema differs from a freshly prepared one")
)

// put resets p's schema, whose test has ended and whose sessions are
// gone (but for the idle sessions of pool, whose process ids are idle),
// and gives it back to the template, with pool and its gate if not nil,
// if it is then as prepare left it. It reports whether it did; if not,
// the schema is as the test left it.
func (tp *Template) put(ctx context.Context, s *server, p *pooledSch, pool *pgxpool.Pool, gate *poolGate, maxConns int32, idle []int32) bool {
	tp.mu.Lock()
	want := tp.fingerprint
	tp.mu.Unlock()
	if want == "" || s.resetSchema(ctx, p, want, idle) != nil {
		return false
	}
	p.pool, p.gate, p.maxConns, p.kept = pool, gate, maxConns, len(idle)
	tp.mu.Lock()
	tp.free = append(tp.free, p)
	tp.mu.Unlock()
	return true
}

// resetSchema truncates every table of p's schema, puts back the rows
// prepare wrote, zeroes the tables' activity counters and sets every
// sequence back, in one transaction, which fails at once when a session
// of the schema is connected (but an idle one whose process id is in
// idle) and commits only if the schema's fingerprint is then want.
func (s *server) resetSchema(ctx context.Context, p *pooledSch, want string, idle []int32) error {
	if idle == nil {
		idle = []int32{} // not NULL, which would hide every idle session
	}
	return pgx.BeginFunc(ctx, s.admin, func(tx pgx.Tx) error {
		// A lock held from outside (another schema's session) fails the
		// reset, and the schema is dropped instead, rather than wait.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
			return err
		}
		var busy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()
  AND NOT (pid = ANY($2::int[]) AND state = 'idle'))`,
			p.schema, idle).Scan(&busy); err != nil {
			return err
		}
		if busy {
			return errSchemaInUse
		}
		// A table the test wrote nothing to, as its empty file shows, is as
		// prepare left it. The others are truncated.
		tables, err := schemaTables(ctx, tx, p.schema)
		if err != nil {
			return err
		}
		var written []string
		for _, table := range tables {
			if _, ok := p.rows[table.name]; ok || table.size > 0 {
				written = append(written, pgx.Identifier{p.schema, table.name}.Sanitize())
			}
		}
		if len(written) > 0 {
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(written, ", ")+` RESTART IDENTITY`); err != nil {
				return err
			}
			// TRUNCATE records its tables and their indexes as never
			// vacuumed, with no pages, and so does a REINDEX; a new index
			// has one page, which the planner's estimates for a partial
			// index depend on. The sizes prepare left are put back.
			if _, err := tx.Exec(ctx, `UPDATE pg_catalog.pg_class c SET relpages = x.pages, reltuples = x.tuples, relallvisible = x.allvisible
FROM json_to_recordset($2::json) AS x(name text, pages integer, tuples real, allvisible integer)
WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) AND c.relname = x.name
  AND (c.relpages, c.reltuples, c.relallvisible) IS DISTINCT FROM (x.pages, x.tuples, x.allvisible)`, p.schema, p.sizes); err != nil {
				return err
			}
		}
		// The activity counters of its tables (and their TOAST tables),
		// which autovacuum reads, are zeroed: the test's dead rows and
		// changes would make autovacuum vacuum and analyze the schema in
		// the next test, as it would not a fresh one. The reset's own
		// changes are counted, as prepare's are in a fresh schema.
		if _, err := tx.Exec(ctx, `SELECT pg_stat_reset_single_table_counters(r.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, LATERAL (VALUES (c.oid), (nullif(c.reltoastrelid, 0))) AS r(oid)
WHERE n.nspname = $1 AND r.oid IS NOT NULL`, p.schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT setval(c.oid, coalesce(($2::jsonb ->> c.relname)::bigint, s.seqstart), $2::jsonb ? c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_sequence s ON s.seqrelid = c.oid
WHERE n.nspname = $1`, p.schema, p.seqs); err != nil {
			return err
		}
		for _, table := range slices.Sorted(maps.Keys(p.rows)) {
			ident := pgx.Identifier{p.schema, table}.Sanitize()
			if _, err := tx.Exec(ctx, `INSERT INTO `+ident+` SELECT * FROM json_populate_recordset(NULL::`+ident+`, $1::json)`, p.rows[table]); err != nil {
				return err
			}
		}
		got, err := fingerprint(ctx, tx, p.schema)
		if err != nil {
			return err
		}
		if got != want {
			return errSchemaChanged
		}
		return nil
	})
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// table is a table of a schema, and the size of its main file.
type table struct {
	name string
	size int64
}

// schemaTables lists the tables of schema, sorted by name.
func schemaTables(ctx context.Context, q querier, schema string) ([]table, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`, schema)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (table, error) {
		var t table
		err := row.Scan(&t.name, &t.size)
		return t, err
	})
}

// fingerprintSQL describes the schema named $1, one line per object, sorted,
// with the schema's name replaced by @: the same text for two schemas that
// only their names tell apart. Columns a server version lacks are read from
// to_jsonb of the catalog row, as NULL.
const fingerprintSQL = `WITH ns AS (SELECT n.oid, n.nspowner, n.nspacl FROM pg_namespace n WHERE n.nspname = $1),
cls AS (SELECT c.* FROM pg_class c JOIN ns ON c.relnamespace = ns.oid)
SELECT coalesce(replace(string_agg(line, E'\n' ORDER BY line COLLATE "C"), $1, '@'), '') FROM (
  SELECT format('schema owner=%s acl=%L', nspowner::regrole, nspacl) FROM ns
  UNION ALL
  SELECT format('object %s', pg_describe_object(d.classid, d.objid, d.objsubid))
  FROM pg_depend d JOIN ns ON d.refobjid = ns.oid WHERE d.refclassid = 'pg_namespace'::regclass
  UNION ALL
  SELECT format('class %I kind=%s persistence=%s owner=%s acl=%L options=%L rls=%s/%s replident=%s pages=%s tuples=%s allvisible=%s size=%s',
    c.relname, c.relkind, c.relpersistence, c.relowner::regrole, c.relacl, c.reloptions, c.relrowsecurity, c.relforcerowsecurity,
    c.relreplident, c.relpages, c.reltuples, c.relallvisible, pg_relation_size(c.oid))
  FROM cls c
  UNION ALL
  SELECT format('column %I.%I num=%s type=%s notnull=%s dropped=%s identity=%L generated=%L compression=%L storage=%s collation=%s statistics=%s options=%L acl=%L missing=%s/%L default=%L',
    c.relname, a.attname, a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attisdropped, a.attidentity, a.attgenerated,
    to_jsonb(a) ->> 'attcompression', a.attstorage, a.attcollation, a.attstattarget, a.attoptions, a.attacl, a.atthasmissing, a.attmissingval,
    pg_get_expr(d.adbin, d.adrelid))
  FROM cls c JOIN pg_attribute a ON a.attrelid = c.oid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE a.attnum > 0
  UNION ALL
  SELECT format('index %I: %s valid=%s ready=%s live=%s clustered=%s replident=%s',
    c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid, i.indisready, i.indislive, i.indisclustered, i.indisreplident)
  FROM cls c JOIN pg_index i ON i.indexrelid = c.oid
  UNION ALL
  SELECT format('constraint %I on %s type %s: %s deferrable=%s deferred=%s validated=%s',
    co.conname, co.conrelid::regclass, co.contypid::regtype, pg_get_constraintdef(co.oid), co.condeferrable, co.condeferred, co.convalidated)
  FROM pg_constraint co JOIN ns ON co.connamespace = ns.oid
  UNION ALL
  SELECT format('function %I(%s) returns %s kind=%s volatile=%s strict=%s secdef=%s lang=%s config=%L acl=%L body=%L',
    p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid), p.prokind, p.provolatile, p.proisstrict,
    p.prosecdef, p.prolang, p.proconfig, p.proacl, p.prosrc)
  FROM pg_proc p JOIN ns ON p.pronamespace = ns.oid
  UNION ALL
  SELECT format('trigger %s enabled=%s', pg_get_triggerdef(tg.oid), tg.tgenabled)
  FROM pg_trigger tg JOIN cls c ON tg.tgrelid = c.oid WHERE NOT tg.tgisinternal
  UNION ALL
  SELECT format('rule %s enabled=%s', pg_get_ruledef(r.oid), r.ev_enabled) FROM pg_rewrite r JOIN cls c ON r.ev_class = c.oid
  UNION ALL
  SELECT format('policy %I on %I cmd=%s permissive=%s roles=%s using=%L check=%L', pol.polname, c.relname, pol.polcmd,
    pol.polpermissive, pol.polroles::regrole[], pg_get_expr(pol.polqual, pol.polrelid), pg_get_expr(pol.polwithcheck, pol.polrelid))
  FROM pg_policy pol JOIN cls c ON pol.polrelid = c.oid
  UNION ALL
  SELECT format('type %s kind=%s base=%s notnull=%s default=%L labels=%L', format_type(ty.oid, NULL), ty.typtype,
    format_type(ty.typbasetype, ty.typtypmod), ty.typnotnull, ty.typdefault,
    (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = ty.oid))
  FROM pg_type ty JOIN ns ON ty.typnamespace = ns.oid
  UNION ALL
  SELECT format('sequence %I type=%s start=%s increment=%s max=%s min=%s cache=%s cycle=%s last=%L', c.relname,
    format_type(sq.seqtypid, NULL), sq.seqstart, sq.seqincrement, sq.seqmax, sq.seqmin, sq.seqcache, sq.seqcycle,
    pg_sequence_last_value(c.oid))
  FROM cls c JOIN pg_sequence sq ON sq.seqrelid = c.oid
  UNION ALL
  SELECT format('comment on %s: %L', pg_describe_object(de.classoid, de.objoid, de.objsubid), de.description)
  FROM pg_description de
  WHERE (de.classoid = 'pg_namespace'::regclass AND de.objoid IN (SELECT oid FROM ns))
     OR (de.classoid = 'pg_class'::regclass AND de.objoid IN (SELECT oid FROM cls))
     OR (de.classoid = 'pg_proc'::regclass AND de.objoid IN (SELECT p.oid FROM pg_proc p JOIN ns ON p.pronamespace = ns.oid))
     OR (de.classoid = 'pg_type'::regclass AND de.objoid IN (SELECT ty.oid FROM pg_type ty JOIN ns ON ty.typnamespace = ns.oid))
     OR (de.classoid = 'pg_constraint'::regclass AND de.objoid IN (SELECT co.oid FROM pg_constraint co JOIN ns ON co.connamespace = ns.oid))
  UNION ALL
  SELECT format('statistics %I.%I', st.tablename, st.attname) FROM pg_stats st WHERE st.schemaname = $1
) AS lines(line)`

// fingerprint returns fingerprintSQL's text for schema.
func fingerprint(ctx context.Context, q querier, schema string) (string, error) {
	var fp string
	if err := q.QueryRow(ctx, fingerprintSQL, schema).Scan(&fp); err != nil {
		return "", fmt.Errorf("fingerprint of schema %s: %w", schema, err)
	}
	return fp, nil
}

// dropTemplateSchemas drops the schemas the templates tps keep, on an
// external server, where they would outlive the binary (a throwaway
// cluster is removed whole), and forgets them: a later Main has a server
// of its own.
func dropTemplateSchemas(s *server, tps []*Template) {
	for _, tp := range tps {
		tp.mu.Lock()
		free := tp.free
		tp.free, tp.fingerprint = nil, ""
		tp.mu.Unlock()
		for _, p := range free {
			if p.pool != nil {
				p.pool.Close()
				releaseSessions(p.kept)
			}
		}
		if s.cluster != nil {
			continue
		}
		for _, p := range free {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			if err := s.adminExec(ctx, dropSchemaSQL(p.schema)); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: drop schema %s: %v\n", p.schema, err)
			}
			cancel()
		}
	}
}
