package idempotency

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// checkNotifier is an inboxNotifier whose NOTIFY answers notify; nothing
// it sends is heard unless the test calls listenCheck.heard.
type checkNotifier struct {
	notify func(ctx context.Context) error
}

func (n checkNotifier) inboxNotify(ctx context.Context) error { return n.notify(ctx) }
func (checkNotifier) inboxListen(context.Context, func(), func()) error {
	return errors.New("not used")
}

// lockedBuffer is a log sink for the check's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func newListenCheck(notify func(ctx context.Context) error) (*listenCheck, *lockedBuffer) {
	logs := &lockedBuffer{}
	in := &Inbox{cfg: InboxConfig{Timeout: time.Second, PollInterval: time.Second}, listenWait: 10 * time.Millisecond,
		log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	return &listenCheck{in: in, n: checkNotifier{notify}}, logs
}

const (
	unheardLine = "no notification reached the listen connection"
	afterAll    = "a notification reached the listen connection after all"
)

// TestListenCheckWarnsOncePerRun: listen connections that never hear a
// notification (behind PgBouncer each LISTEN after a loss is as deaf)
// are warned about once, not once each, and a notification heard later
// says so once, however many arrive; a connection deaf after that is
// warned about again.
func TestListenCheckWarnsOncePerRun(t *testing.T) {
	c, logs := newListenCheck(func(context.Context) error { return nil })
	ctx := t.Context()
	for range 3 {
		c.start(ctx)
		c.running.Wait()
	}
	require.Equal(t, 1, logs.count(unheardLine))
	c.heard(ctx)
	c.heard(ctx)
	require.Equal(t, 1, logs.count(afterAll))
	require.Zero(t, logs.count("notifications reach the listen connection"), "a line per notification")
	c.start(ctx)
	c.running.Wait()
	require.Equal(t, 2, logs.count(unheardLine))
}

// TestListenCheckNotifyFailed: a check whose NOTIFY failed learnt nothing
// and warns about nothing.
func TestListenCheckNotifyFailed(t *testing.T) {
	c, logs := newListenCheck(func(context.Context) error { return errors.New("test: notify failed") })
	c.start(t.Context())
	c.running.Wait()
	require.Zero(t, logs.count(unheardLine))
}

// TestListenCheckJudgesItsConnection: the check of a lost listen
// connection does not judge the one that listens since: only that one's
// own check does, and this one's NOTIFY failed.
func TestListenCheckJudgesItsConnection(t *testing.T) {
	entered, proceed := make(chan struct{}), make(chan struct{})
	var first sync.Once
	c, logs := newListenCheck(func(context.Context) error {
		err := errors.New("test: notify failed")
		first.Do(func() {
			close(entered)
			<-proceed // until the second connection listens
			err = nil
		})
		return err
	})
	c.start(t.Context()) // the first connection, lost while its check notifies
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first check did not notify")
	}
	c.start(t.Context()) // the second
	close(proceed)
	c.running.Wait()
	require.Zero(t, logs.count(unheardLine))
}
