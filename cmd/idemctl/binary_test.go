package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildIdemctl builds the real binary into a temporary directory.
func buildIdemctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idemctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// exitCodeOf is the exit code of a finished command.
func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// TestBinary: the built binary exits with the documented codes, and a long
// prune interrupted with SIGINT stops between batches, reports what it
// deleted, exits 130, and leaves every reported batch committed.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := buildIdemctl(t)
	const rows = 1500
	s := seedOld(t, rows)
	before := inboxCount(t, s)
	require.Equal(t, rows+3, before)

	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"-schema", s.db.Schema}, args...)...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+s.db.URL)
		return cmd
	}
	for args, want := range map[string]int{
		"":                    exitUsage,
		"stats -nope":         exitUsage,
		"stats":               exitOK,
		"show evt_unknown":    exitNotFound,
		"forget evt_unknown":  exitNotFound,
		"prune -event-ids 1d": exitUsage,
		"-database-url postgres://127.0.0.1:1/x?connect_timeout=5 stats": exitUnavailable,
	} {
		var stderr bytes.Buffer
		cmd := command(strings.Fields(args)...)
		cmd.Stderr = &stderr
		require.Equal(t, want, exitCodeOf(t, cmd.Run()), "%q: %s", args, stderr.String())
		if want != exitOK {
			require.Regexp(t, `^idemctl: `, stderr.String(), args)
		}
	}

	// One row per transaction: the prune is long enough to be interrupted
	// once its first batch is reported.
	cmd := command("prune", "-batch", "1", "-progress", "lines")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderrPipe)
	var stderr []string
	for sc.Scan() {
		stderr = append(stderr, sc.Text())
		if len(stderr) == 1 {
			require.Regexp(t, `^idemctl: prune: 1 row deleted \(`, sc.Text())
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
		}
	}
	code := exitCodeOf(t, cmd.Wait())
	require.Equal(t, exitInterrupted, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), strings.Join(stderr, "\n"))
	require.Equal(t, "idemctl: interrupted", stderr[len(stderr)-1])
	require.NotContains(t, strings.Join(stderr, "\n"), "context canceled", "the interruption is said once, on the last line")
	m := regexp.MustCompile(`^interrupted: stopped between batches; (\d+) rows? deleted, every batch committed:\n`).FindStringSubmatch(stdout.String())
	require.NotNil(t, m, stdout.String())
	deleted, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.GreaterOrEqual(t, deleted, 1)
	require.Less(t, deleted, rows, "stopped before the end")
	require.Equal(t, before-deleted, inboxCount(t, s), "what the report says was deleted is, and nothing else")

	// Run again, it deletes the rest.
	start := time.Now()
	r := idemctl(t, s.db, nil, "prune", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, rows+1-deleted, decode[pruneJSON](t, r).Events)
	t.Logf("interrupted after %d of %d rows (batches of 1); the rest in batches of 1000: %s", deleted, rows+1, time.Since(start))
}
