package kafkaserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestTransactionalClientFailsFast: a kgo client with a transactional
// id is told TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), which it treats
// as fatal: its transaction fails with it at once rather than retrying a
// coordinator that will never come. The context only bounds a failure
// of the test.
func TestTransactionalClientFailsFast(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.TransactionalID("txn-1"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// kgo asks for its producer id as the client starts; BeginTransaction
	// reports that it failed for good, or else the produce does.
	err = cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional client: %v; want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	// An idempotent producer is served as before.
	idem, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	if err := idem.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatalf("idempotent produce: %v", err)
	}
}

// TestTransactionalIDRefused: InitProducerId with a transactional id,
// and FindCoordinator for a transactional id (key type 1, v1+), answer
// 53; FindCoordinator for a group still answers 15.
func TestTransactionalIDRefused(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	for _, v := range []int16{0, 4} {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version = v
		txn := "txn"
		r.TransactionalID = &txn
		if resp := c.do(r).(*kmsg.InitProducerIDResponse); resp.ErrorCode != errTransactionalIDAuthorizationFailed || resp.ProducerID != -1 {
			t.Fatalf("InitProducerId v%d: %+v", v, resp)
		}
	}
	for _, v := range []int16{1, 3, 4} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorType = 1
		r.CoordinatorKey = "txn"
		r.CoordinatorKeys = []string{"txn", "other"}
		resp := c.do(r).(*kmsg.FindCoordinatorResponse)
		if v < 4 && resp.ErrorCode != errTransactionalIDAuthorizationFailed {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if v >= 4 && (len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "other" || resp.Coordinators[1].ErrorCode != errTransactionalIDAuthorizationFailed) {
			t.Fatalf("v%d: %+v", v, resp)
		}
		r.CoordinatorType = 0
		resp = c.do(r).(*kmsg.FindCoordinatorResponse)
		if v < 4 && resp.ErrorCode != errNone || v >= 4 && resp.Coordinators[0].ErrorCode != errNone {
			t.Fatalf("group, v%d: %+v", v, resp)
		}
	}
}
