package idempotency

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"
)

// readFullWithin is readFull, failing the test instead of hanging it when
// readFull does not return.
func readFullWithin(t *testing.T, r io.Reader, n int64) ([]byte, error) {
	t.Helper()
	type result struct {
		buf []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		buf, err := readFull(r, n)
		done <- result{buf, err}
	}()
	select {
	case res := <-done:
		return res.buf, res.err
	case <-time.After(10 * time.Second):
		t.Fatalf("readFull of %d bytes did not return", n)
		return nil, nil
	}
}

// readFull returns exactly the n bytes of a body that has them, however
// the reader splits them, and io.ErrUnexpectedEOF for one that ends early.
func TestReadFull(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, initialBodyBuffer - 1, initialBodyBuffer, initialBodyBuffer + 1, 3*initialBodyBuffer + 7, 1 << 20} {
		want := bytes.Repeat([]byte("0123456789"), n/10+1)[:n]
		for name, r := range map[string]io.Reader{
			"whole":    bytes.NewReader(want),
			"one byte": iotest.OneByteReader(bytes.NewReader(want)),
			"half":     iotest.HalfReader(bytes.NewReader(want)),
			"data+EOF": iotest.DataErrReader(bytes.NewReader(want)),
		} {
			got, err := readFullWithin(t, r, int64(n))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("n=%d %s: %d bytes, %v", n, name, len(got), err)
			}
		}
		if n > 0 {
			_, err := readFullWithin(t, bytes.NewReader(want[:n-1]), int64(n))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("n=%d short: %v", n, err)
			}
		}
	}
}
