package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

func TestKey(t *testing.T) {
	t.Parallel()
	k := idempotency.Key("refund", "ord_1", "v1")
	require.Equal(t, k, idempotency.Key("refund", "ord_1", "v1"), "deterministic")
	// A value computed once and pinned: the key must not change between
	// releases, or retries across a deploy would repeat the request.
	// sha256(0x06 "refund" 0x05 "ord_1" 0x02 "v1"), computed independently.
	require.Equal(t, "ik_wR5qPnSDRnFv59rIfcqWsDEuyTc_2AUq-PkRi7jkTLk", k)
	require.Len(t, k, 46)
	require.LessOrEqual(t, len(k), 255)
	require.Regexp(t, `^ik_[A-Za-z0-9_-]{43}$`, k)
	seen := map[string][]string{}
	for _, parts := range [][]string{
		{"refund", "ord_1", "v1"}, {"refund", "ord_1v1"}, {"refundord_1", "v1"}, {"refund", "ord_1", "v1", ""},
		{"refund", "ord_1", "v2"}, {"", "refund", "ord_1", "v1"}, {"refund"}, {""},
	} {
		key := idempotency.Key(parts...)
		require.NotContains(t, seen, key, "%q collides with %q", parts, seen[key])
		seen[key] = parts
	}
	require.Panics(t, func() { idempotency.Key() })
}
