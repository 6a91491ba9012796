package idempotency

import (
	"context"
	"strings"
	"time"
	"weak"

	"github.com/jackc/pgx/v5"
)

// PgxStore's per-object locks and order records (current.go, order.go), in
// the event's transaction: row locks on idempotency_objects and
// idempotency_order, and the numbers of idempotency_seq.

type pgxObjectSQL struct {
	nextSeq, lockObject, markFetched, orderLock, orderSet string
}

func newPgxObjectSQL(schema string) pgxObjectSQL {
	s := pgx.Identifier{schema}.Sanitize()
	seq := sqlLiteralText(s + `.idempotency_seq`) // inside nextval(E'...')
	return pgxObjectSQL{
		nextSeq: `SELECT nextval(E'` + seq + `')`,
		// The no-op update takes the row lock (or waits for it), and
		// RETURNING then reads the latest committed fetch; nextval comes
		// after the lock.
		lockObject: `INSERT INTO ` + s + `.idempotency_objects AS o (scope, object_id) VALUES ($1, $2)
ON CONFLICT (scope, object_id) DO UPDATE SET scope = o.scope
RETURNING o.fetch_seq, nextval(E'` + seq + `')`,
		markFetched: `UPDATE ` + s + `.idempotency_objects SET fetch_seq = $3, fetched_at = now() WHERE scope = $1 AND object_id = $2`,
		orderLock: `INSERT INTO ` + s + `.idempotency_order AS r (scope, key, created, event_id) VALUES ($1, $2, $3, $4)
ON CONFLICT (scope, key) DO UPDATE SET scope = r.scope
RETURNING r.created, r.event_id, r.xmax = 0`,
		orderSet: `UPDATE ` + s + `.idempotency_order SET created = $3, event_id = $4 WHERE scope = $1 AND key = $2`,
	}
}

// sqlLiteralText is s as the text of an escape string literal (E'...'):
// its backslashes and quotes doubled. An escape string reads the same
// whatever standard_conforming_strings says; in a plain literal a
// backslash of the schema's name would escape the character after it on
// a server where it is off, bending the name or ending the literal.
func sqlLiteralText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''")
}

func (t *pgxTx) eventSeq(ctx context.Context) (int64, error) {
	return t.claim.eventSeq(func() (n int64, err error) {
		if err := t.enter(); err != nil {
			return 0, err
		}
		defer t.leave()
		err = t.tx.QueryRow(ctx, t.s.objects.nextSeq).Scan(&n)
		return n, err
	})
}

func (t *pgxTx) objectStore() any { return weak.Make(t.s) }

func (t *pgxTx) lockObject(ctx context.Context, scope, id string) (lastFetch, now int64, err error) {
	if err := t.enter(); err != nil {
		return 0, 0, err
	}
	defer t.leave()
	err = t.tx.QueryRow(ctx, t.s.objects.lockObject, scope, id).Scan(&lastFetch, &now)
	return lastFetch, now, err
}

func (t *pgxTx) markFetched(ctx context.Context, scope, id string, seq int64) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.leave()
	_, err := t.tx.Exec(ctx, t.s.objects.markFetched, scope, id, seq)
	return err
}

func (t *pgxTx) order(ctx context.Context, scope, key string, created time.Time) (Order, error) {
	if err := t.enter(); err != nil {
		return 0, err
	}
	defer t.leave()
	var prev orderRecord
	var inserted bool
	if err := t.tx.QueryRow(ctx, t.s.objects.orderLock, scope, key, created, t.claim.EventID).Scan(&prev.created, &prev.eventID, &inserted); err != nil {
		return 0, err
	}
	ev := orderRecord{created: created, eventID: t.claim.EventID}
	if inserted {
		return OrderNewer, nil
	}
	answer, rec, changed := ev.compare(prev, true)
	if changed {
		if _, err := t.tx.Exec(ctx, t.s.objects.orderSet, scope, key, rec.created, rec.eventID); err != nil {
			return 0, err
		}
	}
	return answer, nil
}
