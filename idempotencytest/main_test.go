package idempotencytest_test

import (
	"os"
	"testing"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envNoMain makes TestMain run the tests without idempotencytest.Main, for
// TestPostgresWithoutMainFails.
const envNoMain = "IDEMPOTENCYTEST_TEST_NO_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envNoMain) == "1" {
		os.Exit(m.Run())
	}
	os.Exit(idempotencytest.Main(m))
}
