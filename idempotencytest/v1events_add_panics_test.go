package idempotencytest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV1EventsAddPanicsSayWhatToWrite: Add refuses a payload that no
// event of the Events API could be, and says what to write instead in
// the test's own words (JSON, an object, a field as Stripe sends it), not
// in the fake's Go types: a created in milliseconds, as ThinEvent.Created
// reads, which the Handler would refuse as after the year 9999 and fail
// at Recover; a created as a string or a fraction; an account that is
// not a string, or not one connected account's id (a path of accounts, as
// a ThinEvent's Context may be), which no Recover lists; JSON that is
// not an object.
func TestV1EventsAddPanicsSayWhatToWrite(t *testing.T) {
	t.Parallel()
	ms := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC).UnixMilli()
	for payload, says := range map[string]string{
		fmt.Sprintf(`{"id":"evt_1","type":"invoice.paid","created":%d}`, ms): fmt.Sprintf(
			"idempotencytest: V1Events.Add: the payload's created, %d, is after the year 9999: created is in seconds since the Unix epoch, not milliseconds", ms),
		`{"id":"evt_1","type":"invoice.paid","created":"2026-03-01T08:00:00Z"}`: "idempotencytest: V1Events.Add: the payload's created is not a whole number of seconds since the Unix epoch: \"2026-03-01T08:00:00Z\"",
		`{"id":"evt_1","type":"invoice.paid","created":1772352000.5}`:           "idempotencytest: V1Events.Add: the payload's created is not a whole number of seconds since the Unix epoch: 1772352000.5",
		`{"id":"evt_1","type":"invoice.paid","created":1772352000,"account":1}`: "idempotencytest: V1Events.Add: the payload's account is not a string: 1",
		`{"id":"evt_1","type":"invoice.paid","created":1772352000,"account":"acct_1/acct_2"}`: "idempotencytest: V1Events.Add: the payload's account, \"acct_1/acct_2\", is not a connected account's id (acct_...): " +
			"a v1 event's account is one account, never a path of accounts as a thin event's context may be, and Recover lists no other",
		`{"id":"evt_1","type":"invoice.paid","created":1772352000,"account":"cus_1"}`: "idempotencytest: V1Events.Add: the payload's account, \"cus_1\", is not a connected account's id (acct_...): " +
			"a v1 event's account is one account, never a path of accounts as a thin event's context may be, and Recover lists no other",
		`{"id":1,"type":"invoice.paid","created":1772352000}`:         "idempotencytest: V1Events.Add: the payload's id is not a string: 1",
		`[{"id":"evt_1","type":"invoice.paid","created":1772352000}]`: "idempotencytest: V1Events.Add: the payload is not a JSON object, as an event is",
		`null`:           "idempotencytest: V1Events.Add: the payload is not a JSON object, as an event is",
		`{"id":"evt_1",`: "idempotencytest: V1Events.Add: the payload is not JSON: unexpected end of JSON input",
	} {
		require.PanicsWithValue(t, says, func() { idempotencytest.NewV1Events().Add([]byte(payload)) }, payload)
	}
}
