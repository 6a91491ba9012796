package idempotency_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPruneChoosesEachBatchOnce: every statement that deletes (or
// clears the arguments of) one batch of Prune chooses its rows (LIMIT BatchSize, FOR UPDATE SKIP
// LOCKED) once, in an InitPlan or a materialized CTE, never as the inner
// side of a join. There PostgreSQL may run the choice again, for a rescan
// or to recheck a row another transaction changed, and SKIP LOCKED then
// passes over the rows it has just locked and takes others: one batch
// deleted more than BatchSize rows (two ledger rows with BatchSize 1).
func TestPgxPruneChoosesEachBatchOnce(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	conn, err := b.db.Pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	plans, err := idempotency.PgxPruneBatchPlans(t.Context(), b.store, conn.Conn())
	require.NoError(t, err)
	require.Len(t, plans, 9)
	for name, plan := range plans {
		var root []struct{ Plan planNode }
		require.NoError(t, json.Unmarshal([]byte(plan), &root), name)
		require.Len(t, root, 1, name)
		locks := 0
		root[0].Plan.walk(false, func(n *planNode, once bool) {
			if n.NodeType == "LockRows" {
				locks++
				assert.True(t, once, "%s: the batch is chosen where it can be run again:\n%s", name, plan)
			}
		})
		// One LockRows per state read: the finished events' three
		// (processed, skipped, ignored), the finished tasks' two.
		want := map[string]int{"events": 3, "tasks": 2}[name]
		assert.Equal(t, max(want, 1), locks, "%s:\n%s", name, plan)
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType           string     `json:"Node Type"`
	ParentRelationship string     `json:"Parent Relationship"`
	SubplanName        string     `json:"Subplan Name"`
	Plans              []planNode `json:"Plans"`
}

// walk calls f with each node of the tree under n and whether the node
// runs once per statement: it is, or is under, an InitPlan or a CTE, with
// no join or data-modifying node between, whose inner side may be run
// again.
func (n *planNode) walk(once bool, f func(*planNode, bool)) {
	switch {
	case n.ParentRelationship == "InitPlan" || strings.HasPrefix(n.SubplanName, "CTE "):
		once = true
	case strings.HasSuffix(n.NodeType, "Join") || n.NodeType == "Nested Loop" || n.NodeType == "ModifyTable":
		once = false
	}
	f(n, once)
	for i := range n.Plans {
		n.Plans[i].walk(once, f)
	}
}
