package idempotencytest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestAnswerEventID: an Answer names the event its delivery sent, read
// from the payload as the Handler reads it, whatever the answer (a
// duplicate, a forged signature's 400, a body naming another id); a
// thin event notification by its own id; and a payload that is not an
// event by none.
func TestAnswerEventID(t *testing.T) {
	t.Parallel()
	h, _ := newCreditHandler(t)
	a := idempotencytest.Deliver(h, invoicePaid(t, "evt_answer_1", "in_answer_1", "acct_answer"), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, "evt_answer_1", a.EventID)

	for _, a := range idempotencytest.Replay(h, invoicePaid(t, "evt_answer_2", "in_answer_2", "acct_answer"), testSecret, 3) {
		require.Equal(t, "evt_answer_2", a.EventID, a.Body)
	}

	a = idempotencytest.Deliver(h, invoicePaid(t, "evt_answer_1", "in_answer_1", "acct_answer"), "whsec_forged")
	require.Equal(t, http.StatusBadRequest, a.Status)
	require.Equal(t, "evt_answer_1", a.EventID, "the payload's event, though the Handler refused it")

	escaped := strings.Replace(string(invoicePaid(t, "evt_answer_e", "in_answer_e", "acct_answer")), `"evt_answer_e"`, `"evt_answer_\u0065"`, 1)
	a = idempotencytest.Deliver(h, []byte(escaped), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, "evt_answer_e", a.EventID, "the id as the Handler reads it, unescaped")

	thin := idempotencytest.NewV2Events().Add(idempotencytest.ThinEvent{ID: "evt_answer_thin", Type: "v1.billing.meter.error_report_triggered",
		RelatedObject: &stripe.RelatedObject{ID: "mtr_1", Type: "billing.meter"}})
	a = idempotencytest.Deliver(h, thin, testSecret) // without Config.StripeClient: refused
	require.Equal(t, http.StatusBadRequest, a.Status, a.Body)
	require.Equal(t, "evt_answer_thin", a.EventID)

	for _, payload := range []string{
		`not json`,
		`{}`,
		`{"id":"cus_1","object":"customer"}`, // an object, not an event
		`{"id":42,"object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`,
		`{"id":"evt_answer_no_data","object":"event","type":"invoice.paid"}`,
		`[{"id":"evt_answer_in_array"}]`,
	} {
		a := idempotencytest.Deliver(h, []byte(payload), testSecret)
		require.Equal(t, idempotencytest.Answer{Status: http.StatusBadRequest, Body: `{"error":"invalid_event"}`}, a, payload)
	}

	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"evt_of_the_answer","outcome":"processed"}`)
	})
	require.Equal(t, "evt_answer_3", idempotencytest.Deliver(echo, invoicePaid(t, "evt_answer_3", "in_answer_3", "acct_answer"), testSecret).EventID)
	require.Empty(t, idempotencytest.Deliver(echo, []byte(`{}`), testSecret).EventID, "not the answer's id")
}
