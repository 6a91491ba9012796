package dashboard_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestNewRefusesAnInboxNotMadeByNewInbox: New refuses a Config.Inbox
// that idempotency.NewInbox did not return, naming the field and
// NewInbox, as it refuses none: it took a zero Inbox, and every page
// then answered 503 "Store unavailable", the log saying the inbox was
// not made, request after request.
func TestNewRefusesAnInboxNotMadeByNewInbox(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   *idempotency.Inbox
		want string
	}{
		{nil, "dashboard: Config.Inbox is required"},
		{&idempotency.Inbox{}, "dashboard: Config.Inbox: an Inbox not made by idempotency.NewInbox"},
	} {
		d, err := dashboard.New(dashboard.Config{Inbox: c.in})
		require.EqualError(t, err, c.want)
		require.Nil(t, d)
	}
}
