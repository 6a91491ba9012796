package idempotency

import (
	"context"
	"sync"
	"time"
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
// Only committed claims are remembered, each for PgxConfig.RecentClaimsTTL:
// a claim deleted since ([PgxStore.Forget], [PgxStore.Prune]) is honoured
// by this store at once and by every other within that time.
type localClaims struct {
	mu       sync.Mutex
	inFlight map[string]chan struct{} // closed when the run ends
	waiting  int                      // runs blocked on another's in-flight run
	recent   recentIDs                // committed claims
}

func newLocalClaims(capacity int, ttl time.Duration) *localClaims {
	return &localClaims{inFlight: make(map[string]chan struct{}), recent: newRecentIDs(capacity, ttl)}
}

// forget drops id from the committed claims remembered.
func (l *localClaims) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recent.forget(id)
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
	since := l.recent.forgets
	l.mu.Unlock()
	return false, func(committed bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.inFlight, id)
		if committed {
			l.recent.addSince(id, since)
		}
		close(ch)
	}, nil
}

func (l *localClaims) waiters() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// recentIDs is a bounded set of ids: the newest capacity ids added, each
// for ttl after it was added. The bound in time is what lets a deleted
// ledger row or inbox row ([PgxStore.Forget], or by hand) be honoured by
// every process within ttl. It grows with the ids added, up to capacity,
// so that a bound far above the traffic costs nothing until reached. It
// is not safe for concurrent use.
type recentIDs struct {
	set      map[string]time.Time // id → when it was added
	ring     []string             // the ids, oldest at next once full
	capacity int
	next     int
	ttl      time.Duration
	now      func() time.Time // time.Now; tests set another
	// forgets counts the calls of forget. What a caller learned from the
	// database before one may be stale: the row it found may be the one
	// forgotten.
	forgets uint64
}

func newRecentIDs(capacity int, ttl time.Duration) recentIDs {
	return recentIDs{set: make(map[string]time.Time), capacity: capacity, ttl: ttl, now: time.Now}
}

func (r *recentIDs) has(id string) bool {
	added, ok := r.set[id]
	return ok && r.now().Sub(added) < r.ttl
}

// add adds id, or renews it, forgetting the oldest when full.
func (r *recentIDs) add(id string) {
	if r.capacity <= 0 {
		return
	}
	if _, ok := r.set[id]; ok {
		r.set[id] = r.now()
		return
	}
	if len(r.ring) < r.capacity {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % len(r.ring)
	}
	r.set[id] = r.now()
}

// forget drops id. Its slot in the ring stays until it comes round, and
// may then drop a later add of the same id early: that costs one round
// trip, never a wrong answer.
func (r *recentIDs) forget(id string) {
	delete(r.set, id)
	r.forgets++
}

// addSince adds id, as add does, unless an id was forgotten since forgets
// read since: the caller's knowledge that id is in the database dates from
// then, and the row may be the one forgotten (Forget or Prune deleted it
// while the caller's statement ran). Not adding costs a round trip.
func (r *recentIDs) addSince(id string, since uint64) {
	if r.forgets == since {
		r.add(id)
	}
}

// storedIDs remembers the ids of events this process stored in the inbox,
// or found stored, so that a redelivery is answered duplicate without a
// round trip. It is a memory apart from the claims': an event stored is not
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

// since is what addSince takes: read it before the statement that finds
// or stores the ids.
func (s *storedIDs) since() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.forgets
}

func (s *storedIDs) addSince(id string, since uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids.addSince(id, since)
}

func (s *storedIDs) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids.forget(id)
}
