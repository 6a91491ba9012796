// Package waiters lets the test kit count the runs that wait in the
// library's own stores, which no wrapper of them can see.
package waiters

// Of is set by package idempotency. For its MemoryStore and PgxStore, it
// returns how many runs wait in this process for a key that another run
// holds, and, for a PgxStore, what it begins its transactions on (nil for
// a MemoryStore); ok is false for any other store.
var Of func(store any) (n int, db any, ok bool)
