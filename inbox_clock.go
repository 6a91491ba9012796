package idempotency

import (
	"context"
	"log/slog"
	"time"
)

// maxClockSkew is how far the inbox's clock may be from the database's
// before Run warns. Every time the inbox records is its process's clock,
// and replicas on one database compare each other's times: a replica
// whose clock is ahead takes the others' leases early (at once, past
// InboxConfig.Lease), retries their failed events early, and one behind
// sees their new events due late. Clocks kept by NTP agree within
// milliseconds.
const maxClockSkew = time.Second

// clockCheckEvery is how often Run compares the clocks, on the running
// process's monotonic clock: one query, not one per event.
const clockCheckEvery = time.Minute

// inboxClock is a store with a clock of its own to compare with:
// PgxStore, the database's.
type inboxClock interface {
	// inboxStoreTime returns the store's time now.
	inboxStoreTime(ctx context.Context) (time.Time, error)
}

// clockCheck compares the inbox's clock with its store's, when the inbox
// runs on the process's clock (InboxConfig.Now not set: a fake clock in
// a test is never compared) and the store has one. It warns once when
// they differ by more than maxClockSkew, and says so at Info when they
// agree again.
type clockCheck struct {
	now    func() time.Time // the inbox's clock; nil: no check
	next   time.Time        // on time.Now's monotonic clock: when to check again
	skewed bool             // the last check warned
}

// due reports whether Run is to check the clocks now.
func (c *clockCheck) due() bool {
	return c.now != nil && !time.Now().Before(c.next)
}

// check compares the clocks once. The store's time must fall between the
// inbox's before the query and after it: the round trip widens the bound,
// never narrows it.
func (c *clockCheck) check(ctx context.Context, in *Inbox) {
	c.next = time.Now().Add(clockCheckEvery)
	store, ok := in.store.(inboxClock)
	if !ok || c.now == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, min(in.cfg.Timeout, rollbackTimeout))
	defer cancel()
	sent := c.now()
	db, err := store.inboxStoreTime(ctx)
	received := c.now()
	if err != nil {
		return // nothing learnt; a lease says why the store fails
	}
	var ahead, behind time.Duration
	switch {
	case db.Before(sent.Add(-maxClockSkew)):
		ahead = sent.Sub(db)
	case db.After(received.Add(maxClockSkew)):
		behind = db.Sub(received)
	}
	switch {
	case ahead == 0 && behind == 0:
		if c.skewed {
			c.skewed = false
			in.log.LogAttrs(ctx, slog.LevelInfo, "idempotency inbox: this process's clock agrees with the database's again",
				slog.Duration("bound", maxClockSkew))
		}
	case !c.skewed:
		c.skewed = true
		in.log.LogAttrs(ctx, slog.LevelWarn, "idempotency inbox: this process's clock differs from the database's; "+
			"the inbox dates leases and retries on it, and replicas whose clocks differ take each other's leases and retry failed events early, "+
			"or see new events due late: keep every replica's clock synchronized (NTP)",
			slog.Duration("ahead", ahead), slog.Duration("behind", behind), slog.Duration("bound", maxClockSkew))
	}
}
