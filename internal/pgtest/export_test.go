package pgtest

import "time"

// SetReleaseWait sets how long a test's cleanup waits for its pool's
// connections to be released, and returns a func that restores it.
func SetReleaseWait(d time.Duration) (restore func()) {
	old := releaseWait
	releaseWait = d
	return func() { releaseWait = old }
}
