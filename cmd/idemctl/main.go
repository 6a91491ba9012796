package main

import (
	"os"

	"github.com/seed-a84bb619/idempotency/internal/interrupt"
)

func main() {
	// After the first signal, a second one ends the command at once.
	os.Exit(run(interrupt.Context(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}
