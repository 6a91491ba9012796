package main

import (
	"os"
	"testing"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
