package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// countRefused is a pool whose statements all run but a redrive's dry run,
// the count of what a redrive would move, which fails.
type countRefused struct{ *pgxpool.Pool }

const countRefusedText = "count refused by the test's pool"

func (p countRefused) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if strings.HasPrefix(sql, "SELECT count(*) FILTER (WHERE kind = 'event')") {
		return refusedRow{}
	}
	return p.Pool.QueryRow(ctx, sql, args...)
}

type refusedRow struct{}

func (refusedRow) Scan(...any) error { return errors.New(countRefusedText) }

// TestListShownWhenTheRedriveCountFails: a list whose bulk redrive's
// count fails is shown with its records and its redrive button, the
// count replaced by "count unavailable", and the error logged at Warn,
// not shown: the whole page was 503 Store unavailable.
func TestListShownWhenTheRedriveCountFails(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	db.NewStore(t, idempotency.PgxConfig{}) // migrates the schema
	st, err := idempotency.NewPgxStore(countRefused{db.Pool}, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	f := newFixture(t, st, dashboard.Config{AllowRedrive: true})
	f.populate(t)

	status, body := f.get(t, "events?state=dead_letter")
	require.Equal(t, http.StatusOK, status, body)
	contains(t, body, `data-id="evt_dead_1"`)
	contains(t, body, `id="redrive-all"`)
	contains(t, body, `<span class="muted" id="redrive-all-count">count unavailable</span>`)
	notContains(t, body, countRefusedText, "the error goes to the log only")
	logs := f.logs(t)
	require.Contains(t, logs, `level=WARN msg="dashboard: counting a redrive"`)
	require.Contains(t, logs, countRefusedText)
	require.NotContains(t, logs, "level=ERROR")
}
