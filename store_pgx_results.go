package idempotency

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The handler's results: the rows of its queries and the results of its
// batches, through PgxTx. Until closed (or, for rows, read to their end)
// they hold the transaction's connection, as pgx's do, so each call on
// them is a call on the transaction (txState.use): one at a time, refused
// once the handler returned. Whatever is still open when it returns,
// runHandler closes, and no goroutine the handler left behind can reach
// it any more.

// rows wraps the rows of a statement that runs now in the transaction
// (between enter and leave), and records them as open. owner is the batch
// they come from, if any.
func (t *txState) rows(rows pgx.Rows, owner *handlerBatch) *handlerRows {
	r := &handlerRows{rows: rows, st: t}
	t.opened(r)
	if owner != nil {
		owner.rows = append(owner.rows, r)
	}
	return r
}

// handlerRows are the rows of a handler's query.
type handlerRows struct {
	rows pgx.Rows
	st   *txState
	err  error // why a call was first refused, for Err (under st.mu)
}

func (r *handlerRows) closeResult() { r.rows.Close() }

// refused records why a call was refused and returns it: Err reports it
// from then on, as pgx's Err reports the error that ended its rows.
func (r *handlerRows) refused(err error) error {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
	return err
}

// refusal is the error that refused records first, or nil.
func (r *handlerRows) refusal() error {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	return r.err
}

func (r *handlerRows) Next() bool {
	if err := r.st.use(); err != nil {
		r.refused(err)
		return false
	}
	defer r.st.leave()
	if r.rows.Next() {
		return true
	}
	r.st.closed(r) // pgx closed them
	return false
}

func (r *handlerRows) Close() {
	if r.st.use() != nil {
		return // the store closed them, or closes them once the call that runs ends
	}
	defer r.st.leave()
	r.rows.Close()
	r.st.closed(r)
}

func (r *handlerRows) Err() error {
	if err := r.refusal(); err != nil {
		return err
	}
	if err := r.st.use(); err != nil {
		return err
	}
	defer r.st.leave()
	return r.rows.Err()
}

func (r *handlerRows) Scan(dest ...any) error {
	if err := r.st.use(); err != nil {
		return r.refused(err)
	}
	defer r.st.leave()
	err := r.rows.Scan(dest...)
	r.failed(err)
	return err
}

func (r *handlerRows) Values() ([]any, error) {
	if err := r.st.use(); err != nil {
		return nil, r.refused(err)
	}
	defer r.st.leave()
	values, err := r.rows.Values()
	r.failed(err)
	return values, err
}

// failed forgets the rows when err, a Scan's or a Values', ended them:
// pgx closes its rows on such an error, which Err then reports.
func (r *handlerRows) failed(err error) {
	if err != nil && r.rows.Err() != nil {
		r.st.closed(r)
	}
}

func (r *handlerRows) RawValues() [][]byte {
	if err := r.st.use(); err != nil {
		r.refused(err)
		return nil
	}
	defer r.st.leave()
	return r.rows.RawValues()
}

func (r *handlerRows) CommandTag() pgconn.CommandTag {
	if err := r.st.use(); err != nil {
		r.refused(err)
		return pgconn.CommandTag{}
	}
	defer r.st.leave()
	return r.rows.CommandTag()
}

func (r *handlerRows) FieldDescriptions() []pgconn.FieldDescription {
	if err := r.st.use(); err != nil {
		r.refused(err)
		return nil
	}
	defer r.st.leave()
	return r.rows.FieldDescriptions()
}

// Conn and TypeMap are fixed when the query is sent.
func (r *handlerRows) Conn() *pgx.Conn      { return r.rows.Conn() }
func (r *handlerRows) TypeMap() *pgtype.Map { return r.rows.TypeMap() }

// handlerRow is the row of a handler's QueryRow: pgx's, on rows whose
// calls are the transaction's.
type handlerRow struct{ rows pgx.Rows }

func (r handlerRow) Scan(dest ...any) error {
	if err := r.rows.Err(); err != nil {
		r.rows.Close()
		return err
	}
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			r.rows.Close()
			return fmt.Errorf("cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	err := r.rows.Scan(dest...)
	r.rows.Close()
	if err != nil {
		return err
	}
	return r.rows.Err()
}

// handlerBatch are the results of a handler's batch.
type handlerBatch struct {
	br   pgx.BatchResults
	tx   handlerTx
	rows []openResult // its queries', which pgx ends with it
}

func (b *handlerBatch) closeResult() { b.br.Close() }

func (b *handlerBatch) Exec() (pgconn.CommandTag, error) {
	if err := b.tx.st.use(); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer b.tx.st.leave()
	return b.br.Exec()
}

func (b *handlerBatch) Query() (pgx.Rows, error) {
	if err := b.tx.st.use(); err != nil {
		return errRows{err}, err
	}
	defer b.tx.st.leave()
	rows, err := b.br.Query()
	if err != nil {
		return rows, err
	}
	return b.tx.st.rows(rows, b), nil
}

func (b *handlerBatch) QueryRow() pgx.Row {
	rows, _ := b.Query()
	return handlerRow{rows}
}

func (b *handlerBatch) Close() error {
	if err := b.tx.st.use(); err != nil {
		return err
	}
	defer b.tx.st.leave()
	err := b.br.Close()
	b.tx.st.closed(append(b.rows, b)...) // its rows end with it
	return err
}

func (b *handlerBatch) Tx() pgx.Tx { return b.tx }

// errRows are pgx.Rows that fail with err.
type errRows struct{ err error }

func (r errRows) Close()                                       {}
func (r errRows) Err() error                                   { return r.err }
func (r errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r errRows) Next() bool                                   { return false }
func (r errRows) Scan(...any) error                            { return r.err }
func (r errRows) Values() ([]any, error)                       { return nil, r.err }
func (r errRows) RawValues() [][]byte                          { return nil }
func (r errRows) Conn() *pgx.Conn                              { return nil }
func (r errRows) TypeMap() *pgtype.Map                         { return nil }

// errBatchResults are pgx.BatchResults that fail with err.
type errBatchResults struct{ err error }

func (r errBatchResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, r.err }
func (r errBatchResults) Query() (pgx.Rows, error)         { return errRows(r), r.err }
func (r errBatchResults) QueryRow() pgx.Row                { return handlerRow{errRows(r)} }
func (r errBatchResults) Close() error                     { return r.err }
func (r errBatchResults) Tx() pgx.Tx                       { return nil }
