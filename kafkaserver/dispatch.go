package kafkaserver

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minHeaderBytes is the shortest request header: api key, version,
// correlation id and a null client id.
const minHeaderBytes = 10

const apiVersionsKey = 18

// produceKey is Produce's API key.
const produceKey = 0

const levelDebug = slog.LevelDebug

// maxOtherRequestBytes bounds the frame of every request but Produce,
// whose records are the only large field Kafka has. kmsg allocates an
// array as long as its count before it decodes the elements (it checks
// only that as many bytes remain), so a frame of n bytes of array counts
// can make it allocate some 50 to 100 times n; this bound keeps that
// below 100 MB for all but Produce.
const maxOtherRequestBytes = 1 << 20

// api is one entry of the API table: what ApiVersions advertises and
// what dispatch serves are this one table.
type api struct {
	key      int16
	name     string
	min, max int16
	// handle is the API's handler, in the file named after the API
	// (joingroup.go for JoinGroup, ...): it fills p.resp, at once or
	// later (answerLater, handlers.go). An error closes the connection.
	handle func(s *Server, c *conn, req kmsg.Request, p *pending) error
}

var (
	apis     []api
	apiByKey map[int16]*api
)

func init() {
	apis = []api{
		{key: 0, name: "Produce", min: 0, max: 11, handle: handleProduce},
		{key: 1, name: "Fetch", min: 4, max: 12, handle: handleFetch},
		{key: 2, name: "ListOffsets", min: 1, max: 10, handle: handleListOffsets},
		{key: 3, name: "Metadata", min: 0, max: 13, handle: handleMetadata},
		{key: 10, name: "FindCoordinator", min: 0, max: 6, handle: handleFindCoordinator},
		{key: apiVersionsKey, name: "ApiVersions", min: 0, max: 4, handle: handleApiVersions},
		{key: 19, name: "CreateTopics", min: 0, max: 7, handle: handleCreateTopics},
		{key: 20, name: "DeleteTopics", min: 0, max: 6, handle: handleDeleteTopics},
		{key: 37, name: "CreatePartitions", min: 0, max: 3, handle: handleCreatePartitions},
		{key: 21, name: "DeleteRecords", min: 0, max: 2, handle: handleDeleteRecords},
		{key: 32, name: "DescribeConfigs", min: 0, max: 4, handle: handleDescribeConfigs},
		{key: 33, name: "AlterConfigs", min: 0, max: 2, handle: handleAlterConfigs},
		{key: 44, name: "IncrementalAlterConfigs", min: 0, max: 1, handle: handleIncrementalAlterConfigs},
		{key: 23, name: "OffsetForLeaderEpoch", min: 0, max: 4, handle: handleOffsetForLeaderEpoch},
		{key: 22, name: "InitProducerId", min: 0, max: 4, handle: handleInitProducerID},
		// The group coordinator (groups.go).
		{key: 8, name: "OffsetCommit", min: 2, max: 8, handle: handleOffsetCommit},
		{key: 9, name: "OffsetFetch", min: 1, max: 8, handle: handleOffsetFetch},
		{key: 11, name: "JoinGroup", min: 0, max: 9, handle: handleJoinGroup},
		{key: 12, name: "Heartbeat", min: 0, max: 4, handle: handleHeartbeat},
		{key: 13, name: "LeaveGroup", min: 0, max: 5, handle: handleLeaveGroup},
		{key: 14, name: "SyncGroup", min: 0, max: 5, handle: handleSyncGroup},
		{key: 15, name: "DescribeGroups", min: 0, max: 6, handle: handleDescribeGroups},
		{key: 16, name: "ListGroups", min: 0, max: 5, handle: handleListGroups},
		{key: 42, name: "DeleteGroups", min: 0, max: 2, handle: handleDeleteGroups},
		{key: 47, name: "OffsetDelete", min: 0, max: 0, handle: handleOffsetDelete},
		{key: 25, name: "AddOffsetsToTxn", min: 0, max: 3, handle: handleAddOffsetsToTxn},
		{key: 28, name: "TxnOffsetCommit", min: 0, max: 3, handle: handleTxnOffsetCommit},
		{key: 24, name: "AddPartitionsToTxn", min: 0, max: 3, handle: handleAddPartitionsToTxn},
		{key: 26, name: "EndTxn", min: 0, max: 4, handle: handleEndTxn},
		{key: 61, name: "DescribeProducers", min: 0, max: 0, handle: handleDescribeProducers},
		{key: 65, name: "DescribeTransactions", min: 0, max: 0, handle: handleDescribeTransactions},
		{key: 66, name: "ListTransactions", min: 0, max: 1, handle: handleListTransactions},
		// SASL (sasl.go).
		{key: saslHandshakeKey, name: "SaslHandshake", min: 0, max: 1, handle: handleSASLHandshake},
		{key: saslAuthenticateKey, name: "SaslAuthenticate", min: 0, max: 2, handle: handleSASLAuthenticate},
		{key: 50, name: "DescribeUserScramCredentials", min: 0, max: 0, handle: handleDescribeUserScramCredentials},
		{key: 51, name: "AlterUserScramCredentials", min: 0, max: 0, handle: handleAlterUserScramCredentials},
		// Authorization (authz.go).
		{key: 29, name: "DescribeAcls", min: 0, max: 3, handle: handleDescribeAcls},
		{key: 30, name: "CreateAcls", min: 0, max: 3, handle: handleCreateAcls},
		{key: 31, name: "DeleteAcls", min: 0, max: 3, handle: handleDeleteAcls},
		{key: 75, name: "DescribeTopicPartitions", min: 0, max: 0, handle: handleDescribeTopicPartitions},
		{key: 60, name: "DescribeCluster", min: 0, max: 1, handle: handleDescribeCluster},
		{key: 35, name: "DescribeLogDirs", min: 0, max: 4, handle: handleDescribeLogDirs},
	}
	apiByKey = make(map[int16]*api, len(apis))
	for i := range apis {
		apiByKey[apis[i].key] = &apis[i]
	}
}

