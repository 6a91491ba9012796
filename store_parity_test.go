package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The differential test of the two stores: one seeded sequence of
// operations (deliveries through the synchronous Handler and the inbox's,
// WorkDue on a fake clock, Redrive and RedriveByKind, List, Stats, Forget,
// Prune, tasks) is applied to a MemoryStore and a PgxStore side by side,
// and every answer, every Result, every record and the user's own state
// must be the same.
// The README promises the memory store the PostgreSQL store's semantics.

// parityStore is what the test asks of each store.
type parityStore interface {
	idempotencytest.LookupStore
	Prune(ctx context.Context, r idempotency.Retention) (idempotency.PruneReport, error)
	Forget(ctx context.Context, eventID string) (bool, error)
}

// paritySpec is one event the sequence delivers, whole: a redelivery of
// its id is the same bytes' content.
type paritySpec struct {
	id, typ, object, mode, account string
	livemode                       bool
	created                        int64
	inbox                          bool // delivered to the inbox's handler, else to the synchronous one
}

// paritySide is one store with its handlers, inbox and user state.
type paritySide struct {
	name    string
	store   parityStore
	add     func(ctx context.Context, tx idempotency.Tx, name string, delta int) error
	state   func(t *testing.T) map[string]int
	sync    http.Handler
	ingest  http.Handler
	inbox   *idempotency.Inbox
	receipt *idempotency.Task[parityReceipt]

	leased []idempotency.InboxLeased // leases taken and not yet applied, by event id

	mu       sync.Mutex
	results  []string
	attempts map[string]int
	effects  map[string]int // task runs that succeeded, per task key: outside any transaction
}

type parityReceipt struct {
	Mode string `json:"mode"`
}

var errParity = errors.New("downstream refused")

func (s *paritySide) onResult(r idempotency.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	errText := ""
	if r.Err != nil {
		errText = r.Err.Error()
	}
	s.results = append(s.results, fmt.Sprintf("id=%s type=%s obj=%s out=%s status=%d state=%s attempt=%d kind=%s err=%q panics=%d",
		r.EventID, r.EventType, r.ObjectID, r.Outcome, r.Status, r.State, r.Attempt, r.Kind, errText, len(r.AfterCommitPanics)))
}

// takeResults returns the results reported since the last call, sorted:
// WorkDue's order among events due together is the store's.
func (s *paritySide) takeResults() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.results
	s.results = nil
	sort.Strings(out)
	return out
}

func (s *paritySide) attempt(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[id]++
	return s.attempts[id]
}

// parityFailing reads a mode "failN" (fail the first N attempts) or "fail"
// (always).
func parityFailing(mode string, attempt int) error {
	switch {
	case mode == "fail":
		return fmt.Errorf("%w: attempt %d", errParity, attempt)
	case strings.HasPrefix(mode, "fail"):
		var n int
		fmt.Sscanf(mode, "fail%d", &n)
		if attempt <= n {
			return fmt.Errorf("%w: attempt %d of %d", errParity, attempt, n)
		}
	}
	return nil
}

