package main

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/readme"
)

// TestReadmeNamesTheServersFlags: every flag the README's section on the
// example service names is one the server takes, and the defaults it
// quotes (-db-wait, -prune-every) are the flags'.
func TestReadmeNamesTheServersFlags(t *testing.T) {
	t.Parallel()
	section := readme.Section(t, "../..", "The example service")

	var usage bytes.Buffer
	err := run(t.Context(), []string{"-h"}, func(string) string { return "" }, &usage, nil)
	require.ErrorIs(t, err, flag.ErrHelp)
	defaults := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)[^\n]*\n((?: *\t[^\n]*\n?)*)`).FindAllStringSubmatch(usage.String(), -1) {
		def := ""
		if d := regexp.MustCompile(`\(default "?([^")]*)"?\)\s*$`).FindStringSubmatch(m[2]); d != nil {
			def = d[1]
		}
		defaults[m[1]] = def
	}
	require.Contains(t, defaults, "db-wait", "the usage lists the flags:\n%s", usage.String())

	named := readme.NamedFlags(section)
	require.NotEmpty(t, named)
	for _, name := range named {
		_, ok := defaults[name]
		assert.True(t, ok, "the README names -%s, which the server does not take", name)
	}

	for flagName, quoted := range map[string]*regexp.Regexp{
		"db-wait":     regexp.MustCompile("`-db-wait` \\(default ([0-9a-z]+)\\)"),
		"prune-every": regexp.MustCompile("`-prune-every` \\((1 hour);"),
	} {
		m := quoted.FindStringSubmatch(section)
		require.NotNil(t, m, "the README quotes the default of -%s", flagName)
		readmes, err := time.ParseDuration(strings.Replace(m[1], "1 hour", "1h", 1))
		require.NoError(t, err)
		flags, err := time.ParseDuration(defaults[flagName])
		require.NoError(t, err)
		require.Equal(t, flags, readmes, "the README's default of -%s", flagName)
	}
}
