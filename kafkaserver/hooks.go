package kafkaserver

import (
	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
)

// The places where the server's metrics are taken, each called from one
// place: finished (dispatch.go) once per request, with its key, version,
// error code and duration; produced once per partition of a produce;
// and the byte counts of frames read and written. With no
// Config.Metrics they cost a nil check.

// produced is called once per partition of a produce request, with the
// batch's size.
func (s *Server) produced(id logstore.PartitionID, o metrics.Outcome, bytes int) {
	s.cfg.Metrics.ProduceBatch(o)
	if o == metrics.OutcomeDuplicate {
		s.log.Debug("kafka produce: duplicate answered with the first copy's offsets", "partition", id.String(), "bytes", bytes)
	}
}

// bytesRead and bytesWritten count request and response frames.
func (s *Server) bytesRead(n int)    { s.cfg.Metrics.BytesIn(n) }
func (s *Server) bytesWritten(n int) { s.cfg.Metrics.BytesOut(n) }
