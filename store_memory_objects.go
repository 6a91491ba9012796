package idempotency

import (
	"context"
	"time"
	"weak"
)

// The MemoryStore's per-object locks and order records (current.go,
// order.go): records that transactions lock in turn, as PostgreSQL's row
// locks on idempotency_objects and idempotency_order do, and whose new
// values are stored when the transaction commits.

const (
	recordObject = "object"
	recordOrder  = "order"
)

// nextSeq is the next number of the store's counter; s.mu is held.
func (s *MemoryStore) nextSeq() int64 {
	s.seq++
	return s.seq
}

// recordValue is k's value as tx sees it: its own new value, or the committed
// one; s.mu is held.
func (tx *memoryTx) recordValue(k lockID) (any, bool) {
	if v, ok := tx.records[k]; ok {
		return v, true
	}
	switch k.record {
	case recordObject:
		v, ok := tx.s.objects[k.guardID]
		return v, ok
	default:
		v, ok := tx.s.order[k.guardID]
		return v, ok
	}
}

// setRecord gives k a new value, stored if tx commits; s.mu is held.
func (tx *memoryTx) setRecord(k lockID, v any) {
	if tx.records == nil {
		tx.records = make(map[lockID]any)
	}
	tx.records[k] = v
}

// commitRecord stores tx's new value of k; s.mu is held.
func (tx *memoryTx) commitRecord(k lockID) {
	v, ok := tx.records[k]
	if !ok {
		return
	}
	switch k.record {
	case recordObject:
		tx.s.objects[k.guardID] = v.(objectRecord)
	case recordOrder:
		tx.s.order[k.guardID] = v.(orderRecord)
	}
}

func (tx *memoryTx) eventSeq(ctx context.Context) (int64, error) {
	return tx.claim.eventSeq(func() (int64, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		tx.s.mu.Lock()
		defer tx.s.mu.Unlock()
		return tx.s.nextSeq(), nil
	})
}

func (tx *memoryTx) objectStore() any { return weak.Make(tx.s) }

func (tx *memoryTx) lockObject(ctx context.Context, scope, id string) (int64, int64, error) {
	k := lockID{record: recordObject, guardID: guardID{scope, id}}
	if _, err := tx.take(ctx, k, nil); err != nil { // waits while another transaction holds it
		return 0, 0, err
	}
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	last, _ := tx.recordValue(k)
	rec, _ := last.(objectRecord) // the zero record when never fetched
	return rec.fetchSeq, tx.s.nextSeq(), nil
}

func (tx *memoryTx) markFetched(ctx context.Context, scope, id string, seq int64) error {
	k := lockID{record: recordObject, guardID: guardID{scope, id}}
	if _, err := tx.take(ctx, k, nil); err != nil {
		return err
	}
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	tx.setRecord(k, objectRecord{fetchSeq: seq, fetchedAt: kept(time.Now())})
	return nil
}

// objectRecord is the last fetch of an object, as idempotency_objects
// keeps it.
type objectRecord struct {
	fetchSeq  int64
	fetchedAt time.Time
}

func (tx *memoryTx) order(ctx context.Context, scope, key string, created time.Time) (Order, error) {
	k := lockID{record: recordOrder, guardID: guardID{scope, key}}
	if _, err := tx.take(ctx, k, nil); err != nil {
		return 0, err
	}
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	v, found := tx.recordValue(k)
	prev, _ := v.(orderRecord)
	ev := orderRecord{created: kept(created), eventID: tx.claim.EventID}
	answer, rec, changed := ev.compare(prev, found)
	if changed {
		tx.setRecord(k, rec)
	}
	return answer, nil
}
