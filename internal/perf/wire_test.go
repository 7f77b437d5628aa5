package perf

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/recordbatch"
)

// newKfake starts franz-go's in-memory broker on a loopback port, the
// stand-in for a server in these tests.
func newKfake(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// Every record sent is acknowledged, counted once, with one latency
// each; the topic is created on the way; a consumer then reads exactly
// those records back.
func TestWireProduceConsume(t *testing.T) {
	seeds := newKfake(t)
	for _, tc := range []struct {
		name      string
		acks      int16
		codec     recordbatch.Codec
		producers int
		partition int32
	}{
		{"idempotent", -1, recordbatch.CodecNone, 3, 0},
		{"acks1-lz4", 1, recordbatch.CodecLZ4, 1, 2},
		{"acks0", 0, recordbatch.CodecZstd, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const records, size = 3000, 100
			rep := &ProduceReport{Producers: tc.producers, RecordSize: size, Topic: "perf-" + tc.name, Partition: tc.partition,
				Bootstrap: strings.Join(seeds, ","), Acks: AcksName(tc.acks), Compression: tc.codec.String()}
			err := ProduceWire(context.Background(), WireProduceConfig{
				Bootstrap: seeds, Topic: rep.Topic, Partition: tc.partition, Partitions: 3,
				Records: records, RecordSize: size, Producers: tc.producers, BatchBytes: 4096, Linger: time.Millisecond,
				Acks: tc.acks, Codec: tc.codec,
			}, rep)
			if err != nil {
				t.Fatal(err)
			}
			rep.Finish()
			if rep.Records != records || len(rep.latencies) != records || rep.ValueBytes != records*size {
				t.Errorf("records %d, latencies %d, value bytes %d; want %d records", rep.Records, len(rep.latencies), rep.ValueBytes, records)
			}
			if tc.acks != 0 {
				// kgo calls no hook for an acks=0 batch: nothing came back.
				if rep.Batches < records*size/4096 || rep.BatchBytes <= 0 || rep.RecordsPerBatch < 1 {
					t.Errorf("batches %d of %d bytes, %d records each: batches of up to 4096 bytes cannot carry %d records of %d bytes in fewer than %d",
						rep.Batches, rep.BatchBytes, rep.RecordsPerBatch, records, size, records*size/4096)
				}
			}
			l := rep.LatencyMs
			if !(l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max && l.Max > 0) {
				t.Errorf("latencies out of order: %+v", l)
			}
			text := rep.Text()
			for _, want := range []string{"3000 sent by", "acks=" + AcksName(tc.acks), "per record", rep.Bootstrap} {
				if !strings.Contains(text, want) {
					t.Errorf("the report does not say %q:\n%s", want, text)
				}
			}

			crep := &ConsumeReport{Topic: rep.Topic, Partition: tc.partition, Bootstrap: rep.Bootstrap}
			if err := ConsumeWire(context.Background(), WireConsumeConfig{
				Bootstrap: seeds, Topic: rep.Topic, Partition: tc.partition, From: -1, FetchMaxBytes: 1 << 20, Timeout: time.Minute,
			}, crep); err != nil {
				t.Fatal(err)
			}
			if crep.Records != records || crep.From != 0 || crep.End != records || crep.Batches < 1 || crep.Bytes <= 0 {
				t.Errorf("consumed %+v; want %d records, offsets 0 to %d", crep, records, records-1)
			}
			if !strings.Contains(crep.Text(), "kgo consumer") {
				t.Errorf("the consume report does not say it fetched over the wire:\n%s", crep.Text())
			}

			// From an offset inside the log: only the rest.
			crep = &ConsumeReport{}
			if err := ConsumeWire(context.Background(), WireConsumeConfig{
				Bootstrap: seeds, Topic: rep.Topic, Partition: tc.partition, From: records - 10, FetchMaxBytes: 1 << 20, Timeout: time.Minute,
			}, crep); err != nil {
				t.Fatal(err)
			}
			if crep.Records != 10 {
				t.Errorf("from offset %d: %d records, want 10", records-10, crep.Records)
			}
		})
	}
}

// A partition the topic does not have, an offset outside the log and an
// unknown topic are refused before anything is measured, saying which.
func TestWireRefusals(t *testing.T) {
	seeds := newKfake(t, kfake.SeedTopics(2, "two"))
	rep := &ProduceReport{}
	err := ProduceWire(context.Background(), WireProduceConfig{
		Bootstrap: seeds, Topic: "two", Partition: 5, Records: 10, RecordSize: 10, Producers: 1, BatchBytes: 16384, Acks: -1,
	}, rep)
	if err == nil || !strings.Contains(err.Error(), "no partition 5") {
		t.Errorf("producing to partition 5 of a 2-partition topic: %v", err)
	}
	err = ConsumeWire(context.Background(), WireConsumeConfig{
		Bootstrap: seeds, Topic: "two", Partition: 0, From: 7, FetchMaxBytes: 1 << 20, Timeout: time.Minute,
	}, &ConsumeReport{})
	if err == nil || !strings.Contains(err.Error(), "offset 7 is outside partition two-0") {
		t.Errorf("consuming from offset 7 of an empty partition: %v", err)
	}
	err = ConsumeWire(context.Background(), WireConsumeConfig{
		Bootstrap: seeds, Topic: "nope", Partition: 0, From: -1, FetchMaxBytes: 1 << 20, Timeout: time.Minute,
		Opts: []kgo.Opt{kgo.RequestRetries(0)},
	}, &ConsumeReport{})
	if err == nil || !strings.Contains(err.Error(), "nope-0") {
		t.Errorf("consuming an unknown topic: %v", err)
	}
}
