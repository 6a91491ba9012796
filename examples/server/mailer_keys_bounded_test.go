package main

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMailerRemembersTheNewestKeys: the mailer in the process keeps the
// newest mailerKeys idempotency keys with their emails, and forgets the
// oldest as more are sent, so that a service that runs for weeks on it
// keeps a bounded memory. A key still remembered sends nothing again; one
// forgotten is sent again, as a provider sends a key it has expired.
func TestMailerRemembersTheNewestKeys(t *testing.T) {
	t.Parallel()
	m := newMailer(slog.New(slog.DiscardHandler))
	send := func(i int) {
		require.NoError(t, m.Send(t.Context(), fmt.Sprintf("key_%d", i),
			Email{To: "acct_bound", Subject: fmt.Sprintf("in_%d", i), Body: "Paid: 2000 usd."}))
	}
	// remembered reports how many emails the mailer keeps, and whether
	// it keeps those of the keys i.
	remembered := func(i ...int) (int, []bool) {
		emails, _ := m.Sent()
		subjects := make(map[string]bool, len(emails))
		for _, e := range emails {
			subjects[e.Subject] = true
		}
		kept := make([]bool, len(i))
		for j, i := range i {
			kept[j] = subjects[fmt.Sprintf("in_%d", i)]
		}
		return len(emails), kept
	}
	const over = 10
	for i := range mailerKeys + over {
		send(i)
	}
	n, kept := remembered(0, over-1, over, mailerKeys+over-1)
	require.Equal(t, mailerKeys, n, "the oldest %d keys forgotten", over)
	require.Equal(t, []bool{false, false, true, true}, kept, "the keys 0, %d, %d and %d remembered", over-1, over, mailerKeys+over-1)
	_, requests := m.Sent()
	require.Equal(t, mailerKeys+over, requests)

	logs := newLogWatch("email sent")
	m.log = slog.New(slog.NewTextHandler(logs, nil))
	send(mailerKeys + over - 1)
	require.NotContains(t, logs.String(), "email sent", "a key remembered sends nothing")
	send(0)
	require.Equal(t, 1, strings.Count(logs.String(), `msg="email sent"`), "a key forgotten is sent again")
	n, kept = remembered(0, over, over+1)
	require.Equal(t, mailerKeys, n)
	require.Equal(t, []bool{true, false, true}, kept, "key_0 remembered again, in place of the oldest, key_%d", over)
}
