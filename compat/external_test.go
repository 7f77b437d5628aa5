package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/kafkatest"
)

// TestApplyAcks: a driver's delivery reports become the Result the
// checkers compare the log with; a report the client could not have
// made (a value never produced, another partition, twice) is an error,
// and a record without a report, or with a failed one, is not
// acknowledged.
func TestApplyAcks(t *testing.T) {
	lines, err := parseDriverLines([]byte(`{"value": "v-00000000", "partition": 0, "offset": 0, "error": ""}
{"value": "v-00000001", "partition": 1, "offset": 0, "error": ""}

{"value": "v-00000002", "partition": 0, "offset": -1, "error": "_MSG_TIMED_OUT: Local: Message timed out"}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := newResult("t", 2, 4, "v")
	if err := applyAcks(res, lines); err != nil {
		t.Fatal(err)
	}
	if res.Acked != 2 || res.Records[0].Offset != 0 || res.Records[1].Offset != 0 || res.Records[1].Partition != 1 {
		t.Fatalf("acked %d, records %+v", res.Acked, res.Records)
	}
	if res.Records[2].Err == nil || !strings.Contains(res.Records[2].Err.Error(), "timed out") {
		t.Fatalf("record 2: %v, want its delivery failure", res.Records[2].Err)
	}
	if !errors.Is(res.Records[3].Err, errNoReport) || res.Err == nil {
		t.Fatalf("record 3: %v, result %v: want no report", res.Records[3].Err, res.Err)
	}
	for _, bad := range []string{
		`{"value": "w-00000000", "partition": 0, "offset": 0, "error": ""}`,
		`{"value": "v-00000000", "partition": 1, "offset": 0, "error": ""}`,
		`{"value": "v-00000000", "partition": 0, "offset": 0, "error": ""}` + "\n" + `{"value": "v-00000000", "partition": 0, "offset": 1, "error": ""}`,
	} {
		lines, err := parseDriverLines([]byte(bad))
		if err != nil {
			t.Fatal(err)
		}
		if err := applyAcks(newResult("t", 2, 4, "v"), lines); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := parseDriverLines([]byte("{\"value\": \"x\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a line that is not JSON: %v, want an error naming line 2", err)
	}
}

// TestApplyTxnLines: a transactional driver's reports become the
// TxnResult VerifyTxn checks; a transaction the driver never reported
// ended is an error of the result, so the cell fails.
func TestApplyTxnLines(t *testing.T) {
	res := newTxnResult("t", 3, 3, 2, "x")
	var b strings.Builder
	for _, tx := range res.Txns[:2] {
		for j, r := range tx.Records {
			b.WriteString(`{"value": "` + r.Value + `", "partition": ` + string(rune('0'+r.Partition)) + `, "offset": ` + string(rune('0'+j)) + `, "error": ""}` + "\n")
		}
	}
	b.WriteString(`{"txn": 0, "outcome": "committed", "error": ""}` + "\n")
	b.WriteString(`{"txn": 1, "outcome": "aborted", "error": ""}` + "\n")
	lines, err := parseDriverLines([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := applyTxnLines(res, lines); err != nil {
		t.Fatal(err)
	}
	if res.Txns[0].Outcome != kafkatest.TxnCommitted || res.Txns[1].Outcome != kafkatest.TxnAborted || res.Committed != 1 || res.Aborted != 2 {
		t.Fatalf("outcomes %v %v %v, counts %d/%d", res.Txns[0].Outcome, res.Txns[1].Outcome, res.Txns[2].Outcome, res.Committed, res.Aborted)
	}
	if res.Txns[0].Records[1].Offset != 1 || res.Txns[2].Err == nil || res.Err == nil {
		t.Fatalf("offsets %+v, transaction 2's error %v, result's %v", res.Txns[0].Records, res.Txns[2].Err, res.Err)
	}
	if err := txnAsPlanned(res); err == nil {
		t.Fatal("a transaction the driver never ended passes as planned")
	}
}