func newParitySide(t *testing.T, name string, store parityStore, clock *idempotencytest.Clock, clockSync bool, icfg idempotency.InboxConfig,
	add func(ctx context.Context, tx idempotency.Tx, name string, delta int) error, state func(t *testing.T) map[string]int,
) *paritySide {
	s := &paritySide{name: name, store: store, add: add, state: state, attempts: map[string]int{}, effects: map[string]int{}}
	hs := idempotency.NewHandlers()
	grant := idempotency.NewAction(hs, idempotency.ActionSpec{Name: "grant", Key: "invoice id", Owners: []string{"invoice.paid", "invoice.payment_succeeded"}, KeyIsObjectID: true},
		func(ctx context.Context, tx idempotency.Tx, key string, _ struct{}) error {
			return s.add(ctx, tx, "grant:"+key, 1)
		})
	s.receipt = idempotency.NewTask(hs, "receipt", func(ctx context.Context, run idempotency.TaskRun[parityReceipt]) error {
		n := s.attempt(run.ID)
		switch run.Args.Mode {
		case "snooze":
			if n == 1 {
				return idempotency.Snooze(time.Hour)
			}
		case "perm":
			return idempotency.Permanent(fmt.Errorf("%w: for good", errParity))
		case "snooze0":
			if n == 1 {
				return idempotency.Snooze(0)
			}
		case "panic":
			if n == 1 {
				panic("task panicked")
			}
		case "tskip": // its event applied, the task skipped
			return idempotency.Skip("mode tskip of a task")
		default:
			if err := parityFailing(run.Args.Mode, n); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.effects[run.IdempotencyKey]++
		s.mu.Unlock()
		return nil
	})
	invoice := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		n := s.attempt(ev.ID)
		mode := ev.Object.Metadata["mode"]
		if mode == "skip" {
			return idempotency.Skip("mode skip of " + ev.ID)
		}
		if mode == "panic" && n == 1 {
			panic("handler panicked on " + ev.ID)
		}
		tx.AfterCommit(func(context.Context) {
			if mode == "acpanic" {
				panic("after commit panicked")
			}
		})
		key := parityKey(ev.Account, ev.ObjectID)
		first, err := tx.Guard(ctx, "invoice", key)
		if err != nil {
			return err
		}
		if first {
			if err := s.add(ctx, tx, "credit:"+key, 1); err != nil {
				return err
			}
		}
		if _, err := grant.Do(ctx, tx, key, struct{}{}); err != nil {
			return err
		}
		if err := s.add(ctx, tx, "applied:"+ev.ID, 1); err != nil {
			return err
		}
		if ev.Type == "invoice.payment_succeeded" {
			if _, err := s.receipt.Enqueue(ctx, tx, key, parityReceipt{Mode: ev.Object.Metadata["task"]}); err != nil {
				return err
			}
		}
		return parityFailing(mode, n)
	}
	idempotency.On(hs, "invoice.paid", invoice)
	idempotency.On(hs, "invoice.payment_succeeded", invoice)
	idempotency.On(hs, "checkout.session.completed", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.CheckoutSession]) error {
		return idempotency.Skip("no account in metadata")
	})
	idempotency.On(hs, "customer.subscription.updated", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
		n := s.attempt(ev.ID)
		o, err := idempotency.CheckOrder(ctx, tx, "sub", parityKey(ev.Account, ev.ObjectID), ev.Created)
		if err != nil {
			return err
		}
		if err := s.add(ctx, tx, "order:"+ev.ID+":"+o.String(), 1); err != nil {
			return err
		}
		if ev.Object.Metadata["mode"] == "fail" {
			_, err := grant.Do(ctx, tx, ev.ObjectID, struct{}{}) // not an owner: fails
			return err
		}
		return parityFailing(ev.Object.Metadata["mode"], n)
	})
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), RecordIgnored: true, OnResult: s.onResult}
	syncCfg := cfg
	if clockSync {
		syncCfg.Now = clock.Now
	}
	syncH, err := idempotency.NewHandler(store, hs, syncCfg)
	require.NoError(t, err)
	icfg.Now, icfg.Logger, icfg.OnResult = clock.Now, discardLogger(), s.onResult
	in, err := idempotency.NewInbox(store, hs, icfg)
	require.NoError(t, err)
	ingest, err := in.Handler(cfg)
	require.NoError(t, err)
	s.sync, s.ingest, s.inbox = syncH, ingest, in
	return s
}

// parityKey is what the handlers key their guards, actions, tasks and
// CheckOrder records by: the object, its id within its account. One id
// under two accounts names two objects, which the inbox applies in no set
// order (PgxStore leaves the order of events due together to the query
// plan): keyed by the id alone, whichever committed first would win the
// key, and the stores could differ in the user's state.
func parityKey(account, objectID string) string {
	if account == "" {
		return objectID
	}
	return account + "/" + objectID
}