func apiName(key int16) string {
	if a, ok := apiByKey[key]; ok {
		return a.name
	}
	return "key " + strconv.Itoa(int(key))
}

// tagReader reads a flexible header's tag section for kmsg.SkipTags.
type tagReader struct {
	src []byte
	bad bool
}

func (r *tagReader) Uvarint() uint32 {
	v, n := binary.Uvarint(r.src)
	if n <= 0 || v > 1<<32-1 {
		r.bad, r.src = true, nil
		return 0
	}
	r.src = r.src[n:]
	return uint32(v)
}

func (r *tagReader) Span(n int) []byte {
	if n < 0 || n > len(r.src) {
		r.bad, r.src = true, nil
		return nil
	}
	s := r.src[:n]
	r.src = r.src[n:]
	return s
}

func (r *tagReader) Ok() bool { return !r.bad }

// handle decodes one request frame and runs its handler: the one place
// every request passes, where the metrics of a request are taken (see
// finished). An error closes the connection: an unknown key, a version
// not advertised, bytes that do not decode, or a request the handler
// refuses so (Produce v0-2).
func (s *Server) handle(c *conn, frame []byte) (*pending, error) {
	key := int16(binary.BigEndian.Uint16(frame))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	// client_id: a nullable int16-length string, also in flexible headers.
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	var clientID []byte
	if n > 0 {
		if int(n) > len(rest) {
			return nil, fmt.Errorf("request header (key %d, correlation id %d): client id of %d bytes, %d bytes follow", key, corr, n, len(rest))
		}
		clientID = rest[:n]
		rest = rest[n:]
	}
	a, ok := apiByKey[key]
	if !ok {
		return nil, fmt.Errorf("request with unknown or unsupported API key %d (version %d, correlation id %d)", key, version, corr)
	}
	if !c.mayServe(key) {
		return nil, fmt.Errorf("%s request before SASL authentication", a.name)
	}
	if key != produceKey && len(frame) > maxOtherRequestBytes {
		return nil, fmt.Errorf("%s request of %d bytes; the limit for requests other than Produce is %d", a.name, len(frame), maxOtherRequestBytes)
	}
	p := &pending{key: key, version: version, corr: corr, start: time.Now()}
	if key == joinGroupKey {
		p.clientID = string(clientID)
	}
	if version < a.min || version > a.max {
		if key == apiVersionsKey && version > a.max {
			// KIP-511: a v0 body with UNSUPPORTED_VERSION and our
			// range of ApiVersions, so the client retries within it.
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 0
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
			resp.ApiKeys = append(resp.ApiKeys, k)
			p.resp = resp
			p.setErr(resp.ErrorCode)
			return p, nil
		}
		return nil, fmt.Errorf("%s request at version %d, which was not advertised (%d to %d; correlation id %d)", a.name, version, a.min, a.max, corr)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		tr := &tagReader{src: rest}
		kmsg.SkipTags(tr)
		if tr.bad {
			return nil, fmt.Errorf("%s v%d request (correlation id %d): malformed header tags", a.name, version, corr)
		}
		rest = tr.src
	}
	if key == produceKey {
		elements, err := checkProduceShape(version, rest)
		if err != nil {
			return nil, fmt.Errorf("%s v%d request (correlation id %d): %w", a.name, version, corr, err)
		}
		// Charged for the most a produce of its size may cost, it now
		// keeps what this one will (reqbudget.go).
		c.keep(int64(len(frame)) + int64(elements)*int64(produceElementBytes))
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%s v%d request (correlation id %d) does not decode: %w", a.name, version, corr, err)
	}
	if err := s.run(a, c, req, p); err != nil {
		return nil, fmt.Errorf("%s v%d request (correlation id %d): %w", a.name, version, corr, err)
	}
	return p, nil
}

// run calls a's handler, turning a panic into a closed connection with
// a log line (a bug, never a client's doing).
func (s *Server) run(a *api, c *conn, req kmsg.Request, p *pending) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("kafka handler panicked", "api", a.name, "version", p.version, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", v)
		}
	}()
	return a.handle(s, c, req, p)
}

// finished is called once per request when its response is complete
// (written or not): the hook for request metrics (API key, version,
// error code, duration).
func (s *Server) finished(p *pending) {
	s.cfg.Metrics.Request(p.key, p.errCode, time.Since(p.start))
	if p.errCode != 0 && s.log.Enabled(s.ctx, levelDebug) {
		s.log.Debug("kafka request answered with an error", "api", apiName(p.key), "version", p.version, "error_code", p.errCode, "took", time.Since(p.start))
	}
}
