package kafkatest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/recordbatch"
)

// sixRecords: values v-0..v-5 over 2 partitions, acknowledged at offsets
// 0,0,1,1,2,2, by producer 7 epoch 0.
func sixRecords() (*kafkatest.Result, []kafkatest.Found) {
	res := &kafkatest.Result{Topic: "t", Partitions: 2}
	var found []kafkatest.Found
	for i := 0; i < 6; i++ {
		a := kafkatest.Ack{Value: fmt.Sprintf("v-%d", i), Partition: int32(i % 2), Offset: int64(i / 2), ProducerID: 7, Epoch: 0}
		res.Records = append(res.Records, a)
		found = append(found, kafkatest.Found{Partition: a.Partition, Offset: a.Offset, Value: a.Value, ProducerID: 7, Sequence: int32(i / 2)})
	}
	res.Acked = 6
	return res, found
}

func TestVerifyFindsEachProblem(t *testing.T) {
	res, found := sixRecords()
	if err := kafkatest.Verify(res, found); err != nil {
		t.Fatalf("a correct log: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(res *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found
		want   string
	}{
		{"a value twice", func(_ *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			return append(f, kafkatest.Found{Partition: 0, Offset: 3, Value: "v-0", ProducerID: 7, Sequence: 3})
		}, `value "v-0" (record 0) twice`},
		{"a value never produced", func(_ *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			return append(f, kafkatest.Found{Partition: 0, Offset: 3, Value: "x", ProducerID: 7, Sequence: 3})
		}, `value "x" was never produced`},
		{"an acknowledged value missing", func(_ *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			return f[:5]
		}, `value "v-5" (record 5) acknowledged at partition 1 offset 2, not found`},
		{"at another offset than acknowledged", func(res *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			res.Records[4].Offset = 7
			return f
		}, `value "v-4" (record 4) at offset 2, acknowledged at 7`},
		{"out of production order", func(res *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			f[0].Value, f[2].Value = f[2].Value, f[0].Value
			res.Records[0].Err, res.Records[2].Err = errors.New("failed"), errors.New("failed")
			return f
		}, "record 0 after record 2: out of production order"},
		{"in another partition", func(res *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			f[1].Partition = 0
			f[1].Offset = 3
			return f
		}, `value "v-1" (record 1) in partition 0, produced to 1`},
		{"no producer id", func(_ *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			f[3].ProducerID = -1
			return f
		}, "producer id -1"},
		{"a sequence gap", func(_ *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			f[5].Sequence = 3
			return f
		}, "producer 7 epoch 0 sequence 3, expected 2"},
		{"a producer not starting at 0", func(_ *kafkatest.Result, f []kafkatest.Found) []kafkatest.Found {
			for i := range f {
				if f[i].Partition == 1 {
					f[i].Sequence += 4
				}
			}
			return f
		}, "starts at sequence 4, not 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, found := sixRecords()
			err := kafkatest.Verify(res, tc.change(res, found))
			if !errors.Is(err, kafkatest.ErrVerify) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrVerify saying %q", err, tc.want)
			}
		})
	}
}

// TestScanStore writes the workload's records into a store as an
// idempotent producer's batches would land, and scans them back.
func TestScanStore(t *testing.T) {
	dir := t.TempDir()
	st, err := logstore.Open(dir, logstore.Options{SegmentBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	res := &kafkatest.Result{Topic: "scan", Partitions: 3, Records: make([]kafkatest.Ack, 60), Acked: 60}
	seq := map[int32]int32{}
	for i := 0; i < 60; i += 6 {
		for part := int32(0); part < 3; part++ {
			b := recordbatch.NewBuilder(0)
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = 4, 0, seq[part]
			var vals []string
			for j := i + int(part); j < i+6; j += 3 {
				v := fmt.Sprintf("s-%d", j)
				vals = append(vals, v)
				if err := b.Append(1000, nil, []byte(v), nil); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := b.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := st.Partition("scan", part)
			if err != nil {
				t.Fatal(err)
			}
			ar, err := p.Append(raw)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range vals { // record i+part+3k went to partition part
				res.Records[i+int(part)+3*k] = kafkatest.Ack{Value: v, Partition: part, Offset: ar.BaseOffset + int64(k), ProducerID: 4}
			}
			seq[part] += int32(len(vals))
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	found, err := kafkatest.ScanStore(dir, "scan", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 60 {
		t.Fatalf("scanned %d records, wrote 60", len(found))
	}
	if err := kafkatest.Verify(res, found); err != nil {
		t.Fatal(err)
	}

	// A record acknowledged at another offset than it holds is caught.
	res.Records[7].Offset++
	if err := kafkatest.Verify(res, found); !errors.Is(err, kafkatest.ErrVerify) {
		t.Fatalf("a wrong acknowledged offset passed: %v", err)
	}
}