// parityPayload is the fixture of spec's type as spec.
func parityPayload(t *testing.T, sp paritySpec) []byte {
	var ev map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, sp.typ), &ev))
	ev["id"] = sp.id
	ev["created"] = sp.created
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	obj["id"] = sp.object
	md := map[string]any{"mode": sp.mode, "task": sp.mode}
	obj["metadata"] = md
	ev["livemode"] = sp.livemode
	if sp.account != "" {
		ev["account"] = sp.account
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// parityTimes says what a time is: zero, a time of the machine's clock
// (before the fake clock's start), or the fake clock's, exactly.
type parityTimes struct{ start time.Time }

func (p parityTimes) of(t time.Time) string {
	switch {
	case t.IsZero():
		return "0"
	case t.Before(p.start):
		return "real"
	default:
		return "+" + t.Sub(p.start).String()
	}
}

func (p parityTimes) record(r idempotency.InboxRecord) string {
	created := fmt.Sprint(r.Created.Unix())
	if r.Kind == idempotency.KindTask {
		created = p.of(r.Created)
	}
	return fmt.Sprintf("%s %s type=%s obj=%s acct=%s live=%v api=%s created=%s state=%s attempt=%d err=%q received=%s attempted=%s next=%s finished=%s",
		r.Kind, r.EventID, r.EventType, r.ObjectID, r.Account, r.Livemode, r.APIVersion, created, r.State, r.Attempt, r.LastError,
		p.of(r.ReceivedAt), p.of(r.AttemptedAt), p.of(r.NextAttemptAt), p.of(r.FinishedAt))
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestStoreParity runs the same seeded sequence on both stores and
// compares every observable result after every step.
func TestStoreParity(t *testing.T) {
	t.Parallel()
	seeds := []uint64{1, 2, 3}
	if v := os.Getenv("PARITY_SEEDS"); v != "" { // more seeds, to search: PARITY_SEEDS=100
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		for i := 4; i < 4+n; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runParity(t, seed, 250)
		})
	}
}

