package idempotencytest_test

import (
	"os"
	"testing"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envNoMain makes TestMain run the tests without idempotencytest.Main, for
// TestPostgresWithoutMainFails.
const envNoMain = "IDEMPOTENCYTEST_TEST_NO_MAIN"

// envMainTwice makes TestMain run the tests through idempotencytest.Main
// twice, for TestPostgresAfterMainFinishedFails.
const envMainTwice = "IDEMPOTENCYTEST_TEST_MAIN_TWICE"

func TestMain(m *testing.M) {
	if os.Getenv(envNoMain) == "1" {
		os.Exit(m.Run())
	}
	if os.Getenv(envMainTwice) == "1" {
		idempotencytest.Main(m)
		os.Exit(idempotencytest.Main(m))
	}
	os.Exit(idempotencytest.Main(m))
}
