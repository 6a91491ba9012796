// Package pgconfig parses the PostgreSQL connection strings of the
// project's commands (idemctl, examples/server) with errors safe to print.
package pgconfig

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Parse is pgxpool.ParseConfig with an error that never quotes connString.
// pgx's error quotes it with the password masked on a best-effort basis
// only, as its documentation warns: in the keyword/value form with spaces
// around '=' ("password = secret") the password is printed. The error
// keeps pgx's reason ("invalid port", "failed to parse as URL: ..."),
// which names a setting, never the string.
func Parse(connString string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err == nil {
		return cfg, nil
	}
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return nil, errors.New("not a PostgreSQL connection string")
	}
	unquoted := *pe
	unquoted.ConnString = ""
	const prefix = "cannot parse ``: "
	if reason, ok := strings.CutPrefix(unquoted.Error(), prefix); ok {
		return nil, errors.New("not a PostgreSQL connection string: " + reason)
	}
	return nil, errors.New("not a PostgreSQL connection string")
}
