package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// fixture is an invoice.paid event as Stripe sends it: the repository's
// testdata/stripe-events/invoice.paid.json (Stripe's invoice fixture of
// its OpenAPI repository in an event envelope), copied here to be
// embedded. Every event of a run is derived from it.
//
//go:embed invoice.paid.json
var fixture []byte

// invoice is one paid invoice of the run.
type invoice struct {
	id, account string
}

// event is one event of the run; body is the payload every delivery of it
// sends, signed anew each time.
type event struct {
	id   string
	inv  *invoice
	body []byte
}

// generator makes the run's deliveries: new invoices, duplicates of
// events already sent and twins (a new event of an invoice already sent).
// Its ids carry the run's tag, so that the checks count this run's rows
// alone.
type generator struct {
	tag       string
	accounts  int
	dup, twin float64

	mu       sync.Mutex
	events   []*event   // every event whose first delivery has started
	invoices []*invoice // every invoice sent at least once
	nEvents  int
	nInvs    int
	dups     int
	twins    int
}

// The prefixes of the run's ids, tag following each.
const (
	eventPrefix   = "evt_"
	invoicePrefix = "in_"
	accountPrefix = "acct_"
)

func (g *generator) eventID(seq int) string { return eventPrefix + g.tag + fmt.Sprintf("%010d", seq) }
func (g *generator) invoiceID(seq int) string {
	return invoicePrefix + g.tag + fmt.Sprintf("%010d", seq)
}

// next returns the next delivery's event: a duplicate of one sent (same
// id and body), a twin (a new invoice.payment_succeeded event of an
// invoice sent) or a new invoice.paid of a new invoice.
func (g *generator) next() *event {
	x := rand.Float64()
	g.mu.Lock()
	if x < g.dup && len(g.events) > 0 {
		ev := g.events[rand.IntN(len(g.events))]
		g.dups++
		g.mu.Unlock()
		return ev
	}
	typ := "invoice.paid"
	var inv *invoice
	if x < g.dup+g.twin && len(g.invoices) > 0 {
		inv = g.invoices[rand.IntN(len(g.invoices))]
		typ = "invoice.payment_succeeded"
		g.twins++
	} else {
		g.nInvs++
		inv = &invoice{id: g.invoiceID(g.nInvs), account: accountPrefix + g.tag + "_" + strconv.Itoa(1+rand.IntN(g.accounts))}
		g.invoices = append(g.invoices, inv)
	}
	g.nEvents++
	ev := &event{id: g.eventID(g.nEvents), inv: inv}
	g.mu.Unlock()

	ev.body = idempotencytest.Derive(fixture, map[string]any{
		"id":                              ev.id,
		"type":                            typ,
		"created":                         time.Now().Unix(),
		"data.object.id":                  inv.id,
		"data.object.metadata.account_id": inv.account,
	})
	g.mu.Lock()
	g.events = append(g.events, ev)
	g.mu.Unlock()
	return ev
}

// sendStats counts what the senders did.
type sendStats struct {
	deliveries atomic.Int64 // begun
	answered   atomic.Int64 // answered 2xx in the end
	attempts   atomic.Int64 // requests sent
	non2xx     atomic.Int64 // answers other than 2xx
	transport  atomic.Int64 // requests with no answer (refused, reset, timed out)

	mu    sync.Mutex
	acked map[string]*invoice // event id answered 2xx → its invoice
}

// sender sends deliveries to the receivers as Stripe does.
type sender struct {
	client    *http.Client
	receivers []string // base URLs
	secret    string
	retryFor  time.Duration
	stats     *sendStats
}

// Pauses between the attempts of one delivery: firstRetry doubling up to
// maxRetry, each with jitter.
const (
	firstRetry = 20 * time.Millisecond
	maxRetry   = time.Second
)

// deliver sends ev until a receiver answers 2xx, or retryFor has passed,
// or ctx is done, each attempt freshly signed and to either receiver.
func (s *sender) deliver(ctx context.Context, ev *event) {
	s.stats.deliveries.Add(1)
	giveUp := time.Now().Add(s.retryFor)
	pause := firstRetry
	for {
		if s.attempt(ctx, ev) {
			s.stats.answered.Add(1)
			s.stats.mu.Lock()
			s.stats.acked[ev.id] = ev.inv
			s.stats.mu.Unlock()
			return
		}
		if ctx.Err() != nil || time.Now().After(giveUp) {
			return
		}
		wait := pause/2 + rand.N(pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		pause = min(2*pause, maxRetry)
	}
}

// attempt sends ev once and reports whether it was answered 2xx.
func (s *sender) attempt(ctx context.Context, ev *event) bool {
	s.stats.attempts.Add(1)
	target := s.receivers[rand.IntN(len(s.receivers))] + "/webhook"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(ev.body))
	if err != nil {
		s.stats.transport.Add(1)
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", idempotencytest.SignatureHeader(ev.body, s.secret, time.Now()))
	resp, err := s.client.Do(req)
	if err != nil {
		s.stats.transport.Add(1)
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the connection is reused
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.stats.non2xx.Add(1)
		return false
	}
	return true
}

// send makes n deliveries with c senders and returns when each has been
// answered 2xx, given up or cut by ctx.
func send(ctx context.Context, g *generator, s *sender, n, c int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				s.deliver(ctx, g.next())
			}
		})
	}
	wg.Wait()
}
