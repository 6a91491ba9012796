package main

import (
	"context"
	"log/slog"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestOpenPostgresUnderTheServiceRole: the server starts under a role with
// the README's service grants (Roles and privileges: USAGE on the schema,
// SELECT, INSERT, UPDATE and DELETE on its tables, USAGE on its
// sequences; no CREATE) once the owner has migrated the schema and made
// the business tables, and writes an account there. It exited at start
// with "permission denied for schema": PostgreSQL checks CREATE on the
// schema before it looks for the table of a CREATE TABLE IF NOT EXISTS.
func TestOpenPostgresUnderTheServiceRole(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := pgtest.New(t)
	admin := pgtest.AdminPool(t)

	// The owner (the deploy job's role) migrates and creates the tables.
	_, closeOwner, err := openPostgres(ctx, db.URL, startupWait, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	closeOwner()

	role := db.Schema + "_app"
	schema, r := pgx.Identifier{db.Schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	for _, q := range []string{
		`CREATE ROLE ` + r + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + r,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + r,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ` + schema + ` TO ` + r,
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, `REVOKE ALL ON ALL SEQUENCES IN SCHEMA `+schema+` FROM `+r)
		_, _ = admin.Exec(ctx, `REVOKE ALL ON ALL TABLES IN SCHEMA `+schema+` FROM `+r)
		_, _ = admin.Exec(ctx, `REVOKE ALL ON SCHEMA `+schema+` FROM `+r)
		_, _ = admin.Exec(ctx, `DROP ROLE IF EXISTS `+r)
	})

	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	q := u.Query() // the user is a parameter of pgtest's URLs
	q.Set("user", role)
	u.RawQuery = q.Encode()
	svc, closeStore, err := openPostgres(ctx, u.String(), startupWait, slog.New(slog.DiscardHandler))
	require.NoError(t, err, "the service's role starts on a schema its owner prepared")
	defer closeStore()
	var user string
	require.NoError(t, svc.accounts.(pgAccounts).pool.QueryRow(ctx, `SELECT current_user`).Scan(&user))
	require.Equal(t, role, user)
	_, err = svc.accounts.(pgAccounts).pool.Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ('acct_role', 100)`)
	require.NoError(t, err, "and writes the business tables")
}
