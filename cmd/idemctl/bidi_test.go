package main

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// TestOneLineDropsBidiControls: a stored value (an object id, a last
// error) with a bidirectional control character (U+202E RIGHT-TO-LEFT
// OVERRIDE, an isolate, a mark) would reorder what the operator's terminal
// shows after it, so that an id reads as another; oneLine replaces each
// with U+FFFD, as it does a control character.
func TestOneLineDropsBidiControls(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"ch_\u202Egpj.exe",      // override
		"in_\u2066abc\u2069def", // isolate
		"evt_\u200Fx\u200Ey",    // marks
		"\u061Cacct",            // Arabic letter mark
		"a\u202Ab\u202Bc\u202Cd\u202De\u2067f\u2068g",
	} {
		got := oneLine(s)
		require.False(t, strings.ContainsFunc(got, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }), "%q gave %q", s, got)
		require.Contains(t, got, "\uFFFD", "%q", s)
	}
	require.Equal(t, "in_x café", oneLine("in_x\tcafé"), "other text stays")
	require.Equal(t, `{"object_id":"ch_\u202egpj.exe \u2066é\u2069"}`, jsonForTerminal([]byte("{\"object_id\":\"ch_\u202Egpj.exe \u2066é\u2069\"}")), "-json escapes them, reading the same")
}
