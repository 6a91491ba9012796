// Package keytext is the rule for the text a store of the library keeps
// and indexes (an event id, a guard's scope and key), shared by the
// library and idemctl, which refuses an id before it connects: what
// PostgreSQL refuses or cannot index, and MemoryStore would keep.
package keytext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen bounds, in bytes, the text a PostgreSQL index keeps: an event
// id, a guard's scope and key. A btree entry holds at most 2704 bytes
// (after compression, which ids and hashes defeat), and an insert of a
// longer one fails on every retry where MemoryStore would keep it; two
// keys at the bound fit in one entry.
const MaxKeyLen = 1024

// TextProblem says why a store cannot keep value, as what follows the
// field's name in an error ("is empty", "contains a NUL byte", "is not
// valid UTF-8"), or "" when it can. The empty text is a problem only when
// required. It never quotes the value.
func TextProblem(value string, required bool) string {
	switch {
	case required && value == "":
		return "is empty"
	case strings.IndexByte(value, 0) >= 0:
		return "contains a NUL byte"
	case !utf8.ValidString(value):
		return "is not valid UTF-8"
	}
	return ""
}

// KeyProblem is TextProblem for required text that a store indexes, which
// also refuses text longer than MaxKeyLen ("is 2000 bytes long (at most
// 1024)").
func KeyProblem(value string) string {
	if p := TextProblem(value, true); p != "" {
		return p
	}
	if len(value) > MaxKeyLen {
		return "is " + strconv.Itoa(len(value)) + " bytes long (at most " + strconv.Itoa(MaxKeyLen) + ")"
	}
	return ""
}
