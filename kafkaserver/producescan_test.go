package kafkaserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// produceBody encodes a Produce request of version with topics of
// partitions each, every partition carrying records (nil: a null
// records field), without the request header.
func produceBody(version int16, topics, partitions int, records []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 5000
	txn := "txn"
	req.TransactionID = &txn
	for t := range topics {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = fmt.Sprintf("topic-%d", t)
		for p := range partitions {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(p)
			rp.Records = records
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req.AppendTo(nil)
}

// decodedElements is how many topics and partitions kmsg decodes body
// into, or -1 when it does not decode.
func decodedElements(version int16, body []byte) int {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	if req.ReadFrom(body) != nil {
		return -1
	}
	n := len(req.Topics)
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	return n
}

// TestCheckProduceShape: requests of real batches pass at every
// version, however many partitions; a frame of empty partitions or of
// topics of a few bytes each, which kmsg would decode into structs many
// times the frame's size, is refused.
func TestCheckProduceShape(t *testing.T) {
	batch := bytes.Repeat([]byte{1}, 68) // a record batch of one record at least
	for v := int16(0); v <= 11; v++ {
		for _, shape := range [][2]int{{1, 1}, {3, 1000}, {2000, 5}} {
			body := produceBody(v, shape[0], shape[1], batch)
			if _, err := checkProduceShape(v, body); err != nil {
				t.Errorf("v%d %d topics × %d partitions of batches: %v", v, shape[0], shape[1], err)
			}
			counted, _ := checkProduceShape(v, body)
			if got, want := decodedElements(v, body), shape[0]*(1+shape[1]); got != want || counted != want {
				t.Fatalf("v%d: kmsg decodes %d elements, checkProduceShape counts %d, want %d", v, got, counted, want)
			}
		}
		// 200,000 partitions without records: 1.6 MB of frame that
		// would cost some 50 MB decoded and answered.
		body := produceBody(v, 1, 200_000, nil)
		if _, err := checkProduceShape(v, body); !errors.Is(err, errProduceShape) {
			t.Errorf("v%d 200,000 empty partitions: %v, want errProduceShape", v, err)
		}
	}

	// The attack of the issue at an eighth of its size: a v9 frame of
	// 12 MiB whose topics are three bytes each (an empty name, no
	// partitions, no tags), 4 million of them.
	const topics = 4 << 20
	body := []byte{0, 0xff, 0xff, 0, 0, 0x13, 0x88} // a null txn id, acks -1, timeout 5 s
	body = binary.AppendUvarint(body, topics+1)
	body = append(body, bytes.Repeat([]byte{1, 1, 0}, topics)...)
	body = append(body, 0)
	_, err := checkProduceShape(9, body)
	if !errors.Is(err, errProduceShape) {
		t.Fatalf("4M three-byte topics: %v, want errProduceShape", err)
	}
	t.Log(err)
}

// TestProduceShapeClosesConnection: the refused frame closes its
// connection with the reason logged, and the server serves on.
func TestProduceShapeClosesConnection(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = make([]kmsg.ProduceRequestTopicPartition, 300_000)
	req.Topics = append(req.Topics, rt)
	c.send(req)
	c.expectClosed()
	if !strings.Contains(ts.logs.String(), errProduceShape.Error()) {
		t.Errorf("the refusal is not logged:\n%s", ts.logs.String())
	}
	c2 := ts.dial()
	if resp := c2.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions after the refusal: error %d", resp.ErrorCode)
	}
}

// FuzzProduceShape: any bytes at any version are walked without a
// panic, and what checkProduceShape lets through decodes (when kmsg
// decodes it at all) within the budget it promises.
func FuzzProduceShape(f *testing.F) {
	for _, v := range []int16{0, 3, 7, 9, 11} {
		f.Add(v, produceBody(v, 2, 3, bytes.Repeat([]byte{1}, 61)))
		f.Add(v, produceBody(v, 1, 50, nil))
	}
	f.Fuzz(func(t *testing.T, version int16, body []byte) {
		if version < 0 || version > 11 {
			return
		}
		counted, err := checkProduceShape(version, body)
		if err != nil {
			return
		}
		n := decodedElements(version, body)
		if n >= 0 && n != counted {
			t.Fatalf("v%d: counted %d topics and partitions, kmsg decodes %d", version, counted, n)
		}
		if limit := (produceDecodeFactor*len(body) + produceDecodeSlack) / int(produceElementBytes); n > limit {
			t.Fatalf("v%d: %d bytes let through decode into %d elements, the budget is %d", version, len(body), n, limit)
		}
	})
}
