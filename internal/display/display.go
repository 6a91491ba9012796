// Package display makes text that payloads and handlers put in the store
// (event ids, object ids, accounts, last errors, payloads) safe to show to
// an operator, on a terminal (cmd/idemctl) and on a web page (dashboard):
// no control character that drives a terminal, and no bidirectional
// control (an override, an isolate or a mark) that reorders what follows
// it, so that an id reads as another. It also words what both report
// alike: counts (Count, Kinds), a leased event's lease (Lease), a
// task's id and key (IsTaskID, TaskKey), an id in a command to paste
// (ShellWord, IDWord), a record's redrives (Redriven), why an event is
// ignored (LastError, ListedLastError), why neither the inbox nor the
// ledger has an id (Unknown) and why the inbox holds nothing
// (EmptyInbox).
package display

import (
	"fmt"
	"strings"
	"unicode"
)

// Line makes s one line of plain text: each run of whitespace becomes one
// space, and any other control character (C0, DEL, C1: what starts an
// escape sequence) or bidirectional control becomes U+FFFD.
func Line(s string) string {
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return '\uFFFD'
		}
		return r
	}, strings.Join(strings.Fields(s), " "))
}

// isControl reports whether r is a control character or a bidirectional
// control, which Line replaces and IDWord gives no word for.
func isControl(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }

// JSON is the JSON document s with DEL, the C1 controls (U+0080 to
// U+009F) and the bidirectional controls escaped: encoding/json, and
// Stripe, escape the C0 controls but not those, which a terminal may take
// for the start of an escape sequence, and which let a terminal or a
// browser reorder the text after them. In JSON they can only be inside
// strings, where \u escapes read the same.
func JSON(s string) string {
	var out strings.Builder
	for _, r := range s {
		if r == 0x7f || r >= 0x80 && r <= 0x9f || unicode.Is(unicode.Bidi_Control, r) {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

// Unknown says why neither the inbox nor the ledger may have an event's
// id, as idemctl show and the dashboard's event page say it.
const Unknown = "it did not reach this store, " +
	"or its delivery failed, which stores nothing (answered 5xx: in synchronous mode a handler's error, and Stripe sends it again), " +
	"or it was answered ignored (a type without a handler, stored only with Config.RecordIgnored), " +
	"or its claim was pruned (kept Retention.EventIDs, 45 days by default)"

// EmptyInbox says why the inbox may hold no event or task at all, as
// idemctl stats and the dashboard's overview say it beside their zeros:
// the store of a service in synchronous mode has its events in the ledger
// alone. lookUp says how to read an event's ledger record there.
func EmptyInbox(lookUp string) string {
	return "a service in synchronous mode (a Handler without an Inbox) stores no event in it: its applied events are in the ledger alone (" +
		lookUp + "), and a delivery that failed nowhere (answered 5xx, Stripe sends it again); " +
		"an inbox-mode one holds none received in the last Retention.Payloads (7 days by default)"
}

// IgnoredAtReceipt says why an inbox event is ignored when it has no last
// error: the Handler that received it (a delivery, or Recover) had no
// handler for its type and stored it ignored, which it does only with
// Config.RecordIgnored, recording no reason. A worker that records an
// event ignored (past InboxConfig.RetryUnhandledFor) records why.
const IgnoredAtReceipt = "ignored at receipt: no handler for its type in the process that received it (Config.RecordIgnored stores it)"

// IgnoredAtReceiptListed is IgnoredAtReceipt as a list's last error cell
// says it, within the 60 characters idemctl list keeps of the cell: the
// event's own view (idemctl show, the dashboard's event page) says it
// whole.
const IgnoredAtReceiptListed = "ignored at receipt: no handler for its type; see the event"

// LastError is an inbox record's last error as idemctl show and the
// dashboard's event page show it: Line of lastError, or, for an ignored
// event without one, IgnoredAtReceipt; "" when there is none to show.
func LastError(ignored bool, lastError string) string {
	return lastErrorOr(ignored, lastError, IgnoredAtReceipt)
}

// ListedLastError is LastError as a list of records shows it (idemctl
// list, the dashboard's lists), IgnoredAtReceiptListed in place of
// IgnoredAtReceipt.
func ListedLastError(ignored bool, lastError string) string {
	return lastErrorOr(ignored, lastError, IgnoredAtReceiptListed)
}

// lastErrorOr is Line of lastError, or, for an ignored event without one,
// atReceipt; "" when there is none to show.
func lastErrorOr(ignored bool, lastError, atReceipt string) string {
	if s := Line(lastError); s != "" || !ignored {
		return s
	}
	return atReceipt
}
