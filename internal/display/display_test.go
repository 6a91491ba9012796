package display

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestLineDropsBidiControls: a stored value (an object id, a last error)
// with a bidirectional control character (U+202E RIGHT-TO-LEFT OVERRIDE,
// an isolate, a mark) would reorder what the operator's terminal or
// browser shows after it, so that an id reads as another; Line replaces
// each with U+FFFD, as it does a control character.
func TestLineDropsBidiControls(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"ch_\u202Egpj.exe",      // override
		"in_\u2066abc\u2069def", // isolate
		"evt_\u200Fx\u200Ey",    // marks
		"\u061Cacct",            // Arabic letter mark
		"a\u202Ab\u202Bc\u202Cd\u202De\u2067f\u2068g",
	} {
		got := Line(s)
		require.False(t, strings.ContainsFunc(got, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }), "%q gave %q", s, got)
		require.Contains(t, got, "\uFFFD", "%q", s)
	}
	require.Equal(t, "in_x café", Line("in_x\tcafé"), "other text stays")
	require.Equal(t, `{"object_id":"ch_\u202egpj.exe \u2066é\u2069"}`, JSON("{\"object_id\":\"ch_\u202Egpj.exe \u2066é\u2069\"}"), "JSON escapes them, reading the same")
}

// TestJSONBounds: DEL and every C1 control, U+0080 to U+009F, are
// escaped; U+00A0 is not.
func TestJSONBounds(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"\u007f\u0080\u009f`+"\u00a0\"", JSON("\"\u007f\u0080\u009f\u00a0\""))
}

// TestKinds: a redrive that moves events and tasks names each kind with
// its count, in the number the count needs (idemctl redrive, the
// dashboard's message after a redrive).
func TestKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		events, tasks int
		want          string
	}{
		{0, 0, "0 events"}, {1, 0, "1 event"}, {0, 1, "1 task"}, {2, 1, "2 events and 1 task"}, {1, 3, "1 event and 3 tasks"},
	} {
		require.Equal(t, c.want, Kinds(c.events, c.tasks))
	}
}

// TestRedriven: a record never redriven says so; one redriven says how
// often, in the number the count needs, and when last (idemctl show, the
// dashboard's event page).
func TestRedriven(t *testing.T) {
	t.Parallel()
	require.Equal(t, "never", Redriven(0, "T"))
	require.Equal(t, "1 time, last T", Redriven(1, "T"))
	require.Equal(t, "2 times, last T", Redriven(2, "T"))
}

// TestLastError: an ignored record without a last error was stored ignored
// at receipt, which records no reason: LastError says so; a last error, an
// ignored record's too (a worker's reason), is shown as Line shows it.
func TestLastError(t *testing.T) {
	t.Parallel()
	require.Equal(t, IgnoredAtReceipt, LastError(true, ""))
	require.Equal(t, IgnoredAtReceipt, LastError(true, " \n"), "white space alone is none")
	require.Equal(t, "no handler: x", LastError(true, "no handler:\nx"))
	require.Empty(t, LastError(false, ""))
	require.Equal(t, "boom", LastError(false, "boom"))
}

// TestListedLastError: a list's cell says an event was ignored at receipt
// within the 60 characters idemctl list keeps, and names where to look
// for more; any other last error is LastError's.
func TestListedLastError(t *testing.T) {
	t.Parallel()
	require.Equal(t, IgnoredAtReceiptListed, ListedLastError(true, " \n"))
	require.LessOrEqual(t, utf8.RuneCountInString(IgnoredAtReceiptListed), 60)
	require.Contains(t, IgnoredAtReceiptListed, "ignored at receipt")
	require.Equal(t, "no handler: x", ListedLastError(true, "no handler:\nx"))
	require.Empty(t, ListedLastError(false, ""))
	require.Equal(t, "boom", ListedLastError(false, "boom"))
}

// TestShellWord: an id a shell would read as it is stays as it is; any
// other, a space, a semicolon, a quote, a $ or a leading = in it, is one
// word that /bin/sh gives back unchanged.
func TestShellWord(t *testing.T) {
	t.Parallel()
	require.Equal(t, "evt_1NirD82eZvKYlo2C", ShellWord("evt_1NirD82eZvKYlo2C"))
	require.Equal(t, "task:send-receipt:in_1", ShellWord("task:send-receipt:in_1"))
	for _, s := range []string{"", "in_1 2;echo it's", "$(id)", "`id`", "=ls", "a\\b", "'", "~root", "x*"} {
		w := ShellWord(s)
		require.NotEqual(t, s, w, "quoted")
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+w).Output()
		require.NoError(t, err, w)
		require.Equal(t, s, string(out), w)
	}
}
