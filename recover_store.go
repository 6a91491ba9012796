package idempotency

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// recoveryCheckpoint is where [Handler.Recover] continues a run of one
// name: the last event up to which every event it listed was handled, and
// the options it listed with.
type recoveryCheckpoint struct {
	Name            string
	Since           time.Time // whole seconds
	Account         string    // the connected account listed as; "" for the client's own
	Types           string    // sorted, comma-separated; "" for every type
	OnlyUndelivered bool
	LastEventID     string
	LastCreated     time.Time // LastEventID's created
	UpdatedAt       time.Time
}

// recoveryBackend keeps recovery checkpoints: MemoryStore and PgxStore
// (migration 006; the account, 010).
type recoveryBackend interface {
	loadCheckpoint(ctx context.Context, name string) (recoveryCheckpoint, bool, error)
	// saveCheckpoint creates the checkpoint, or moves an existing one's
	// last event forward, atomically: never to an event of an earlier
	// second than the stored one's, which another run of the checkpoint at
	// once has handled past. Within one second the later save wins (the
	// Events API's order of one second's events is not their ids'), as a
	// run moves through that second's events. Its options never change
	// once stored.
	saveCheckpoint(ctx context.Context, cp *recoveryCheckpoint) error
}

func (s *MemoryStore) loadCheckpoint(_ context.Context, name string) (recoveryCheckpoint, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, ok := s.recovery[name]
	return cp, ok, nil
}

func (s *MemoryStore) saveCheckpoint(_ context.Context, cp *recoveryCheckpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recovery == nil {
		s.recovery = make(map[string]recoveryCheckpoint)
	}
	stored, ok := s.recovery[cp.Name]
	if !ok {
		stored = *cp
	} else if cp.LastCreated.Before(stored.LastCreated) {
		return nil
	}
	stored.LastEventID, stored.LastCreated, stored.UpdatedAt = cp.LastEventID, cp.LastCreated, cp.UpdatedAt
	s.recovery[cp.Name] = stored
	return nil
}

// recoveryColumns are the columns of idempotency_recovery but the name, in
// the order of recoveryCheckpoint.
const recoveryColumns = `"since", "account", "types", "only_undelivered", "last_event_id", "last_created", "updated_at"`

// pgxRecoverySQL are the statements of recovery checkpoints, on the
// store's schema.
type pgxRecoverySQL struct {
	load, save string
}

func newPgxRecoverySQL(schema string) pgxRecoverySQL {
	t := pgx.Identifier{schema, "idempotency_recovery"}.Sanitize()
	return pgxRecoverySQL{
		load: `SELECT ` + recoveryColumns + ` FROM ` + t + ` WHERE "name" = $1`,
		save: `INSERT INTO ` + t + ` AS "cp" ("name", ` + recoveryColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT ("name") DO UPDATE SET "last_event_id" = EXCLUDED."last_event_id", "last_created" = EXCLUDED."last_created", "updated_at" = EXCLUDED."updated_at"
WHERE "cp"."last_created" <= EXCLUDED."last_created"`,
	}
}

func (s *PgxStore) loadCheckpoint(ctx context.Context, name string) (recoveryCheckpoint, bool, error) {
	cp := recoveryCheckpoint{Name: name}
	found, err := s.readRow(ctx, s.recovery.load, []any{name},
		&cp.Since, &cp.Account, &cp.Types, &cp.OnlyUndelivered, &cp.LastEventID, &cp.LastCreated, &cp.UpdatedAt)
	if err != nil {
		return cp, false, errorf("loading recovery checkpoint: %w", err)
	}
	return cp, found, nil
}

// saveCheckpoint implements recoveryBackend: one upsert, a statement and a
// transaction of its own (one round trip on a pool or a connection), whose
// WHERE leaves a checkpoint of a later second as it is.
func (s *PgxStore) saveCheckpoint(ctx context.Context, cp *recoveryCheckpoint) error {
	err := s.autocommit(ctx, func(q pgxQuerier) error {
		_, err := q.Exec(ctx, s.recovery.save, cp.Name, cp.Since, cp.Account, cp.Types, cp.OnlyUndelivered, cp.LastEventID, cp.LastCreated, cp.UpdatedAt)
		return err
	})
	if err != nil {
		return errorf("saving recovery checkpoint: %w", s.unavailableErr(err))
	}
	return nil
}
