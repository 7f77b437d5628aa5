package main

import (
	"fmt"

	"github.com/logstore/logstore/internal/kafkatest"
)

// allAcked is nil when the server acknowledged every record of res;
// otherwise its error counts the acknowledged ones and carries the
// first failure.
func allAcked(res *kafkatest.Result) error {
	if res.Acked != len(res.Records) {
		return fmt.Errorf("%d of %d records acknowledged: %v", res.Acked, len(res.Records), res.Err)
	}
	return nil
}

// stopAndScan stops the server and reads the records of res's topic
// back from the store's files.
func (e *Env) stopAndScan(res *kafkatest.Result) ([]kafkatest.Found, error) {
	if err := e.Stop(); err != nil {
		return nil, err
	}
	return kafkatest.ScanStore(e.Dir, res.Topic, res.Partitions)
}

// storeScanPlain stops the server and checks that the store holds the
// records of a plain producer (verifyPlain); a mismatch names the
// Produce answers the proxy saw.
func (e *Env) storeScanPlain(res *kafkatest.Result) error {
	scanned, err := e.stopAndScan(res)
	if err != nil {
		return err
	}
	if err := verifyPlain(res, scanned); err != nil {
		return fmt.Errorf("store scan (%s): %w", e.produceText(), err)
	}
	return nil
}

// countOutcome counts a transaction that ended with o in res's
// Committed, Aborted or Uncertain.
func countOutcome(res *kafkatest.TxnResult, o kafkatest.TxnOutcome) {
	switch o {
	case kafkatest.TxnCommitted:
		res.Committed++
	case kafkatest.TxnAborted:
		res.Aborted++
	case kafkatest.TxnUncertain:
		res.Uncertain++
	}
}
