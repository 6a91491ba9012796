package pgtest

import (
	"context"
	"testing"
	"time"
)

// SetReleaseWait sets how long a test's cleanup waits for its pool's
// connections to be released, and returns a func that restores it.
func SetReleaseWait(d time.Duration) (restore func()) {
	old := releaseWait
	releaseWait = d
	return func() { releaseWait = old }
}

// Fingerprint is the fingerprint a Template compares, of schema.
func Fingerprint(t testing.TB, schema string) string {
	t.Helper()
	fp, err := fingerprint(context.Background(), shared(t).admin, schema)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}
