package pgtest

import "errors"

// StartCluster starts a throwaway cluster, as the first test of a test
// binary does, for a program that is not a test: a chaos run that
// restarts it under load. The caller owns it and must [Cluster.Close] it;
// should the program die first (SIGKILL), the watchdog removes it, as for
// a test binary. Of its methods, the caller uses those that return an
// error ([Cluster.Restart]) rather than those that take a testing.TB.
// [Unavailable] tells an error that means this machine has no PostgreSQL
// to start (no binaries, no OS user "postgres" to run it as root) from
// one that is a failure.
func StartCluster() (*Cluster, error) { return startCluster() }

// Unavailable reports whether err, from [StartCluster], means that this
// machine cannot provide a PostgreSQL server, where a test skips unless
// CI=true; its text says why.
func Unavailable(err error) bool {
	var ue *unavailableError
	return errors.As(err, &ue)
}

// Restart shuts the server down in mode, "fast" as [Cluster.Stop] or
// "immediate" as [Cluster.Kill], and starts it again on the same data
// directory and port, returning once it accepts connections.
func (c *Cluster) Restart(mode string) error {
	if err := c.stop(mode); err != nil {
		return err
	}
	return c.start()
}

// Close stops the server at once (immediate mode) and removes its
// directory; a cluster closed cannot start again.
func (c *Cluster) Close() { c.destroy() }
