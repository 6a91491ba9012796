package idempotency_test

import (
	"bytes"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// benchRows is the number of rows a benchmark fills its tables with: the
// environment variable env's, or def when it is not set.
func benchRows(b *testing.B, env string, def int) int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, env)
	return n
}

// BenchmarkPgxPruneUnderLoad measures what pruning costs the deliveries
// that run meanwhile: a ledger of IDEMPOTENCY_PRUNE_ROWS claims older
// than the retention (20,000 by default; the README's numbers are for
// 1,000,000), then 8 concurrent senders deliver through a synchronous
// Handler on PostgreSQL, first with no prune (idle), then while Prune
// deletes the old claims with the default Retention. It reports the
// deliveries' p50 and p99 in each phase, their ratio, and the prune's
// rows per second:
//
//	IDEMPOTENCY_PRUNE_ROWS=1000000 go test -run '^$' -bench PruneUnderLoad -benchtime 1x
func BenchmarkPgxPruneUnderLoad(b *testing.B) {
	rows := benchRows(b, "IDEMPOTENCY_PRUNE_ROWS", 20000)
	const senders = 8
	idle := max(2000, rows/10) // long enough to see the same noise as the pruning phase
	db := newPgDB(b)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(b, err)
	require.NoError(b, store.Migrate(b.Context()))
	hs := idempotency.NewHandlers()
	onInvoice(hs)
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(b, err)
	// Each sender signs its next delivery before it starts the clock: the
	// run is too long for the deliveries to be made in advance.
	raw := fixture(b, "invoice.paid")
	id := []byte("evt_1S2kq5B7WZ01zgkWbX2cNw7Y")
	at := bytes.Index(raw, id)
	require.GreaterOrEqual(b, at, 0)
	var next atomic.Int64
	delivery := func() signedDelivery {
		p := bytes.Clone(raw)
		digits := strconv.FormatInt(next.Add(1), 10)
		copy(p[at+len(id)-len(digits):], digits)
		return signedDelivery{payload: p, header: idempotencytest.SignatureHeader(p, testSecret, time.Now())}
	}

	// deliver has the senders deliver until stop says so, and returns the
	// latencies.
	deliver := func(stop func(sent int) bool) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var sent atomic.Int64
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
				require.NoError(b, err)
				var body bytes.Reader
				w := &discardWriter{h: http.Header{}}
				var mine []time.Duration
				for !stop(int(sent.Load())) {
					d := delivery()
					start := time.Now()
					w.status = 0
					h.ServeHTTP(w, d.request(req, &body))
					mine = append(mine, time.Since(start))
					if w.status != http.StatusOK {
						b.Errorf("status %d", w.status)
						break
					}
					sent.Add(1)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(lat)
		return lat
	}
	pct := func(lat []time.Duration, p float64) float64 {
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds())
	}

	for b.Loop() {
		b.StopTimer()
		old := time.Now().Add(-60 * 24 * time.Hour)
		_, err := db.Pool.Exec(b.Context(), `INSERT INTO `+pgx.Identifier{db.Schema}.Sanitize()+`.idempotency_events
    (event_id, event_type, object_id, outcome, received_at, processed_at)
SELECT 'evt_old_' || g, 'invoice.paid', 'in_old_' || g, 'processed', $2, $2 FROM generate_series(1, $1) AS g`, rows, old)
		require.NoError(b, err)
		_, err = db.Pool.Exec(b.Context(), `ANALYZE `+pgx.Identifier{db.Schema}.Sanitize()+`.idempotency_events`)
		require.NoError(b, err)
		b.StartTimer()

		quiet := deliver(func(sent int) bool { return sent >= idle })

		var done atomic.Bool
		var rep idempotency.PruneReport
		var pruneErr error
		var took time.Duration
		pruned := make(chan struct{})
		go func() {
			defer close(pruned)
			start := time.Now()
			rep, pruneErr = store.Prune(b.Context(), idempotency.Retention{})
			took = time.Since(start)
			done.Store(true)
		}()
		busy := deliver(func(sent int) bool { return done.Load() && sent >= idle/4 })
		<-pruned
		require.NoError(b, pruneErr)
		require.GreaterOrEqual(b, rep.EventIDs, rows)

		b.ReportMetric(pct(quiet, 0.5), "idle-p50-µs")
		b.ReportMetric(pct(quiet, 0.99), "idle-p99-µs")
		b.ReportMetric(pct(busy, 0.5), "pruning-p50-µs")
		b.ReportMetric(pct(busy, 0.99), "pruning-p99-µs")
		b.ReportMetric(pct(busy, 0.99)/pct(quiet, 0.99), "p99-ratio")
		b.ReportMetric(float64(rep.EventIDs)/took.Seconds(), "pruned-rows/s")
		b.ReportMetric(float64(len(busy)), "deliveries-while-pruning")
	}
}
