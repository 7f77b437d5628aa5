package kafkaserver

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// deleteOnLookup is the server's catalog, which deletes a topic right
// after a lookup of it has answered that it exists, the skip+1st lookup
// once armed: with skip 0 the deletion lands in the window between the
// server's lookup and its opening of the partition, with skip 1 after
// the server has opened the partition and checked the topic again, so
// the request holds a partition that is closed under it.
type deleteOnLookup struct {
	topicCatalog
	mu    sync.Mutex
	armed string
	skip  int
}

func (d *deleteOnLookup) arm(name string, skip int) {
	d.mu.Lock()
	d.armed, d.skip = name, skip
	d.mu.Unlock()
}

func (d *deleteOnLookup) Topic(name string) (topic, bool) {
	t, ok := d.topicCatalog.Topic(name)
	d.mu.Lock()
	fire := ok && d.armed == name
	if fire && d.skip > 0 {
		d.skip--
		fire = false
	} else if fire {
		d.armed = ""
	}
	d.mu.Unlock()
	if fire {
		if _, err := d.topicCatalog.DeleteTopic(name); err != nil {
			panic(err)
		}
	}
	return t, ok
}

// topicDirs lists the entries of the store directory that belong to
// topic: its partition directories and any -delete directory left.
func topicDirs(t *testing.T, ts *testServer, topic string) []string {
	t.Helper()
	entries, err := ts.store.FS().ReadDir(ts.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range entries {
		if strings.HasPrefix(name, topic+"-") {
			out = append(out, name)
		}
	}
	return out
}

// partitionCode is the error code of the one partition of a Produce,
// Fetch or ListOffsets response.
func partitionCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.FetchResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.ListOffsetsResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	}
	panic(fmt.Sprintf("%T", resp))
}

// TestDeletedTopicStaysDeleted: a Produce, Fetch or ListOffsets whose
// topic is deleted between the server's catalog lookup and its opening
// of the partition answers UNKNOWN_TOPIC_OR_PARTITION, and leaves no
// directory of the topic behind (the server opens partitions without
// ever making their directories); the topic is not in the catalog nor
// in Metadata afterwards. Deleted once the request holds the open
// partition (closed under it), a produce is answered 3 too, as Kafka
// answers for a partition of a deleted topic, not 6
// NOT_LEADER_OR_FOLLOWER.
func TestDeletedTopicStaysDeleted(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	cat := &deleteOnLookup{topicCatalog: ts.srv.cat}
	ts.srv.cat = cat
	c := ts.dial()
	reqs := map[string]kmsg.Request{
		"produce":     produceReq(9, -1, "t", 0, batchOf(-1, 0, 0, "x")),
		"fetch":       fetchReq(12, "t", 0, 0, 0, 0),
		"listoffsets": listOffsetsReq("t", 0, -1),
	}
	for _, tc := range []struct {
		name string
		skip int
	}{{"produce", 0}, {"fetch", 0}, {"listoffsets", 0}, {"produce", 1}, {"fetch", 1}, {"listoffsets", 1}} {
		name := tc.name
		ts.createTopic("t", 1)
		cat.arm("t", tc.skip)
		code := partitionCode(c.do(reqs[name]))
		// A read that got its answer from the partition before the
		// close may give it (it was served before the delete); an
		// append cannot happen on a closed partition.
		servedBefore := tc.skip == 1 && name != "produce" && code == errNone
		if code != errUnknownTopicOrPartition && !servedBefore {
			t.Errorf("%s of a topic deleted under it (after lookup %d): code %d, want %d", name, tc.skip+1, code, errUnknownTopicOrPartition)
		}
		if dirs := topicDirs(t, ts, "t"); len(dirs) != 0 {
			t.Fatalf("%s: directories of the deleted topic: %v", name, dirs)
		}
		if _, ok := ts.srv.cat.Topic("t"); ok {
			t.Fatalf("%s: the deleted topic is in the catalog", name)
		}
		if m := metadata(t, c, 12, false); len(m.Topics) != 0 {
			t.Fatalf("%s: Metadata lists %+v", name, m.Topics)
		}
	}
}

