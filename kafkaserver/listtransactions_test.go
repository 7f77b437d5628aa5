package kafkaserver

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func listTxns(t *testing.T, c *rawClient, v int16, states []string, pids []int64, duration int64) *kmsg.ListTransactionsResponse {
	t.Helper()
	r := kmsg.NewPtrListTransactionsRequest()
	r.Version = v
	r.StateFilters, r.ProducerIDFilters, r.DurationFilterMillis = states, pids, duration
	resp := c.do(r).(*kmsg.ListTransactionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ListTransactions: error %d", resp.ErrorCode)
	}
	return resp
}

func listedIDs(resp *kmsg.ListTransactionsResponse) []string {
	var out []string
	for _, st := range resp.TransactionStates {
		out = append(out, st.TransactionalID+"="+st.TransactionState)
	}
	return out
}

// TestListTransactions: every transactional id with its state, filtered
// by state (unknown state names answered back), producer id and (v1)
// how long ago the transaction started, as Kafka filters them.
func TestListTransactions(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("a", 1)
	c := ts.dial()
	if got := listTxns(t, c, 0, nil, nil, 0); len(got.TransactionStates) != 0 {
		t.Fatalf("no transactional ids: %+v", got)
	}
	pid, epoch := initTxn(t, c, 4, "on")
	addPartitions(t, c, 3, "on", pid, epoch, "a", 0)
	pid2, _ := initTxn(t, c, 4, "idle")
	pid3, epoch3 := initTxn(t, c, 4, "done")
	addPartitions(t, c, 3, "done", pid3, epoch3, "a", 0)
	if code := endTxn(t, c, 4, "done", pid3, epoch3, false); code != 0 {
		t.Fatalf("EndTxn: %d", code)
	}

	for _, tc := range []struct {
		name     string
		v        int16
		states   []string
		pids     []int64
		duration int64
		want     []string
		unknown  []string
	}{
		{name: "all", want: []string{"done=CompleteAbort", "idle=Empty", "on=Ongoing"}},
		{name: "v1 all", v: 1, duration: -1, want: []string{"done=CompleteAbort", "idle=Empty", "on=Ongoing"}},
		{name: "by state", states: []string{"Ongoing", "Empty"}, want: []string{"idle=Empty", "on=Ongoing"}},
		{name: "unknown state", states: []string{"Bogus"}, unknown: []string{"Bogus"}},
		{name: "by producer id", pids: []int64{pid, pid2}, want: []string{"idle=Empty", "on=Ongoing"}},
		{name: "state and producer id", states: []string{"Ongoing"}, pids: []int64{pid2}},
		// Started less than an hour ago: left out, completed or not
		// (Kafka filters on the start it keeps); no transaction started
		// counts as started long ago, as in Kafka.
		{name: "v1 duration", v: 1, duration: 3_600_000, want: []string{"idle=Empty"}},
		// v0 has no duration filter.
		{name: "v0 ignores duration", v: 0, duration: 3_600_000, want: []string{"done=CompleteAbort", "idle=Empty", "on=Ongoing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			resp := listTxns(t, c, tc.v, tc.states, tc.pids, tc.duration)
			if got := listedIDs(resp); !slices.Equal(got, tc.want) {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
			if !slices.Equal(resp.UnknownStateFilters, tc.unknown) {
				t.Fatalf("unknown states %v, want %v", resp.UnknownStateFilters, tc.unknown)
			}
		})
	}
}
