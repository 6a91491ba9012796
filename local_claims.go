package idempotency

import (
	"context"
	"sync"
)

// localClaims spares the database the deliveries one process can answer
// alone. It remembers the ids of recently committed claims, so a redelivery
// is answered duplicate without a round trip, and it lets one delivery of an
// event at a time go to the database, so a burst of concurrent copies waits
// here for the first one's outcome instead of each holding a connection
// while it waits on the claim row.
//
// The database stays the authority: an id this process has not seen
// committed always goes to it, so replicas and restarts change nothing.
// Only committed claims are remembered, and those are never undone.
type localClaims struct {
	mu       sync.Mutex
	inFlight map[string]chan struct{} // closed when the run ends
	waiting  int                      // runs blocked on another's in-flight run

	recent map[string]struct{}
	ring   []string // the remembered ids, oldest at next once full
	next   int
}

func newLocalClaims(capacity int) *localClaims {
	return &localClaims{
		inFlight: make(map[string]chan struct{}),
		recent:   make(map[string]struct{}, capacity),
		ring:     make([]string, 0, capacity),
	}
}

// acquire waits until no other run of id is in flight in this process. It
// reports done when id is known to be committed; otherwise the caller owns
// id until it calls release.
func (l *localClaims) acquire(ctx context.Context, id string) (done bool, release func(committed bool), err error) {
	l.mu.Lock()
	for {
		if _, ok := l.recent[id]; ok {
			l.mu.Unlock()
			return true, nil, nil
		}
		ch, busy := l.inFlight[id]
		if !busy {
			break
		}
		l.waiting++
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		l.mu.Lock()
		l.waiting--
		if err != nil {
			l.mu.Unlock()
			return false, nil, err
		}
	}
	ch := make(chan struct{})
	l.inFlight[id] = ch
	l.mu.Unlock()
	return false, func(committed bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.inFlight, id)
		if committed {
			l.remember(id)
		}
		close(ch)
	}, nil
}

// remember adds id to the recent ids, forgetting the oldest when full.
func (l *localClaims) remember(id string) {
	if _, ok := l.recent[id]; ok || cap(l.ring) == 0 {
		return
	}
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, id)
	} else {
		delete(l.recent, l.ring[l.next])
		l.ring[l.next] = id
		l.next = (l.next + 1) % len(l.ring)
	}
	l.recent[id] = struct{}{}
}

func (l *localClaims) waiters() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}
