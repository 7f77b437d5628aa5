package kafkaserver

// DescribeLogDirs (key 35, KIP-113), versions 0-4 advertised.
//
//   - v0: per log directory, its error code, its path and, per topic and
//     partition, the partition's size in bytes, its offset lag and
//     whether it is a future replica. Topics null is every partition.
//   - v1: the same (throttling after the response). v2: flexible.
//   - v3: a top-level ErrorCode (0; Kafka's 31
//     CLUSTER_AUTHORIZATION_FAILED needs an authorizer, which logstore
//     has not).
//   - v4 (KIP-827): TotalBytes and UsableBytes of the directory's
//     filesystem (statfs; -1, "unknown", where there is no statfs or it
//     fails).
//   - v5 (IsCordoned) is not advertised.
//
// One log directory: the store's, as an absolute path (Kafka reports
// each log.dirs entry so). Every topic of the catalog is in it, as
// Kafka's ReplicaManager.describeLogDirs answers its logs: a partition's
// size is that of its segments, the sum of its .log files on disk (as
// Kafka's UnifiedLog.size sums its segments' FileRecords; the index
// files are not counted), read from the directory without opening the
// partition; offset lag 0 (the log end is the high watermark's, there
// are no future replicas) and IsFuture false. A topic or partition that
// does not exist is left out, and so is a topic none of whose asked
// partitions exists, as Kafka leaves them out; an empty Topics list
// answers the directory with no topics.

import (
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// handleDescribeLogDirs answers the store's directory with the
// partitions asked for (all for a null Topics) that exist.
func handleDescribeLogDirs(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	p.resp = resp
	if code := s.clusterCode(c, kmsg.ACLOperationDescribe); code != errNone {
		// Kafka: no directories, and 31 from v3, which has the field.
		if r.Version >= 3 {
			resp.ErrorCode = code
		}
		p.setErr(code)
		return nil
	}

	// asked: the partitions asked for by topic; nil for all of them.
	var asked map[string]map[int32]bool
	if r.Topics != nil {
		asked = make(map[string]map[int32]bool, len(r.Topics))
		for _, rt := range r.Topics {
			ps := asked[rt.Topic]
			if ps == nil {
				ps = make(map[int32]bool, len(rt.Partitions))
				asked[rt.Topic] = ps
			}
			for _, i := range rt.Partitions {
				ps[i] = true
			}
		}
	}

	dir := s.store.Dir()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	d := kmsg.NewDescribeLogDirsResponseDir()
	d.Dir = dir
	d.TotalBytes, d.UsableBytes = dirSpace(dir)
	d.Topics = []kmsg.DescribeLogDirsResponseDirTopic{}
	for _, t := range s.cat.Topics() {
		var ps map[int32]bool
		if asked != nil {
			if ps = asked[t.Name]; ps == nil {
				continue
			}
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = t.Name
		for i := range t.Partitions {
			if ps != nil && !ps[i] {
				continue
			}
			size, ok := s.partitionSize(logstore.PartitionID{Topic: t.Name, Partition: i})
			if !ok {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = i, size
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			d.Topics = append(d.Topics, dt)
		}
	}
	resp.Dirs = append(resp.Dirs, d)
	return nil
}

// partitionSize is the sum of the sizes of id's .log files, through the
// store's filesystem; false when its directory cannot be read (the
// partition is gone, its topic deleted under the request).
func (s *Server) partitionSize(id logstore.PartitionID) (int64, bool) {
	fsys := s.store.FS()
	pdir := filepath.Join(s.store.Dir(), id.String())
	names, err := fsys.ReadDir(pdir)
	if err != nil {
		return 0, false
	}
	var size int64
	for _, name := range names {
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		fi, err := fsys.Stat(filepath.Join(pdir, name))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		size += fi.Size()
	}
	return size, true
}
