package appender

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// reply is one reply line. Its exported fields are the --json object.
type reply struct {
	from origin

	Line     int    `json:"line,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	Position *int64 `json:"position,omitempty"`
	Outcome  string `json:"outcome"`
	Base     *int64 `json:"base,omitempty"`
	Last     *int64 `json:"last,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func refusal(from origin, outcome, reason string) reply {
	if reason == "" {
		reason = "no reason given"
	}
	return reply{from: from, Outcome: outcome, Reason: reason}
}

// text is the reply line without its newline. An INVALID reply says
// which line or batch of the input it refers to.
func (r *reply) text() string {
	switch r.Outcome {
	case outcomeOK, outcomeDuplicate:
		return fmt.Sprintf("%s base=%d last=%d", r.Outcome, *r.Base, *r.Last)
	}
	where := ""
	if r.Outcome == outcomeInvalid {
		switch {
		case r.from.line > 0:
			where = "line " + strconv.Itoa(r.from.line) + ": "
		case r.from.batch > 0:
			where = fmt.Sprintf("batch %d at position %d: ", r.from.batch, r.from.position)
		}
	}
	return r.Outcome + " " + where + r.Reason
}

// replyWriter prints replies, each with one Write so that it reaches the
// reader at once, and counts them.
type replyWriter struct {
	w       io.Writer
	json    bool
	total   int
	refused int
}

func (rw *replyWriter) write(r reply) error {
	rw.total++
	if r.Outcome != outcomeOK && r.Outcome != outcomeDuplicate {
		rw.refused++
	}
	var line []byte
	if rw.json {
		r.Line, r.Batch = r.from.line, r.from.batch
		if r.from.batch > 0 {
			r.Position = &r.from.position
		}
		b, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		line = append(b, '\n')
	} else {
		line = []byte(r.text() + "\n")
	}
	if _, err := rw.w.Write(line); err != nil {
		return fmt.Errorf("writing the reply: %w", err)
	}
	return nil
}
