package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// declinedCardAPI answers every request as Stripe answers a declined
// card: 402, and an error that holds the payment intent and the payment
// method, with the intent's client secret and the customer's email and
// name, as Stripe's does.
var declinedCardAPI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_declined_1")
	w.WriteHeader(http.StatusPaymentRequired)
	_, _ = fmt.Fprintf(w, `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds",
"message":"Your card has insufficient funds.","param":"payment_method","doc_url":"https://stripe.com/docs/error-codes/card-declined",
"payment_intent":{"id":"pi_1","object":"payment_intent","amount":2000,"currency":"usd","client_secret":"pi_1_secret_%[1]s",
"receipt_email":%[2]q,"status":"requires_payment_method"},
"payment_method":{"id":"pm_1","object":"payment_method","type":"card","billing_details":{"email":%[2]q,"name":"Jane Leak"}}}}`,
		"Sk3tchyS3cret", payloadMarker)
})

// chargeDeclined is what a handler or task that charges a card with
// stripe-go returns when the card is declined: stripe-go's error, wrapped.
// With typed, the error wraps the *stripe.CardError of the error's Err
// instead, whose text is the same JSON.
func chargeDeclined(ctx context.Context, typed bool) error {
	client := idempotencytest.NewStripeClient(fakeStripeKey, declinedCardAPI)
	_, err := client.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd")})
	var se *stripe.Error
	if !errors.As(err, &se) {
		return errors.New("the card was not declined")
	}
	if typed {
		return fmt.Errorf("charging the customer: %w", se.Err)
	}
	return fmt.Errorf("charging the customer: %w", err)
}

// requireStripeErrorSummarized: text, a log or a LastError of the error
// chargeDeclined returns, names the Stripe error by its status, type,
// codes, parameter and request id, keeps the handler's own words, and
// quotes nothing else of the answer: neither the client secret, nor the
// customer's email or name, nor Stripe's message.
func requireStripeErrorSummarized(t *testing.T, text, what string) {
	t.Helper()
	for _, leak := range []string{payloadMarker, "Sk3tchyS3cret", "Jane Leak", "insufficient funds.", "payment_intent\""} {
		require.NotContains(t, text, leak, what)
	}
	for _, kept := range []string{"charging the customer: ", "HTTP 402", "card_error", "card_declined", "insufficient_funds", "payment_method", "req_declined_1"} {
		require.Contains(t, text, kept, what)
	}
}

// failingHandler delivers an event to a Handler whose handler returns
// fail's error, and returns the delivery's Result and the log.
func failingHandler(t *testing.T, fail func(context.Context) error) (idempotency.Result, string) {
	t.Helper()
	logger, logs := testLogger()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		return fail(ctx)
	})
	var res idempotency.Result
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: logger, OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_declined", nil), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status)
	return res, logs.String()
}

// failingTask runs once, on store, a task whose func returns fail's
// error, and returns its record's LastError and the log.
func failingTask(t *testing.T, store idempotency.Store, fail func(context.Context) error) (lastError, log string) {
	t.Helper()
	logger, logs := testLogger()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "charge", func(ctx context.Context, _ idempotency.TaskRun[misuseArgs]) error {
		return fail(ctx)
	})
	_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_declined_task", EventType: "invoice.paid", ReceivedAt: clock.Now()},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
			return err
		})
	require.NoError(t, err)
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: logger})
	require.NoError(t, err)
	misuseWork(t, in, 1)
	rec := misuseLookup(t, in, task.ID("in_1"))
	require.Equal(t, idempotency.InboxFailed, rec.State)
	return rec.LastError, logs.String()
}

// A handler or a task that calls the Stripe API and returns stripe-go's
// error, as most do: the error's text is its JSON, with the payment
// intent (and its client secret) and the customer's email and name. It
// reached the log line and the inbox's LastError, which the dashboard and
// idemctl show. Both now name the error by its status, type, codes and
// request id, also when the handler's error wraps the typed error of the
// *stripe.Error's Err (a *stripe.CardError); Result.Err is the handler's
// error itself, reachable with errors.As.
func TestStripeErrorOfAHandlerKeepsTheCustomerOut(t *testing.T) {
	t.Parallel()
	for name, typed := range map[string]bool{"handler": false, "handler/typed": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, logs := failingHandler(t, func(ctx context.Context) error { return chargeDeclined(ctx, typed) })
			if typed {
				var ce *stripe.CardError
				require.ErrorAs(t, res.Err, &ce, "Result.Err is the handler's error")
				require.Equal(t, stripe.DeclineCodeInsufficientFunds, ce.DeclineCode)
			} else {
				var se *stripe.Error
				require.ErrorAs(t, res.Err, &se, "Result.Err is the handler's error")
				require.Equal(t, stripe.ErrorCodeCardDeclined, se.Code)
			}
			requireStripeErrorSummarized(t, logs, "the log")
		})
	}
	t.Run("wrapped by the package", func(t *testing.T) {
		t.Parallel()
		err := chargeDeclined(t.Context(), false)
		requireStripeErrorSummarized(t, idempotency.Permanent(err).Error(), "Permanent")
		requireStripeErrorSummarized(t, (&idempotency.PanicError{Value: err}).Error(), "a panic's")
		var se *stripe.Error
		require.ErrorAs(t, idempotency.Permanent(err), &se)
	})
	for name, store := range bothStores(t) {
		t.Run("task/"+name, func(t *testing.T) {
			t.Parallel()
			lastError, logs := failingTask(t, store, func(ctx context.Context) error { return chargeDeclined(ctx, false) })
			requireStripeErrorSummarized(t, lastError, "LastError")
			requireStripeErrorSummarized(t, logs, "the log")
		})
	}
}

