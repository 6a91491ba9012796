package idempotency_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestHandlerRejectionsWrapASentinel: the package documents that what it
// finds wrong with a delivery is, or wraps, one of its exported sentinels
// or types, for errors.Is and errors.As; Result.Err of a request of another method
// than POST (405) and of a body that ended before its Content-Length (400)
// were errors no caller could name: an unexported sentinel, and the read's
// error (io.ErrUnexpectedEOF) alone. They wrap ErrMethodNotAllowed and
// ErrUnreadableBody, with a body sent chunked too (its own read), whose
// read's error stays wrapped.
func TestHandlerRejectionsWrapASentinel(t *testing.T) {
	t.Parallel()
	payload := invoicePayload(t, "evt_sentinel", "in_1", "acct_1")
	short := idempotencytest.NewSignedRequest("/", payload, testSecret)
	short.Body = io.NopCloser(bytes.NewReader(payload[:len(payload)/2]))
	// Chunked (no Content-Length): the sender hangs up mid-body.
	chunked := func() *http.Request {
		r := idempotencytest.NewSignedRequest("/", payload, testSecret)
		r.ContentLength = -1
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(payload[:len(payload)/2]), iotest.ErrReader(io.ErrUnexpectedEOF)))
		return r
	}
	for _, tt := range []struct {
		name string
		req  *http.Request
		want error
	}{
		{"GET", httptest.NewRequest(http.MethodGet, "/", nil), idempotency.ErrMethodNotAllowed},
		{"body shorter than its Content-Length", short, idempotency.ErrUnreadableBody},
		{"chunked body cut short", chunked(), idempotency.ErrUnreadableBody},
		{"chunked body cut short, the read's error", chunked(), io.ErrUnexpectedEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, idempotency.Config{}, nil)
			b.serve(tt.req)
			res := b.lastResult(t)
			require.Equal(t, idempotency.OutcomeRejected, res.Outcome)
			require.True(t, errors.Is(res.Err, tt.want), "Result.Err %q does not wrap %q", res.Err, tt.want)
		})
	}
}
