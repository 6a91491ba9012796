package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

// TestDemo pins what the README promises the demo prints.
//
// A subscription is decoded once first: encoding/json builds the decoders
// of stripe-go's types at their first use, which took 3 s under -race on
// a loaded machine, and the demo's first fetch spent them of its
// idempotency.FetchTimeout (5 s): it was answered 503 stripe_unavailable.
func TestDemo(t *testing.T) {
	require.NoError(t, json.Unmarshal([]byte(`{"id":"sub_warm","object":"subscription"}`), new(stripe.Subscription)))
	var out strings.Builder
	require.NoError(t, run(&out))
	require.Equal(t, `1. invoice.paid evt_demo_A; the handler credits 100, then fails
   -> 500 {"error":"processing_failed"}   credits: 0
   the credit rolled back with the claim; evt_demo_A in the ledger: false
2. Stripe retries evt_demo_A
   -> 200 {"outcome":"processed"}   credits: 100
3. 10 concurrent copies of evt_demo_B (a new invoice)
   -> processed 1, duplicate 9   credits: 200
4. invoice.payment_succeeded evt_demo_C: another event id for the invoice of evt_demo_B
   -> 200 {"outcome":"processed"}   credits: 200
   the invoice guard held: no second credit
5. evt_demo_A signed with the wrong secret
   -> 400 {"error":"invalid_signature"}   credits: 200
Inbox mode: the webhook stores the event and answers; workers apply it
   (here at most 4 attempts, milliseconds apart; by default 20, over 6.5 days)
6. invoice.paid evt_demo_D while the accounting API fails three times
   -> 200 {"outcome":"queued"}   (stored; a worker applies it)
   worker, attempt 1: failed: accounting API unavailable   credits: 0
   worker, attempt 2: failed: accounting API unavailable   credits: 0
   worker, attempt 3: failed: accounting API unavailable   credits: 0
   worker, attempt 4: processed   credits: 100
7. invoice.paid evt_demo_E, which the handler cannot process (a bug)
   -> 200 {"outcome":"queued"}
   worker, attempt 1: failed: invoice line without a price: a bug in the handler   credits: 100
   worker, attempt 2: failed: invoice line without a price: a bug in the handler   credits: 100
   worker, attempt 3: failed: invoice line without a price: a bug in the handler   credits: 100
   worker, attempt 4: failed: invoice line without a price: a bug in the handler   credits: 100
   dead letter: evt_demo_E after 4 attempts (invoice line without a price: a bug in the handler)
8. the bug is fixed; the dead letter is redriven
   redriven: 1 (pending again, with a fresh attempt budget)
   worker, attempt 1: processed   credits: 200
Tasks: a side effect that must happen once, sent by the inbox's workers after the commit
9. invoice.paid evt_demo_F; the handler credits 100 and enqueues the receipt of in_demo_6
   -> 200 {"outcome":"processed"}   credits: 100   enqueued: true
   committed with the credit: task:send-receipt:in_demo_6 is pending
10. invoice.payment_succeeded evt_demo_G, the twin, enqueues it again
   -> 200 {"outcome":"processed"}   credits: 100   enqueued: false (once per invoice, ever)
11. a worker sends the receipt; the provider accepts it, but its answer is lost on the way back
   worker, attempt 1: failed: mail provider: connection reset before the answer
   provider: 1 email sent; the task is not recorded done (as when a worker dies after the call), so it runs again
12. 1 s later on the inbox's clock (the backoff), the retry carries the same idempotency key
   worker, attempt 2: processed
   provider: 2 requests, both with key send-receipt-6ba44eac...; 1 email sent
   inbox: tasks processed 1, pending 0, failed 0, dead letter 0
Current state: refetch, don't trust the payload (OnCurrent; a fake Stripe API in the process, via stripe-go)
13. sub_demo was created incomplete and activated in the same second, and went past_due a month later:
    the API says past_due. The synchronous handler gets the three events in reverse order
   evt_demo_sub_3 customer.subscription.updated (payload past_due)   -> 200 {"outcome":"processed"}   local: past_due
   evt_demo_sub_2 customer.subscription.updated (payload active)     -> 200 {"outcome":"processed"}   local: past_due
   evt_demo_sub_1 customer.subscription.created (payload incomplete) -> 200 {"outcome":"processed"}   local: past_due
   3 events, 3 fetches (each came after the fetch before it); the payloads in arrival order would have left incomplete
14. the same three events in inbox mode: stored at once, then applied by a worker (WorkDue)
   evt_demo_sub_3 -> 200 {"outcome":"queued"}
   evt_demo_sub_2 -> 200 {"outcome":"queued"}
   evt_demo_sub_1 -> 200 {"outcome":"queued"}
   worker: 3 events, 1 fetch (made after all three were received)   local: past_due
15. CheckOrder, for an object applied from its payloads: cus_demo's email became b@ at 16:00:05, then c@
    and d@ both at 16:00:10; the API says d@. The events arrive d@, b@, c@
   evt_demo_cus_d 16:00:10 d@example.com -> 200 {"outcome":"processed"}  newer: payload applied       local: d@example.com
   evt_demo_cus_b 16:00:05 b@example.com -> 200 {"outcome":"skipped"}    older: stale, skipped        local: d@example.com
   evt_demo_cus_c 16:00:10 c@example.com -> 200 {"outcome":"processed"}  tie: fetched, API's applied  local: d@example.com
   3 events, 1 fetch: the tie's, which kept d@ where c@'s payload would have gone back
`, out.String())
}
