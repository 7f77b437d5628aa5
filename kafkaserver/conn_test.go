package kafkaserver

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func apiVersions(t *testing.T, c *rawClient, version int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = version
	r.ClientSoftwareName, r.ClientSoftwareVersion = "test", "1"
	return c.do(r).(*kmsg.ApiVersionsResponse)
}

// TestApiVersions: v0 and v3 list exactly the API table; a version above
// 4 gets a v0 body with UNSUPPORTED_VERSION and only ApiVersions' range
// (KIP-511), and the connection goes on.
func TestApiVersions(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	want := map[int16][2]int16{0: {0, 11}, 1: {4, 12}, 2: {1, 10}, 3: {0, 13}, 10: {0, 6}, 18: {0, 4}, 19: {0, 7}, 20: {0, 6}, 21: {0, 2}, 22: {0, 4}, 23: {0, 4}, 24: {0, 3}, 26: {0, 4}, 61: {0, 0}, 65: {0, 0}, 66: {0, 1},
		8: {2, 8}, 9: {1, 8}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6}, 16: {0, 5}, 42: {0, 2}, 47: {0, 0}, 25: {0, 3}, 28: {0, 3},
		32: {0, 4}, 33: {0, 2}, 44: {0, 1}, 35: {0, 4}, 37: {0, 3}, 60: {0, 1}, 75: {0, 0}, 17: {0, 1}, 36: {0, 2}, 50: {0, 0}, 51: {0, 0}, 29: {0, 3}, 30: {0, 3}, 31: {0, 3}}
	for _, v := range []int16{0, 3, 4} {
		resp := apiVersions(t, c, v)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		if len(got) != len(want) {
			t.Fatalf("v%d: %d APIs, want %d: %v", v, len(got), len(want), got)
		}
		for k, r := range want {
			if got[k] != r {
				t.Errorf("v%d: key %d advertised %v, want %v", v, k, got[k], r)
			}
		}
		if len(resp.SupportedFeatures) != 0 || len(resp.FinalizedFeatures) != 0 {
			t.Errorf("v%d: features advertised", v)
		}
	}

	// v5: the server cannot decode it; it answers in v0.
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = 5
	corr := c.send(r)
	got, body, err := c.readResponse(false)
	if err != nil || got != corr {
		t.Fatalf("v5: corr %d, %v", got, err)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.Version = 0
	if err := v0.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if v0.ErrorCode != errUnsupportedVersion || len(v0.ApiKeys) != 1 || v0.ApiKeys[0].ApiKey != 18 || v0.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("v5: %+v, want error 35 and key 18 0-4", v0)
	}
	if resp := apiVersions(t, c, 3); resp.ErrorCode != 0 {
		t.Fatal("the connection did not go on after the v5 request")
	}
}

// TestConnectionClosedOnBadRequests: each of these closes its connection
// with a log line, and the server goes on serving others.
func TestConnectionClosedOnBadRequests(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{MaxRequestBytes: 4096, AutoCreateTopics: true})
	header := func(key, version int16) []byte {
		b := []byte{0, 0, 0, 0}
		b = binary.BigEndian.AppendUint16(b, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
		return b
	}
	sized := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	cases := []struct {
		name  string
		bytes []byte
		log   string
	}{
		{"unknown key", sized(header(9999, 0)), "unknown or unsupported API key 9999"},
		{"unadvertised key", sized(header(68, 0)), "unknown or unsupported API key 68"},
		{"version not advertised", sized(header(1, 3)), "Fetch request at version 3"},
		{"version above the max", sized(header(3, 14)), "Metadata request at version 14"},
		{"oversized frame", binary.BigEndian.AppendUint32(nil, 4097), "request frame of 4097 bytes, the limit is 4096"},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xffffffff), "request frame of -1 bytes"},
		{"short frame", binary.BigEndian.AppendUint32(nil, 3), "shorter than a request header"},
		{"truncated frame", append(binary.BigEndian.AppendUint32(nil, 100), header(3, 1)[4:]...), "closed inside a request frame of 100 bytes"},
		{"body does not decode", append(sized(header(3, 1)), 0x7f), "does not decode"},
		{"client id too long", sized(append(header(18, 0)[:12], 0x10, 0)), "client id of 4096 bytes"},
		{"produce v2", frame(produceReq(2, -1, "t", 0, batchOf(-1, 0, 0, "x")), 1), "Produce v2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.dial()
			if _, err := c.nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if tc.name == "truncated frame" {
				c.nc.(interface{ CloseWrite() error }).CloseWrite()
			}
			c.expectClosed()
			// The server still serves.
			if resp := apiVersions(t, ts.dial(), 0); resp.ErrorCode != 0 {
				t.Fatal("server stopped serving")
			}
			if !strings.Contains(ts.logs.String(), tc.log) {
				t.Fatalf("no log line with %q in:\n%s", tc.log, ts.logs.String())
			}
		})
	}
}

