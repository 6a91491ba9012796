package main

import (
	"context"
	"net/http"
	"sync"

	"github.com/seed-a84bb619/idempotency"
)

// requests counts the requests the server's handlers are running, so
// that run closes the store, the pool and the inbox only once they have
// returned: http.Server.Shutdown returns at its deadline without waiting
// for them.
type requests struct {
	mu      sync.Mutex
	running sync.WaitGroup
	closed  bool
}

// handle runs next for each request, counted. A request that begins once
// wait has begun (its headers were being read as the stop's deadline
// passed) is answered 503 without running, as the store may be closing.
func (q *requests) handle(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "stopping"})
			return
		}
		q.running.Add(1)
		q.mu.Unlock()
		defer q.running.Done()
		next.ServeHTTP(w, r)
	})
}

// wait returns once every request handle counted has returned, and
// refuses those that begin after it.
func (q *requests) wait() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.running.Wait()
}

// requestsCut is the key of the server's base context among a request's
// values, for what runs detached from the request.
type requestsCut struct{}

// baseContext is the base context of the server's requests, cut: it
// carries cut as a value too, which the library's Handler keeps where it
// detaches a delivery's work from the request's cancellation (so that a
// sender that hangs up does not cut its transaction short), and which
// [cutAtStop] reads.
func baseContext(cut context.Context) context.Context {
	return context.WithValue(cut, requestsCut{}, cut)
}

// cutAtStop is fetch, made to give up when the server cuts the request
// it runs for: a synchronous delivery's handler blocked on the Stripe API
// as the stop's deadline passes fails then (answered 503 while its
// connection is open, and sent again by Stripe), its transaction rolled
// back before the store closes, rather than when FetchTimeout runs out.
// An inbox worker's fetch, which no request runs, is left to the
// workers' own deadline.
func cutAtStop[T any](fetch idempotency.FetchFunc[T]) idempotency.FetchFunc[T] {
	return func(ctx context.Context, id, account string) (T, error) {
		if cut, ok := ctx.Value(requestsCut{}).(context.Context); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(cut, cancel)()
		}
		return fetch(ctx, id, account)
	}
}
