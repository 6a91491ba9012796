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
	recent   recentIDs                // committed claims
}

func newLocalClaims(capacity int) *localClaims {
	return &localClaims{inFlight: make(map[string]chan struct{}), recent: newRecentIDs(capacity)}
}

// acquire waits until no other run of id is in flight in this process. It
// reports done when id is known to be committed; otherwise the caller owns
// id until it calls release.
func (l *localClaims) acquire(ctx context.Context, id string) (done bool, release func(committed bool), err error) {
	l.mu.Lock()
	for {
		if l.recent.has(id) {
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
			l.recent.add(id)
		}
		close(ch)
	}, nil
}

func (l *localClaims) waiters() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// recentIDs is a bounded set of ids: the newest capacity ids added. It is
// not safe for concurrent use.
type recentIDs struct {
	set  map[string]struct{}
	ring []string // the ids, oldest at next once full
	next int
}

func newRecentIDs(capacity int) recentIDs {
	return recentIDs{set: make(map[string]struct{}, capacity), ring: make([]string, 0, capacity)}
}

func (r *recentIDs) has(id string) bool {
	_, ok := r.set[id]
	return ok
}

// add adds id, forgetting the oldest when full.
func (r *recentIDs) add(id string) {
	if r.has(id) || cap(r.ring) == 0 {
		return
	}
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % len(r.ring)
	}
	r.set[id] = struct{}{}
}

// storedIDs remembers the ids of events this process stored in the inbox,
// or found stored, so that a redelivery is answered duplicate without a
// round trip. Inbox rows are never deleted, so a remembered id stays
// stored. It is a memory apart from the claims': an event stored is not
// an event applied.
type storedIDs struct {
	mu  sync.Mutex
	ids recentIDs
}

func (s *storedIDs) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.has(id)
}

func (s *storedIDs) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids.add(id)
}
