// Package ci tells the tests whether they run in continuous integration,
// where a missing real part (PostgreSQL, PgBouncer, stripe-mock, Chromium)
// fails the test instead of skipping it.
package ci

import (
	"os"
	"strconv"
	"strings"
)

// On reports whether the environment's CI is set to anything but empty or
// a false value ("0", "f", "false", as strconv.ParseBool reads them). CI
// systems set CI=true, some CI=1 or CI=yes; none of them means "skip".
func On() bool {
	return on(os.Getenv("CI"))
}

func on(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}
