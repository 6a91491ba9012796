package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusedStartKeepsTheCPUProfile: a start that is refused (here, no
// signing secret) leaves the -cpuprofile file as it was: the file was
// created, truncating the profile of the run before, ahead of the checks
// of the secret and the Stripe key.
func TestRunRefusedStartKeepsTheCPUProfile(t *testing.T) {
	t.Parallel()
	profile := filepath.Join(t.TempDir(), "cpu.prof")
	require.NoError(t, os.WriteFile(profile, []byte("the last run's profile"), 0o600))
	err := runRefused(t, []string{"-cpuprofile", profile}, noEnv, io.Discard)
	require.ErrorContains(t, err, "no webhook signing secret")
	got, err := os.ReadFile(profile)
	require.NoError(t, err)
	require.Equal(t, "the last run's profile", string(got))
}
