package logstore

import (
	"errors"

	"github.com/logstore/logstore/recordbatch"
)

// Record returns the index from 0, in the refused batch, of the record
// the refusal is about, and whether there is one: for RefusedInvalid,
// when the batch's own check named a record (see
// recordbatch.CorruptionError.Record); never for the other kinds. A
// broker answers it in the ProduceResponse's RecordErrors.
func (e *RefusedError) Record() (index int, ok bool) {
	var ce *recordbatch.CorruptionError
	if e.Kind != RefusedInvalid || !errors.As(e.Err, &ce) {
		return 0, false
	}
	return ce.Record()
}
