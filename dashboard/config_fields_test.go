package dashboard_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestConfigHasOnlyWhatAUserSets: every field of Config is exported, so
// that go doc lists it whole, without "has unexported fields": a hook of
// the tests is no part of it.
func TestConfigHasOnlyWhatAUserSets(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[dashboard.Config]()
	for f := range typ.Fields() {
		require.True(t, f.IsExported(), "Config.%s is unexported", f.Name)
	}
}
