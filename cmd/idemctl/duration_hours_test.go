package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDurationsOfADayOrMoreInHours: a window or a time before now written
// in hours past a day (36h, as prune -h and the refusals themselves give
// for an example; 48h for -since) is read as written. parseDuration took
// any duration whose whole days differed from its d-prefix for an
// overflow, so "36h" was refused as "too long" and "-since 48h" as "not a
// time"; formatDuration's "36h0m0s" could not be read back either.
func TestDurationsOfADayOrMoreInHours(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"36h":     36 * time.Hour,
		"168h":    7 * 24 * time.Hour,
		"1080h":   45 * 24 * time.Hour,
		"0d36h":   36 * time.Hour,
		"1d36h":   60 * time.Hour,
		"36h0m0s": 36 * time.Hour,
		"1d12h":   36 * time.Hour,
		"45d":     45 * 24 * time.Hour,
		"90m":     90 * time.Minute,
	} {
		got, err := parseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	got, err := parseTime("48h", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-48*time.Hour), got)

	d := 36 * time.Hour
	back, err := parseDuration(formatDuration(d))
	require.NoError(t, err, "formatDuration writes d as parseDuration reads it")
	require.Equal(t, d, back)

	// Past time.Duration's range, in days or in what follows them.
	for _, in := range []string{"99999999999d", "106752d", "106750d48h", "9999999999h"} {
		_, err := parseDuration(in)
		require.Error(t, err, in)
	}
}
