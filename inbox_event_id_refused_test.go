package idempotency_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestInboxRefusesAnIDNoEventCanHave: an id no event can have (empty, a
// NUL byte, invalid UTF-8, over 1024 bytes) is refused with ErrInvalidKey
// by Inbox.Lookup, HeldBy and Payload, as Forget refuses it, on both
// stores, each error naming its method. (The three answered "not found",
// a mistyped or truncated id looking like an event the inbox does not
// have.) An id of 1024 bytes is an id: not found, no error.
func TestInboxRefusesAnIDNoEventCanHave(t *testing.T) {
	t.Parallel()
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			inbox, _, _ := queuedInvoice(t, store, idempotency.InboxConfig{}, "evt_id_refused")
			ctx := t.Context()
			methods := map[string]func(id string) error{
				"Lookup": func(id string) error {
					_, found, err := inbox.Lookup(ctx, id)
					require.False(t, found)
					return err
				},
				"HeldBy": func(id string) error {
					holders, err := inbox.HeldBy(ctx, id)
					require.Empty(t, holders)
					return err
				},
				"Payload": func(id string) error {
					body, found, err := inbox.Payload(ctx, id)
					require.False(t, found)
					require.Nil(t, body)
					return err
				},
				"Forget": func(id string) error {
					found, err := inbox.Forget(ctx, id)
					require.False(t, found)
					return err
				},
			}
			for name, call := range methods {
				for _, bad := range []string{"", "evt_\x00", "evt_\xff", "evt_" + strings.Repeat("x", 1021)} {
					err := call(bad)
					require.ErrorIs(t, err, idempotency.ErrInvalidKey, "%s(%.20q)", name, bad)
					require.ErrorContains(t, err, "event id", "%s(%.20q)", name, bad)
					if name != "Forget" {
						require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("idempotency: Inbox.%s: ", name)), "%s", err)
					}
				}
				require.NoError(t, call(strings.Repeat("x", 1024)), name)
			}
			// The event is still there: nothing above touched it.
			_, found, err := inbox.Lookup(ctx, "evt_id_refused")
			require.NoError(t, err)
			require.True(t, found)
		})
	}
}