// tryDo is rawClient.do that returns its failure instead of failing the
// test, for goroutines other than the test's.
func (c *rawClient) tryDo(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	if _, err := c.nc.Write(frame(req, c.corr)); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	got, body, err := c.readResponse(resp.IsFlexible())
	if err != nil {
		return nil, err
	}
	if got != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	return resp, resp.ReadFrom(body)
}

// TestDeleteTopicsRace: DeleteTopics over the wire while clients
// produce, fetch and list offsets on the topic's partitions without a
// pause. Every answer is 0 or 3 (3 once the topic is going), and once
// the delete is answered no directory of the topic exists and neither
// the catalog nor Metadata lists it; a produce afterwards is 3.
func TestDeleteTopicsRace(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	admin := ts.dial()
	const rounds, clients, after = 25, 3, 20
	for round := range rounds {
		ts.createTopic("race", 2)
		var wg sync.WaitGroup
		deleted := make(chan struct{})
		started := make(chan struct{}, clients)
		errs := make(chan error, clients)
		for w := range clients {
			c := ts.dial()
			wg.Go(func() {
				signalled := false
				for i, post := 0, 0; post < after; i++ {
					select {
					case <-deleted:
						post++
					default:
					}
					p := int32(i % 2)
					var req kmsg.Request
					switch (i + w) % 3 {
					case 0:
						req = produceReq(9, -1, "race", p, batchOf(-1, 0, 0, "v"))
					case 1:
						req = fetchReq(12, "race", p, 0, 0, 0)
					default:
						req = listOffsetsReq("race", p, -1)
					}
					resp, err := c.tryDo(req)
					if err != nil {
						errs <- err
						return
					}
					if code := partitionCode(resp); code != errNone && code != errUnknownTopicOrPartition {
						errs <- fmt.Errorf("%s: code %d", apiName(req.Key()), code)
						return
					}
					if !signalled {
						signalled = true
						started <- struct{}{}
					}
				}
			})
		}
		for range clients {
			<-started
		}
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.Version = 5
		r.TopicNames = []string{"race"}
		resp := admin.do(r).(*kmsg.DeleteTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("round %d: DeleteTopics: %+v", round, resp.Topics[0])
		}
		close(deleted)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if dirs := topicDirs(t, ts, "race"); len(dirs) != 0 {
			t.Fatalf("round %d: directories of the deleted topic: %v", round, dirs)
		}
		if _, ok := ts.srv.cat.Topic("race"); ok {
			t.Fatalf("round %d: the deleted topic is in the catalog", round)
		}
		if m := metadata(t, admin, 12, false); len(m.Topics) != 0 {
			t.Fatalf("round %d: Metadata lists %+v", round, m.Topics)
		}
		if code := partitionCode(admin.do(produceReq(9, -1, "race", 0, batchOf(-1, 0, 0, "late")))); code != errUnknownTopicOrPartition {
			t.Fatalf("round %d: produce after the delete: code %d", round, code)
		}
	}
}

// TestLongPollOfDeletedTopic: a fetch waiting for data on a partition
// whose topic is deleted is woken by the partition's closing and answers
// UNKNOWN_TOPIC_OR_PARTITION at once, not after its MaxWaitMillis (ten
// minutes here: a fetch left waiting would hang the test).
func TestLongPollOfDeletedTopic(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	r := fetchReq(12, "t", 0, 0, 10*60*1000, 1)
	corr := c.send(r)
	waitFor(t, "the fetch to wait", func() bool { return ts.srv.longPolls.Load() == 1 })
	if _, err := ts.srv.cat.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if code := partitionCode(c.read(r, corr)); code != errUnknownTopicOrPartition {
		t.Fatalf("long poll of a deleted topic: code %d, want %d", code, errUnknownTopicOrPartition)
	}
	if dirs := topicDirs(t, ts, "t"); len(dirs) != 0 {
		t.Fatalf("directories of the deleted topic: %v", dirs)
	}
}
