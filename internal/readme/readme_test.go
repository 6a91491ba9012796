package readme

import (
	"slices"
	"testing"
)

func TestNamedFlags(t *testing.T) {
	got := NamedFlags("-all, `-dry-run` (-state failed) \"-json\" non-empty --add x\n-kind")
	if want := []string{"all", "dry-run", "state", "json", "kind"}; !slices.Equal(got, want) {
		t.Errorf("NamedFlags = %q, want %q", got, want)
	}
}
