package ci

import "testing"

func TestOn(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, " ": false, "0": false, "false": false, "FALSE": false, "f": false,
		"true": true, "1": true, "TRUE": true, "yes": true, "on": true, " true\n": true,
	} {
		if got := on(v); got != want {
			t.Errorf("CI=%q: On() = %v, want %v", v, got, want)
		}
	}
}
