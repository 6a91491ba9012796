package idempotency

import (
	"context"
	"net/http"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// bodyStripeUnavailable answers a thin event whose event, or an OnCurrent
// event whose object, could not be fetched for a reason that may pass:
// Stripe sends it again.
var bodyStripeUnavailable = []byte(`{"error":"stripe_unavailable"}`)

// serveThin answers a verified thin event notification: it fetches the
// event the notification names with Config.StripeClient and accepts it as
// a snapshot event is accepted, claimed by its id. A notification carries
// no object, so without a client it is refused, as before thin events were
// supported. One of a type with no handler is answered ignored without a
// fetch, unless Config.RecordIgnored records it, and one of an event the
// store holds already is answered duplicate without one.
//
// The event is fetched in the request, in inbox mode too, so that the
// inbox stores (and its workers apply) the event itself: a 2xx means the
// event is stored, and an attempt never waits on the API.
func (h *Handler) serveThin(ctx context.Context, notification []byte, res *Result) (int, []byte) {
	client := h.cfg.StripeClient
	if client == nil {
		res.Err = ErrThinEvent
		return http.StatusBadRequest, bodyInvalidEvent
	}
	n, err := envelope.ParseThin(notification)
	if err == nil {
		// What accept checks of the event, checked of the notification
		// first: one of a type with no handler is answered without a fetch.
		err = checkEnvelope(&envelope.Envelope{ID: n.ID, Type: n.Type, Account: n.Context, Replaced: n.Replaced})
	}
	if err != nil {
		res.Err = errorf("%w: thin event notification: %w", ErrMalformedEvent, err)
		return http.StatusBadRequest, bodyInvalidEvent
	}
	res.EventID, res.EventType, res.Account = n.ID, n.Type, n.Context
	if n.Livemode != nil {
		// Refused without a fetch, which a key of the endpoint's mode
		// would fail (404) and Stripe retry for days; accept checks the
		// fetched event, which has the final word.
		if err := h.checkMode(&envelope.Envelope{ID: n.ID, Livemode: *n.Livemode}); err != nil {
			res.Err = errorf("thin event notification: %w", err)
			return http.StatusBadRequest, bodyInvalidEvent
		}
	}
	if !h.handles(n.Type) && !h.cfg.RecordIgnored {
		// The fetched event would be dropped, as accept drops any event
		// of a type with no handler: no API call, and no 503 for it.
		res.Outcome = OutcomeIgnored
		return http.StatusOK, bodyOutcome[OutcomeIgnored]
	}
	// The look-up and the fetch share a Timeout: the answer takes up to
	// twice Timeout, as Config.Timeout says.
	fetchCtx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	if objectID, held := h.held(fetchCtx, n.ID); held {
		// Claimed or stored already: a redelivery, or a copy of the
		// notification sent again by whoever captured it, answered
		// duplicate, as any copy of a known event is, without the fetch,
		// which counts against the account's API rate limit that the
		// service's own calls share. An insert left unanswered wakes the
		// workers, as enqueue wakes them for its duplicate.
		if in := h.inbox; in != nil && in.unanswered.take(n.ID) && h.handles(n.Type) {
			in.signal()
			in.notifyOthers()
		}
		res.ObjectID, res.Outcome = objectID, OutcomeDuplicate
		return http.StatusOK, bodyOutcome[OutcomeDuplicate]
	}
	if ranOut(fetchCtx) {
		// The store's look-up took the whole Timeout: the store is what
		// is slow, not the Stripe API, which was not called.
		res.Outcome = OutcomeUnavailable
		res.Err = errorf("%w: %w after %s (looking up whether the store holds thin event %s, before its fetch)",
			ErrStoreUnavailable, ErrTimeout, h.cfg.Timeout, n.ID)
		return http.StatusServiceUnavailable, bodyUnavailable
	}
	payload, err := retrieveV2Event(fetchCtx, client, n.ID, n.Context)
	cancel()
	var env envelope.Envelope
	if err == nil {
		env, err = envelope.ParseV2Event(payload)
		switch {
		case err != nil:
			err = errorf("%w: the v2 event fetched for %s is malformed: %w", ErrStripeAPI, n.ID, err)
		case env.ID != n.ID || env.Type != n.Type:
			err = errorf("%w: the v2 event fetched for %s has another id or type", ErrStripeAPI, n.ID)
		}
	}
	if err != nil {
		res.Outcome, res.Err = OutcomeFailed, err
		if transientAPIError(err) {
			return http.StatusServiceUnavailable, bodyStripeUnavailable
		}
		return http.StatusInternalServerError, bodyFailed
	}
	return h.accept(ctx, &env, payload, res)
}
