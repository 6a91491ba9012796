package idempotency

import (
	"fmt"
	"testing"
	"time"
)

// TestLocalFetchesForgetsOldFetches: the memory of this process's recent
// fetches is bounded: once it holds maxLocalFetches objects, fetches older
// than localFetchMemory are dropped, so that a service seeing many
// distinct objects does not keep one entry per object forever.
func TestLocalFetchesForgetsOldFetches(t *testing.T) {
	t.Parallel()
	l := localFetches{started: map[localObject]time.Time{}}
	old := time.Now().Add(-2 * localFetchMemory)
	for i := range maxLocalFetches {
		l.record(localObject{key: fmt.Sprintf("sub_%d", i)}, old)
	}
	fresh := localObject{key: "sub_fresh"}
	now := time.Now()
	l.record(fresh, now)
	if n := len(l.started); n != 1 {
		t.Fatalf("the memory holds %d objects after a fetch past the bound; want 1 (the stale ones dropped)", n)
	}
	if !l.covers(fresh, now.Add(-time.Second)) {
		t.Fatal("the fresh fetch is remembered")
	}
}

// TestLocalFetchesKeepsTheLatestFetch: a fetch that started later replaces
// the one remembered, and one that started earlier (committed after it)
// does not: a delivery that arrived between the two is covered.
func TestLocalFetchesKeepsTheLatestFetch(t *testing.T) {
	t.Parallel()
	l := localFetches{started: map[localObject]time.Time{}}
	obj := localObject{key: "sub_1"}
	first := time.Now()
	arrived, second := first.Add(time.Millisecond), first.Add(2*time.Millisecond)
	l.record(obj, first)
	l.record(obj, second)
	if !l.covers(obj, arrived) {
		t.Fatal("a fetch that started after the delivery arrived covers it")
	}
	l.record(obj, first)
	if !l.covers(obj, arrived) {
		t.Fatal("an earlier fetch committed later does not replace a later one")
	}
	if l.covers(obj, second) {
		t.Fatal("a fetch that started as the delivery arrived does not cover it")
	}
}

// TestLocalFetchesStaysBoundedUnderABurst: the memory of this process's
// recent fetches holds at most maxLocalFetches objects also when more
// than that many were fetched within localFetchMemory (a burst of updates
// of many subscriptions), and the latest fetch is still remembered.
func TestLocalFetchesStaysBoundedUnderABurst(t *testing.T) {
	t.Parallel()
	l := localFetches{started: map[localObject]time.Time{}}
	now := time.Now()
	last := localObject{}
	for i := range 2 * maxLocalFetches {
		last = localObject{key: fmt.Sprintf("sub_%d", i)}
		l.record(last, now)
		if n := len(l.started); n > maxLocalFetches {
			t.Fatalf("the memory holds %d objects after %d fresh fetches; want at most %d", n, i+1, maxLocalFetches)
		}
	}
	if !l.covers(last, now.Add(-time.Second)) {
		t.Fatal("the latest fetch is remembered")
	}
}
