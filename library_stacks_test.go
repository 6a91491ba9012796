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
	own, _, ok := strings.Cut(stacks, othersHeading)
	require.True(t, ok, stacks)
	require.Contains(t, own, "idempotency.(*MemoryStore).Run", "the waiting call's stack, among the test's own")
	require.NotContains(t, stacks, "idempotency_test.libraryStacks", "the goroutine of the test alone")
}

// TestOwnStacksFirst: of a dump of every goroutine, the stacks that run
// the library's code and that the calling goroutine started, or one of
// those did, come first; the library's others after them, those of a
// goroutine without a creator (the main one) or whose creator is not
// named (a timer's func) too; goroutines without the library's frames
// are left out. A header with the goroutine's details (GOTRACEBACK=system)
// or a wait's length is read as a plain one.
func TestOwnStacksFirst(t *testing.T) {
	t.Parallel()
	const lib = "github.com/seed-a84bb619/idempotency.(*PgxStore).Run(...)\n"
	g := func(header, frames, created string) string {
		return "goroutine " + header + ":\n" + frames + created + "\tmain.go:1 +0x1"
	}
	in := func(parent string) string { return "created by main.f in goroutine " + parent + "\n" }
	var (
		other   = g("13 [select]", lib, in("5"))
		grand   = g("12 [chan receive, 2 minutes]", lib, in("11"))
		test    = g("10 [select]", "testing.tRunner(...)\n", in("1"))
		child   = g("11 gp=0xc000007a40 m=nil [select]", lib, in("10"))
		waiting = g("14 [chan receive]", "main.wait(...)\n", in("10"))
		mainG   = g("1 [chan receive]", lib, "")
		timer   = g("15 [select]", lib, "created by time.goFunc\n")
	)
	dump := strings.Join([]string{other, grand, test, child, waiting, mainG, timer}, "\n\n") + "\n"
	got := ownStacksFirst(dump, "10")
	own, others, ok := strings.Cut(got, othersHeading)
	require.True(t, ok, got)
	require.Equal(t, "the test's own:\n"+grand+"\n\n"+child, own, "the test's own, in the dump's order, its children's children too")
	require.Equal(t, other+"\n\n"+mainG+"\n\n"+timer, others)
	require.Equal(t, "(none)", ownStacksFirst(waiting, "10"))
	require.Equal(t, "the test's own:\n(none)"+othersHeading+other, ownStacksFirst(other, "10"))
}
