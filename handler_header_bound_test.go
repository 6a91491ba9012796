package idempotency_test

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// An unauthenticated sender's Stripe-Signature of many signatures (up to
// the server's header limit, 1 MiB by default) is refused without work
// that grows with the number of secrets times the number of signatures:
// each secret used to parse the whole header again, allocating about 20
// times its size.
func TestHandlerHugeSignatureHeaderIsCheap(t *testing.T) {
	// Not parallel: it measures the allocations of one request.
	secrets := []string{testSecret, "whsec_second_0123456789", "whsec_third_0123456789"}
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), registry(), idempotency.Config{
		Secrets: secrets, Logger: discardLogger(),
	})
	require.NoError(t, err)
	payload := invoicePayload(t, "evt_hdr", "in_hdr", "acct_1")
	var sb strings.Builder
	sb.WriteString("t=" + strconv.FormatInt(time.Now().Unix(), 10))
	for sb.Len() < 1<<20-16 {
		sb.WriteString(",v1=00")
	}
	header := sb.String()

	serve := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/", strings.NewReader(string(payload)))
		req.Header.Set("Stripe-Signature", header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	require.Equal(t, 400, serve().Code) // warm up
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := serve()
	runtime.ReadMemStats(&after)
	require.Equal(t, 400, rec.Code)
	require.JSONEq(t, `{"error":"invalid_signature"}`, rec.Body.String())
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(4<<20), "bytes allocated for a %d-byte header", len(header))
}

// stallingBody yields a few bytes, then reports its stall once and blocks
// until released: a sender that claims a large Content-Length and trickles.
type stallingBody struct {
	sent    bool
	stalled chan struct{}
	release chan struct{}
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"id":`), nil
	}
	close(b.stalled)
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

func (b *stallingBody) Close() error { return nil }

// A sender that claims a Content-Length of the whole limit and sends a few
// bytes must not make the handler hold the limit's worth of memory while
// it waits: a thousand such connections would hold a gigabyte for a few
// hundred bytes of headers each. The buffer grows with what arrives.
func TestHandlerClaimedContentLengthIsNotPreallocated(t *testing.T) {
	// Not parallel: it measures the allocations of one request.
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), registry(), idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(),
	})
	require.NoError(t, err)
	body := &stallingBody{stalled: make(chan struct{}), release: make(chan struct{})}
	req := httptest.NewRequest("POST", "/", nil)
	req.Body, req.ContentLength = body, idempotency.DefaultMaxBodyBytes
	req.Header.Set("Stripe-Signature", "t=1,v1=00")
	rec := httptest.NewRecorder()

	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	select {
	case <-body.stalled:
	case <-done:
		t.Fatalf("answered %d before reading the body's second part", rec.Code)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not read the body")
	}
	runtime.ReadMemStats(&during)
	close(body.release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not answer once the body failed")
	}
	require.Equal(t, 400, rec.Code)
	held := during.TotalAlloc - before.TotalAlloc
	require.Less(t, held, uint64(idempotency.DefaultMaxBodyBytes/4), "bytes allocated while %d of a claimed %d arrived", 6, idempotency.DefaultMaxBodyBytes)
}
