package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// In inbox mode the workers decode data.object, with the decoder
// InboxConfig.DisableFastDecoder chooses: Config.DisableFastDecoder given
// to Inbox.Handler, the way out of the compiled decoder should it be in
// doubt, changed nothing and said nothing. It is refused unless the
// inbox's workers decode with encoding/json alone.
func TestInboxHandlerRefusesIgnoredDisableFastDecoder(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	store := idempotency.NewMemoryStore()

	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	_, err = in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), DisableFastDecoder: true})
	require.Error(t, err, "Config.DisableFastDecoder would be ignored")
	require.ErrorContains(t, err, "InboxConfig.DisableFastDecoder")
	_, err = in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	in, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger(), DisableFastDecoder: true})
	require.NoError(t, err)
	for _, disable := range []bool{true, false} {
		_, err = in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), DisableFastDecoder: disable})
		require.NoError(t, err, "Config.DisableFastDecoder %v with the inbox's workers on encoding/json", disable)
	}
}