func runParity(t *testing.T, seed uint64, steps int) {
	ctx := t.Context()
	// The fake clock starts past the machine's, so that the two never meet:
	// times of the machine's clock (the ledger's) read "real".
	start := time.Now().Add(30*time.Minute + 30*time.Second).Truncate(time.Second)
	clock := idempotencytest.NewClock(start)
	pt := parityTimes{start: start}

	// The synchronous Handler dates what it records on the fake clock
	// (Config.Now) for odd seeds, on the machine's for even ones.
	clockSync := seed%2 == 1
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	// The inbox's settings, per seed.
	backoffs := []func(int) time.Duration{
		func(n int) time.Duration { return time.Duration(n) * time.Minute },
		func(int) time.Duration { return 0 },
		func(n int) time.Duration { return time.Duration(n)*time.Second + 700*time.Nanosecond },
	}
	icfg := idempotency.InboxConfig{Workers: 1 + rng.IntN(3), MaxAttempts: []int{1, 2, 3, 3, 5}[rng.IntN(5)], Backoff: backoffs[rng.IntN(len(backoffs))]}
	t.Logf("seed %d: inbox Workers %d MaxAttempts %d; synchronous Handler on the fake clock: %v", seed, icfg.Workers, icfg.MaxAttempts, clockSync)
	mem := idempotency.NewMemoryStore()
	c := &counters{m: map[string]int{}}
	pg := newPgBackend(t, idempotency.PgxConfig{})
	sides := []*paritySide{
		newParitySide(t, "memory", mem, clock, clockSync, icfg, c.add, func(*testing.T) map[string]int {
			c.mu.Lock()
			defer c.mu.Unlock()
			out := map[string]int{}
			for k, v := range c.m {
				if v != 0 {
					out[k] = v
				}
			}
			return out
		}),
		newParitySide(t, "postgres", pg.store, clock, clockSync, icfg, pg.add, func(t *testing.T) map[string]int {
			return counterValues(t, pg.db.Pool, `SELECT name, value FROM counters WHERE value <> 0`)
		}),
	}

	types := []string{"invoice.paid", "invoice.paid", "invoice.payment_succeeded", "invoice.payment_succeeded",
		"checkout.session.completed", "customer.subscription.updated", "charge.refunded"}
	modes := []string{"ok", "ok", "ok", "skip", "fail1", "fail2", "fail", "snooze", "perm", "snooze0", "panic", "acpanic"}
	oddObjects := []string{"in_par_\x00nul", "in_par_" + strings.Repeat("x", 1100), "in_par_ü€😀", "", " in_par_0"}
	var specs []paritySpec
	for i := range 44 {
		specs = append(specs, paritySpec{
			id:       fmt.Sprintf("evt_par_%d_%02d", seed, i),
			typ:      types[rng.IntN(len(types))],
			object:   fmt.Sprintf("in_par_%d", rng.IntN(8)),
			account:  []string{"", "", "acct_par_1", "acct_par_2"}[rng.IntN(4)],
			livemode: rng.IntN(4) == 0,
			mode:     modes[rng.IntN(len(modes))],
			created:  1756742400 + int64(rng.IntN(20)),
			inbox:    rng.IntN(3) > 0,
		})
	}
	for i := range 4 {
		specs[40+i].object = oddObjects[rng.IntN(len(oddObjects))]
		specs[40+i].typ = types[rng.IntN(4)]
	}
	specs[36].id = fmt.Sprintf("evt_par_%d_ü€😀", seed)
	specs[37].id = fmt.Sprintf("evt_par_%d_", seed) + strings.Repeat("l", 240)
	specs[38].id = fmt.Sprintf("evt_par_%d_\x00", seed)
	specs[39].id = fmt.Sprintf("evt_par_%d_ with space", seed)
	ids := func() []string {
		var out []string
		for _, sp := range specs {
			out = append(out, sp.id)
		}
		for i := range 8 {
			out = append(out, sides[0].receipt.ID(fmt.Sprintf("in_par_%d", i)))
		}
		return out
	}()
	objects := []string{"in_par_0", "in_par_1", "in_par_3", "in_par_7", "in_par_9"}
	seen := []time.Time{start} // clock times, for Since and Until

	step := 0
	tally := map[string]int{}
	defer func() {
		if testing.Verbose() {
			t.Logf("seed %d: results seen: %v", seed, tally)
		}
	}()
	// same fails the test unless both sides gave the same answer.
	same := func(what string, f func(s *paritySide) string) {
		t.Helper()
		a, b := f(sides[0]), f(sides[1])
		if a != b {
			t.Fatalf("seed %d step %d: %s differs:\n memory:   %s\n postgres: %s", seed, step, what, a, b)
		}
	}
	pickTime := func() time.Time {
		if rng.IntN(4) == 0 {
			return time.Time{}
		}
		return seen[rng.IntN(len(seen))]
	}
	pickIDs := func() []string {
		if rng.IntN(2) == 0 {
			return nil
		}
		var out []string
		for range 1 + rng.IntN(4) {
			out = append(out, ids[rng.IntN(len(ids))])
		}
		return out
	}
	pickKind := func() idempotency.InboxKind {
		return []idempotency.InboxKind{"", "", idempotency.KindEvent, idempotency.KindTask}[rng.IntN(4)]
	}
	pickType := func() string {
		if rng.IntN(2) == 0 {
			return ""
		}
		return append(types, "receipt")[rng.IntN(len(types)+1)]
	}

	compareState := func() {
		same("user state", func(s *paritySide) string { return fmt.Sprint(s.state(t)) })
		same("task effects", func(s *paritySide) string {
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Sprint(s.effects)
		})
		for _, sp := range specs {
			same("ledger of "+sp.id, func(s *paritySide) string {
				r, ok, err := s.store.LookupEvent(ctx, sp.id)
				return fmt.Sprintf("%v %v %s %s %s %s %v %s received=%s processed=%s", ok, errString(err), r.EventType, r.ObjectID, r.Account,
					r.Outcome, r.Livemode, r.SkipReason, pt.of(r.ReceivedAt), pt.of(r.ProcessedAt))
			})
		}
		for i := range 8 {
			for _, scope := range []string{"invoice", "action:grant"} {
				for _, account := range []string{"", "acct_par_1", "acct_par_2"} {
					key := parityKey(account, fmt.Sprintf("in_par_%d", i))
					same("guard "+scope+" "+key, func(s *paritySide) string {
						r, ok, err := s.store.LookupGuard(ctx, scope, key)
						return fmt.Sprintf("%v %v %s %s", ok, errString(err), r.EventID, pt.of(r.ClaimedAt))
					})
				}
			}
		}
		same("ListEvents", func(s *paritySide) string {
			recs, err := s.store.ListEvents(ctx, idempotency.EventFilter{Limit: 1000})
			var out []string
			for _, r := range recs {
				out = append(out, r.EventID+":"+string(r.Outcome))
			}
			sort.Strings(out)
			return errString(err) + " " + strings.Join(out, ",")
		})
	}

	for step = 0; step < steps; step++ {
		switch op := rng.IntN(20); {
		case op < 6: // a delivery
			sp := specs[rng.IntN(len(specs))]
			if rng.IntN(8) == 0 {
				sp.inbox = !sp.inbox // the other way in, now and then
			}
			payload := parityPayload(t, sp)
			same(fmt.Sprintf("answer to %s (%s %s %s inbox=%v)", sp.id, sp.typ, sp.object, sp.mode, sp.inbox), func(s *paritySide) string {
				h := s.sync
				if sp.inbox {
					h = s.ingest
				}
				a := idempotencytest.Deliver(h, payload, testSecret)
				return fmt.Sprintf("%d %s", a.Status, a.Body)
			})
		case op < 8:
			d := []time.Duration{1500 * time.Nanosecond, 999 * time.Nanosecond, time.Second, time.Minute, 3 * time.Minute, time.Hour, 24 * time.Hour, 8 * 24 * time.Hour, 50 * 24 * time.Hour}[rng.IntN(9)]
			clock.Advance(d)
			seen = append(seen, clock.Now())
		case op < 11:
			same("WorkDue", func(s *paritySide) string {
				n, err := s.inbox.WorkDue(ctx)
				return fmt.Sprintf("%d %s", n, errString(err))
			})
		case op < 12:
			f := idempotency.RedriveFilter{Kind: pickKind(), EventIDs: pickIDs(), EventType: pickType(), Since: pickTime(), Until: pickTime(), DryRun: rng.IntN(3) == 0}
			switch rng.IntN(4) {
			case 1:
				f.States = []idempotency.InboxState{idempotency.InboxFailed}
			case 2:
				f.States = []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxFailed}
			case 3:
				f.States = []idempotency.InboxState{idempotency.InboxDeadLetter}
			}
			// Every other step the events and the tasks are counted
			// apart; the step, not rng, chooses, so that the sequence is
			// the same.
			if (step+int(seed))%2 == 0 {
				same(fmt.Sprintf("RedriveByKind(%+v)", f), func(s *paritySide) string {
					events, tasks, err := s.inbox.RedriveByKind(ctx, f)
					return fmt.Sprintf("%d events %d tasks %s", events, tasks, errString(err))
				})
			} else {
				same(fmt.Sprintf("Redrive(%+v)", f), func(s *paritySide) string {
					n, err := s.inbox.Redrive(ctx, f)
					return fmt.Sprintf("%d %s", n, errString(err))
				})
			}
		case op < 13:
			same("Stats", func(s *paritySide) string {
				st, err := s.inbox.Stats(ctx)
				return fmt.Sprintf("%s %v %v oldest=%s", errString(err), st.Counts, st.TaskCounts, pt.of(st.OldestPending))
			})
		case op < 16:
			f := idempotency.InboxFilter{Kind: pickKind(), EventIDs: pickIDs(), EventType: pickType(), Since: pickTime(), Until: pickTime(),
				Limit: []int{0, 1, 3, 10, 1000}[rng.IntN(5)]}
			if rng.IntN(3) == 0 {
				f.ObjectID = objects[rng.IntN(len(objects))]
			}
			if rng.IntN(3) == 0 {
				f.After = idempotency.InboxPosition{ReceivedAt: pickTime(), EventID: ids[rng.IntN(len(ids))]}
			}
			for _, st := range idempotency.InboxStates() {
				if rng.IntN(5) == 0 {
					f.States = append(f.States, st)
				}
			}
			same(fmt.Sprintf("List(%+v)", f), func(s *paritySide) string {
				recs, err := s.inbox.List(ctx, f)
				var out []string
				for _, r := range recs {
					out = append(out, pt.record(r))
				}
				return errString(err) + "\n  " + strings.Join(out, "\n  ")
			})
		case op < 17:
			id := ids[rng.IntN(len(ids))]
			same("Forget("+id+")", func(s *paritySide) string {
				ok, err := s.store.Forget(ctx, id)
				return fmt.Sprintf("%v %s", ok, errString(err))
			})
		case op < 18:
			r := idempotency.Retention{Pause: -1, BatchSize: rng.IntN(4), Now: clock.Now}
			var batches []string
			r.OnBatch = func(rep idempotency.PruneReport) { batches = append(batches, fmt.Sprintf("%+v", rep)) }
			switch rng.IntN(5) {
			case 1:
				r.Payloads = 24 * time.Hour
				r.DeadLetters = 2 * 24 * time.Hour
			case 2:
				r.Guards = 140 * 24 * time.Hour
				r.Tasks = 140 * 24 * time.Hour
			case 3:
				r.DeadLetters = time.Hour // shorter than Payloads: refused
			case 4:
				r.EventIDs = 46 * 24 * time.Hour
			}
			same(fmt.Sprintf("Prune(%+v)", r), func(s *paritySide) string {
				batches = nil
				rep, err := s.store.Prune(ctx, r)
				if s == sides[0] {
					tally[fmt.Sprintf("prune events=%v ids=%v dead=%v guards=%v tasks=%v", rep.Events > 0, rep.EventIDs > 0, rep.DeadLetters > 0, rep.Guards > 0, rep.Tasks > 0)]++
				}
				return fmt.Sprintf("%+v %s batches %v", rep, errString(err), batches)
			})
		case op < 19:
			switch rng.IntN(4) {
			case 0: // a worker leases and dies, or resumes late below
				// Every event due: which of those that came due at one time
				// PgxStore leases first is in no set order.
				n := 100
				same(fmt.Sprintf("LeaseInbox(%d)", n), func(s *paritySide) string {
					ls, err := idempotency.LeaseInbox(ctx, s.inbox, n)
					s.leased = append(s.leased, ls...)
					slices.SortFunc(s.leased, func(a, b idempotency.InboxLeased) int { return strings.Compare(a.EventID(), b.EventID()) })
					var out []string
					for _, l := range ls {
						out = append(out, fmt.Sprintf("%s#%d", l.EventID(), l.Attempt()))
					}
					sort.Strings(out)
					return errString(err) + " " + strings.Join(out, ",")
				})
			case 1: // the late worker applies what it leased
				same("ApplyLeased", func(s *paritySide) string {
					var out []string
					for _, l := range s.leased {
						idempotency.ApplyLeased(ctx, s.inbox, l)
						out = append(out, l.EventID())
					}
					s.leased = nil
					return strings.Join(out, ",")
				})
			case 2: // or gives it back
				same("ReleaseLeased", func(s *paritySide) string {
					var out []string
					for _, l := range s.leased {
						idempotency.ReleaseLeased(ctx, s.inbox, l)
						out = append(out, l.EventID())
					}
					s.leased = nil
					return strings.Join(out, ",")
				})
			default:
				// Every record the filter selects, whatever their order: the
				// events a WorkDue call applied are ordered by when they
				// committed, and PgxStore leases the events that came due at
				// one time in no set order (the LIMIT in its lease query).
				f := idempotency.EventFilter{EventType: pickType(), Limit: 1000}
				if rng.IntN(3) == 0 {
					f.ObjectID = objects[rng.IntN(len(objects))]
				}
				for _, o := range []idempotency.Outcome{idempotency.OutcomeProcessed, idempotency.OutcomeSkipped, idempotency.OutcomeIgnored} {
					if rng.IntN(3) == 0 {
						f.Outcomes = append(f.Outcomes, o)
					}
				}
				same(fmt.Sprintf("ListEvents(%+v)", f), func(s *paritySide) string {
					recs, err := s.store.ListEvents(ctx, f)
					var out []string
					for _, r := range recs {
						out = append(out, r.EventID+":"+string(r.Outcome))
					}
					sort.Strings(out) // see the Limit above
					return errString(err) + " " + strings.Join(out, ",")
				})
			}
		default:
			id := ids[rng.IntN(len(ids))]
			same("Lookup("+id+")", func(s *paritySide) string {
				r, ok, err := s.inbox.Lookup(ctx, id)
				return fmt.Sprintf("%v %s %s", ok, errString(err), pt.record(r))
			})
			same("Payload("+id+")", func(s *paritySide) string {
				p, ok, err := s.inbox.Payload(ctx, id)
				return fmt.Sprintf("%v %s %q", ok, errString(err), p)
			})
		}
		same("Results", func(s *paritySide) string {
			rs := s.takeResults()
			if s == sides[0] {
				for _, r := range rs {
					tally[strings.Join(strings.Fields(r)[3:7], " ")]++
					if i := strings.Index(r, "err="); i >= 0 && os.Getenv("PARITY_ERRS") != "" {
						tally[r[i:]]++
					}
				}
			}
			return strings.Join(rs, "\n  ")
		})
		if step%10 == 9 || step == steps-1 {
			compareState()
		}
	}
}
