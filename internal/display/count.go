package display

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Count is n with the noun in its number: "1 row", "0 rows", "2 rows".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Kinds is a count of inbox events and tasks, each kind apart, as
// idemctl and the dashboard report a redrive: "1 event", "2 tasks", "1
// event and 2 tasks"; "0 events" when both are 0.
func Kinds(events, tasks int) string {
	switch {
	case tasks == 0:
		return Count(events, "event", "events")
	case events == 0:
		return Count(tasks, "task", "tasks")
	}
	return Count(events, "event", "events") + " and " + Count(tasks, "task", "tasks")
}

// IsTaskID reports whether id is a task's inbox id (task:<name>:<key>),
// which idemctl's id flags take as it is: its key may hold commas and
// begin or end with spaces.
func IsTaskID(id string) bool { return strings.HasPrefix(id, "task:") }

// TaskKey is the key of the task name whose inbox id is id
// (task:<name>:<key>), as idemctl show and the dashboard's page of a task
// show it.
func TaskKey(id, name string) string {
	return strings.TrimPrefix(id, "task:"+name+":")
}

// TaskIdempotencyKey is the idempotency key of every attempt of the task
// name whose inbox id is id (TaskRun.IdempotencyKey): the name, a "-" and
// the hex SHA-256 of the id. The library derives it here, and idemctl
// show and the dashboard's page of a task show it, by which an operator
// finds the task's requests in the provider's log.
func TaskIdempotencyKey(id, name string) string {
	sum := sha256.Sum256([]byte(id))
	return name + "-" + hex.EncodeToString(sum[:])
}

// TaskRepeated says what the attempts of a finished task that took more
// than one mean, as idemctl show and the dashboard's page of a task say
// it beside their count: a task's attempt does not roll back, as an
// event's does.
const TaskRepeated = "an attempt before the last failed or lost its worker, and may have had its effect all the same: look at the provider's log for the idempotency key"

// ShellWord is s as one word of a POSIX shell's command line, for an
// operator to paste: s as it is when it holds nothing a shell reads (only
// letters, digits and _ - . , : / @ % +), or else s in single quotes,
// each single quote in it ending the quoted text, escaped with a
// backslash, and the quoted text begun again after it.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:/@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// IDWord is id as the value of idemctl's -id or -after, one word of a
// POSIX shell's command line for an operator to paste (ShellWord), or ""
// when no such word names it, and a hint leaves the command out: an id
// with a control character or a bidirectional control, which is printed
// otherwise (Line) and would drive a terminal; or an event's id with a
// comma, which -id reads as a list of other ids, or with white space at
// its ends, which idemctl trims. A task's id (task:<name>:<key>) is taken
// as it is, whatever its key holds.
func IDWord(id string) string {
	if id == "" || strings.ContainsFunc(id, isControl) {
		return ""
	}
	if !IsTaskID(id) && (strings.Contains(id, ",") || strings.TrimSpace(id) != id) {
		return ""
	}
	return ShellWord(id)
}

// IDWordNote says why a hint leaves out the command IDWord gave no word
// for: the id holds what a command line would read as another id.
const IDWordNote = "its id holds a comma, white space at its ends or a control character, which idemctl's flags would read as another id or several"

// Redriven says how often an inbox record was redriven and when last, as
// idemctl's show and the dashboard's event page say it: "never", or
// "2 times, last T" (InboxRecord.Redrives; last is RedrivenAt as the tool
// writes a time).
func Redriven(redrives int, last string) string {
	if redrives == 0 {
		return "never"
	}
	return Count(redrives, "time", "times") + ", last " + last
}
