package txncoord_test

import (
	"testing"

	"github.com/logstore/logstore/txncoord"
)

// TestInvalidTransitionRefused: a Dead record, which no coordinator
// writes (an expired id is forgotten, its record replaced by a
// tombstone), may still be in a file made by hand. Nothing moves out of
// Dead: each call that would move it is refused with
// ErrInvalidTransition, and nothing is written (the record is Dead
// after a reopen). A request that does not fit the state is refused as
// before, and the expiration scan leaves it. An Open that would abort
// data of its producer left open (reconcile) fails rather than move it.
func TestInvalidTransitionRefused(t *testing.T) {
	restore := txncoord.SetInvalidTransitionHook(nil)
	defer restore()
	e := newEnv(t)
	e.c.Close()
	if err := txncoord.Seed(e.dir, map[string]txncoord.SeedRecord{
		"dead": {State: "Dead", ProducerID: 7, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 60000, StartMs: -1, LastUpdateMs: e.clock.Now().UnixMilli()},
	}); err != nil {
		t.Fatal(err)
	}
	e.open()
	e.wantState("dead", "Dead")

	wantErr(t, "AddPartitions", e.c.AddPartitions("dead", 7, 0, []txncoord.TopicPartition{tpA0}), txncoord.ErrInvalidTransition)
	wantErr(t, "AddPartitionsDurable", e.c.AddPartitionsDurable("dead", 7, 0, []txncoord.TopicPartition{tpA0}), txncoord.ErrInvalidTransition)
	_, _, err := e.c.InitProducerID("dead", testTimeout, -1, -1)
	wantErr(t, "InitProducerID", err, txncoord.ErrInvalidTransition)
	wantErr(t, "EndTxn", e.c.EndTxn("dead", 7, 0, false), txncoord.ErrInvalidTxnState)
	e.clock.Advance(2 * txncoord.DefaultIDExpiration)
	e.c.ExpireIDs()
	e.wantState("dead", "Dead")
	wantEvents(t, e.events.take())
	wantMarkers(t, e.markers.take())

	e.reopen()
	e.wantState("dead", "Dead")

	// Data of producer 7 left open in a partition after a crash (no
	// close record): reconcile would abort it, moving Dead to
	// PrepareAbort.
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := txncoord.Seed(e.dir, nil); err != nil { // drops the close record
		t.Fatal(err)
	}
	e.markers.setOpen(tpA0, 7, 5)
	c, err := txncoord.Open(e.dir, e.ids, e.markers, e.cfg)
	if err == nil {
		c.Close()
	}
	wantErr(t, "Open with data of the Dead id's producer open", err, txncoord.ErrInvalidTransition)
	wantMarkers(t, e.markers.take())
}
