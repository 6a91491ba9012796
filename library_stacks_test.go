package idempotency_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestLibraryStacksShowWhereACallWaits: the message of a wait that ran
// out (recv) shows the stack of a call of the library's that has not
// returned, and leaves out the goroutines of the tests alone.
func TestLibraryStacksShowWhereACallWaits(t *testing.T) {
	store := idempotency.NewMemoryStore()
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_library_stacks", EventType: "invoice.paid"},
			func(context.Context, idempotency.Tx) error {
				close(entered)
				<-release
				return nil
			})
		done <- err
	}()
	<-entered
	stacks := libraryStacks()
	close(release)
	require.NoError(t, <-done)
	own, _, ok := strings.Cut(stacks, "\n\nthe other tests':\n")
	require.True(t, ok, stacks)
	require.Contains(t, own, "idempotency.(*MemoryStore).Run", "the waiting call's stack, among the test's own")
	require.NotContains(t, stacks, "idempotency_test.libraryStacks", "the goroutine of the test alone")
}

// TestOwnStacksFirst: of a dump of every goroutine, the stacks that run
// the library's code and that the calling goroutine started, or one of
// those did, come first; the library's others after them; goroutines
// without the library's frames are left out.
func TestOwnStacksFirst(t *testing.T) {
	t.Parallel()
	const lib = "github.com/seed-a84bb619/idempotency.(*PgxStore).Run(...)\n"
	g := func(id, parent, frames string) string {
		return "goroutine " + id + " [select]:\n" + frames + "created by main.f in goroutine " + parent + "\n\tmain.go:1 +0x1"
	}
	dump := strings.Join([]string{
		g("13", "5", lib),                      // another test's
		g("12", "11", lib),                     // started by one the test started
		g("10", "1", "testing.tRunner(...)\n"), // the test's
		g("11", "10", lib),                     // started by the test
		g("14", "10", "main.wait(...)\n"),      // the test's, none of the library's code
	}, "\n\n") + "\n"
	got := ownStacksFirst(dump, "10")
	own, others, ok := strings.Cut(got, "\n\nthe other tests':\n")
	require.True(t, ok, got)
	require.Equal(t, "the test's own:\n"+g("12", "11", lib)+"\n\n"+g("11", "10", lib), own)
	require.Equal(t, g("13", "5", lib), others)
	require.Equal(t, "(none)", ownStacksFirst(g("14", "10", "main.wait(...)\n"), "10"))
	require.Equal(t, "the test's own:\n(none)\n\nthe other tests':\n"+g("13", "5", lib), ownStacksFirst(g("13", "5", lib), "10"))
}