// TestFrameSizeLimit: a frame of exactly MaxRequestBytes is served; one
// byte more closes the connection.
func TestFrameSizeLimit(t *testing.T) {
	const limit = 2048
	ts := startServer(t, logstore.Options{}, Config{MaxRequestBytes: limit})
	padded := func(size int) []byte {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version = 3
		r.ClientSoftwareVersion = "1"
		base := len(frame(r, 1)) - 4
		r.ClientSoftwareName = strings.Repeat("a", size-base)
		b := frame(r, 1)
		// The compact string's length varint may have grown a byte.
		r.ClientSoftwareName = r.ClientSoftwareName[len(b)-4-size:]
		b = frame(r, 1)
		if len(b)-4 != size {
			t.Fatalf("built a frame of %d bytes, want %d", len(b)-4, size)
		}
		return b
	}
	c := ts.dial()
	if _, err := c.nc.Write(padded(limit)); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if resp := c.read(req, 1).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("frame at the limit: error %d", resp.ErrorCode)
	}
	c = ts.dial()
	if _, err := c.nc.Write(padded(limit + 1)); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
}

// TestOtherRequestSizeLimit: a request other than Produce over 1 MiB
// closes the connection (kmsg's arrays make a large one costly to
// decode); a Produce of the same size is served.
func TestOtherRequestSizeLimit(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = 3
	r.ClientSoftwareName = strings.Repeat("a", maxOtherRequestBytes)
	c := ts.dial()
	if _, err := c.nc.Write(frame(r, 1)); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if !strings.Contains(ts.logs.String(), "the limit for requests other than Produce") {
		t.Fatalf("no log line:\n%s", ts.logs.String())
	}
	big := strings.Repeat("v", maxOtherRequestBytes)
	p := producePart(t, ts.dial(), 9, -1, "t", 0, batchOf(-1, 0, 0, big))
	if p.ErrorCode != errMessageTooLarge {
		t.Fatalf("a 1 MiB produce: code %d, want 10 (max.message.bytes), not a closed connection", p.ErrorCode)
	}
}

// TestHandlerPanic: a handler that panics (a bug) closes only its
// connection, with a log line; the server goes on.
func TestHandlerPanic(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	a := apiByKey[10]
	saved := a.handle
	a.handle = func(*Server, *conn, kmsg.Request, *pending) error { panic("test panic") }
	defer func() { a.handle = saved }()
	c := ts.dial()
	r := kmsg.NewPtrFindCoordinatorRequest()
	c.send(r)
	c.expectClosed()
	if !strings.Contains(ts.logs.String(), "test panic") {
		t.Fatalf("no log line:\n%s", ts.logs.String())
	}
	if resp := apiVersions(t, ts.dial(), 3); resp.ErrorCode != 0 {
		t.Fatal("server stopped serving")
	}
}
