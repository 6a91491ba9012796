package pgtest

import (
	"context"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestURLKeepsTheServersOptions: DB.URL adds the schema's search_path to
// the options of the server's connection string, in either of its forms
// (a URL, or keyword/value as libpq also takes), rather than replace them:
// its sessions run with the settings the Pool's sessions have.
func TestURLKeepsTheServersOptions(t *testing.T) {
	s := shared(t)
	if s.cluster == nil {
		t.Skipf("builds connection strings to the throwaway cluster; %s is set", EnvDatabaseURL)
	}
	schema := New(t).Schema
	c := s.cluster
	for name, base := range map[string]string{
		"url": s.url + "&options=" + url.QueryEscape("-c lock_timeout=1234"),
		"keyword/value": "host=" + c.dir + " port=" + strconv.Itoa(c.port) + " user=postgres dbname=postgres sslmode=disable " +
			"options='-c lock_timeout=1234'",
	} {
		conn, err := pgx.Connect(t.Context(), withSchema(base, schema))
		if err != nil {
			t.Fatalf("%s: connect: %v", name, err)
		}
		var lockTimeout, current string
		err = conn.QueryRow(t.Context(), "SELECT current_setting('lock_timeout'), current_schema()").Scan(&lockTimeout, &current)
		_ = conn.Close(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if lockTimeout != "1234ms" || current != schema {
			t.Errorf("%s: lock_timeout=%q current_schema=%q, want the server string's 1234ms and %q", name, lockTimeout, current, schema)
		}
	}
}
