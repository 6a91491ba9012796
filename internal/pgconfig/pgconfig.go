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
// around '=' ("password = secret") the password is printed. It also adds
// the error of the step that failed, which may quote a piece of the
// string ("missing \"=\" after \"horse\"" for "password=correct horse").
// The error keeps pgx's reason alone ("invalid port", "failed to parse as
// keyword/value"), which names a setting or a form, never the string.
//
// A URL with a '#' is refused: the '#' starts the URL's fragment, which
// pgx drops, so that a password or a setting after it would be cut short
// (or the user and password read as a host and a port). So is a URL with
// an '@' in its host or after it: pgx, as libpq, ends the user
// information at the first '@', also one in the password, and the rest of
// the password would be read as the host (looked up in DNS), and, after a
// '/' or '?' in it, the database and parameters, which a connection's
// error prints.
func Parse(connString string) (*pgxpool.Config, error) {
	if host, rest, ok := urlParts(connString); ok {
		if strings.Contains(connString, "#") {
			return nil, errors.New("not a PostgreSQL connection string: a '#' in a URL ends it (write %23)")
		}
		if strings.Count(host, "@") > 1 {
			return nil, errors.New("not a PostgreSQL connection string: an '@' in the host, " +
				"where a user name or password with an '@' puts the end of it (write it %40)")
		}
		if strings.Contains(rest, "@") {
			return nil, errors.New("not a PostgreSQL connection string: an '@' after the host, " +
				"where a password with a '/' or '?' puts the end of it (write those %2F and %3F, and an '@' %40)")
		}
	}
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
		if inner := pe.Unwrap(); inner != nil {
			reason = strings.TrimSuffix(reason, " ("+inner.Error()+")")
		}
		return nil, errors.New("not a PostgreSQL connection string: " + reason)
	}
	return nil, errors.New("not a PostgreSQL connection string")
}

// urlParts splits a URL connection string after its scheme into what
// ends its host (user information and hosts) and what follows (its path
// and query), and reports whether connString is a URL.
func urlParts(connString string) (host, rest string, ok bool) {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if after, ok := strings.CutPrefix(connString, scheme); ok {
			if i := strings.IndexAny(after, "/?"); i >= 0 {
				return after[:i], after[i:], true
			}
			return after, "", true
		}
	}
	return "", "", false
}
