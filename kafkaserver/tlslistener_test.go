package kafkaserver

import (
	"bytes"
	"net"
	"testing"
)

// countingConn records what is written to it and how many writes.
type countingConn struct {
	net.Conn
	writes int
	got    bytes.Buffer
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.got.Write(p)
}

// TestCoalescingConn: between hold and flush, writes are gathered into
// writes of coalesceBytes or so, in order; outside, each goes through.
func TestCoalescingConn(t *testing.T) {
	under := &countingConn{}
	cc := &coalescingConn{Conn: under}
	record := bytes.Repeat([]byte{'r'}, 16<<10+29)
	var want bytes.Buffer
	cc.hold()
	for i := range 100 {
		record[0] = byte(i)
		if n, err := cc.Write(record); n != len(record) || err != nil {
			t.Fatalf("held write: %d %v", n, err)
		}
		want.Write(record)
	}
	if err := cc.flush(); err != nil {
		t.Fatal(err)
	}
	if max := want.Len()/coalesceBytes + 1; under.writes > max {
		t.Errorf("%d writes for %d bytes held, want at most %d", under.writes, want.Len(), max)
	}
	if !bytes.Equal(under.got.Bytes(), want.Bytes()) {
		t.Error("the bytes written are not the bytes held, in order")
	}
	before := under.writes
	cc.Write(record)
	cc.Write(record)
	if under.writes != before+2 || cc.buf != nil {
		t.Errorf("not held: %d writes for 2, buffer kept %v", under.writes-before, cc.buf != nil)
	}
}