// v2RefusedAPI answers every request as the Stripe API answers a v2
// request it refuses: an error with a type, a code and a message, which
// may quote what the request sent (here the customer's email and name).
func v2RefusedAPI(typ string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"type":%q,"code":"invalid_email","message":"%[2]s is not a valid email for Jane Leak.",
"user_message":"Check %[2]s."}}`, typ, payloadMarker)
	})
}

// A handler or a task that calls a v2 API (an event destination, an
// account) and returns stripe-go's error: its text is its JSON too
// (*stripe.V2RawError, or a typed v2 error such as
// *stripe.TemporarySessionExpiredError), with Stripe's message, which
// may quote what the request sent. The log line, LastError and the
// package's errors wrapping it name it by its type and code.
func TestStripeV2ErrorOfAHandlerKeepsTheCustomerOut(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"invalid_request", "temporary_session_expired"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			refused := func(ctx context.Context) error {
				client := idempotencytest.NewStripeClient(fakeStripeKey, v2RefusedAPI(typ))
				_, err := client.V2CoreEventDestinations.Create(ctx, &stripe.V2CoreEventDestinationCreateParams{Name: stripe.String(payloadMarker)})
				if err == nil {
					return errors.New("the request was not refused")
				}
				return fmt.Errorf("creating the destination: %w", err)
			}
			summarized := func(text, what string) {
				t.Helper()
				for _, leak := range []string{payloadMarker, "Jane Leak", "is not a valid email"} {
					require.NotContains(t, text, leak, what)
				}
				for _, kept := range []string{"creating the destination: ", typ, "invalid_email"} {
					require.Contains(t, text, kept, what)
				}
			}
			requireSummarizedBeyondResult(t, refused, payloadMarker, summarized)
		})
	}
}

// A handler or a task that calls the Stripe API through a proxy that
// fails (a 502 with its HTML page, which may echo the request's headers,
// the key among them) and returns stripe-go's error: its text quotes 500
// bytes of the body ("Couldn't deserialize JSON (response status: 502,
// body sample: '...')"), as it does an object stripe-go could not decode,
// a customer's details and all. The log line, LastError and the package's
// errors wrapping it name it by its status alone.
func TestUndecodedAnswerOfAHandlerIsNotQuoted(t *testing.T) {
	t.Parallel()
	proxied := func(ctx context.Context) error {
		api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxyPage(http.StatusBadGateway)(w) })
		client := idempotencytest.NewStripeClient(fakeStripeKey, api)
		_, err := client.V1Customers.Retrieve(ctx, "cus_1", nil)
		require.ErrorContains(t, err, "Couldn't deserialize JSON", "stripe-go's error quotes the body")
		return fmt.Errorf("fetching the customer: %w", err)
	}
	summarized := func(text, what string) {
		t.Helper()
		for _, leak := range []string{fakeStripeKey, "jane.doe", "<html", "body sample"} {
			require.NotContains(t, text, leak, what)
		}
		require.Contains(t, text, "fetching the customer: stripe-go: HTTP 502, an answer it could not decode", what)
	}
	requireSummarizedBeyondResult(t, proxied, "body sample", summarized)
}

// A handler or a task that calls the Stripe API through a gateway that
// fails with JSON of its own (an API gateway's {"message":...}, without
// Stripe's error object) and returns stripe-go's error: its text is the
// whole body, whatever its length, which may echo the request's headers,
// the key among them. The log line, LastError and the package's errors
// wrapping it say what it is and quote none of it.
func TestGatewayJSONAnswerOfAHandlerIsNotQuoted(t *testing.T) {
	t.Parallel()
	body := fmt.Sprintf(`{"message":%q,"padding":%q}`, proxyEcho, strings.Repeat("x", 64<<10))
	proxied := func(ctx context.Context) error {
		api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(body))
		})
		client := idempotencytest.NewStripeClient(fakeStripeKey, api)
		_, err := client.V1Customers.Retrieve(ctx, "cus_1", nil)
		require.EqualError(t, err, body, "stripe-go's error is the body")
		return fmt.Errorf("fetching the customer: %w", err)
	}
	summarized := func(text, what string) {
		t.Helper()
		for _, leak := range []string{fakeStripeKey, "jane.doe", "xxxxxxxx", `"message"`} {
			require.NotContains(t, text, leak, what)
		}
		require.Contains(t, text, "fetching the customer: stripe-go: an error answer that is not the Stripe API's", what)
		require.Less(t, len(text), 2000, what)
	}
	requireSummarizedBeyondResult(t, proxied, proxyEcho, summarized)
}

// requireSummarizedBeyondResult checks with summarized each text that the
// error fail returns reaches beyond Result.Err, which is the handler's
// error itself (it contains inResult): a handler's log line, Permanent's
// text, a task's LastError and its log line.
func requireSummarizedBeyondResult(t *testing.T, fail func(context.Context) error, inResult string, summarized func(text, what string)) {
	t.Helper()
	res, logs := failingHandler(t, fail)
	require.ErrorContains(t, res.Err, inResult, "Result.Err is the handler's error")
	summarized(logs, "the log")
	summarized(idempotency.Permanent(fail(t.Context())).Error(), "Permanent")
	lastError, logs := failingTask(t, idempotency.NewMemoryStore(), fail)
	summarized(lastError, "LastError")
	summarized(logs, "the task's log")
}
