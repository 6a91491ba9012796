package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestNilStoreRefusalText: NewHandler and NewInbox refuse a nil store in
// words that name the nil's type only when it has one: a nil interface
// reads "nil Store", not "nil Store (a nil <nil>)".
func TestNilStoreRefusalText(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	_, err := idempotency.NewHandler(nil, hs, idempotency.Config{Secrets: []string{testSecret}})
	require.EqualError(t, err, "idempotency: NewHandler: nil Store")
	_, err = idempotency.NewInbox(nil, hs, idempotency.InboxConfig{})
	require.EqualError(t, err, "idempotency: NewInbox: nil Store")
	_, err = idempotency.NewHandler((*idempotency.MemoryStore)(nil), hs, idempotency.Config{Secrets: []string{testSecret}})
	require.EqualError(t, err, "idempotency: NewHandler: nil Store (a nil *idempotency.MemoryStore)")
}
