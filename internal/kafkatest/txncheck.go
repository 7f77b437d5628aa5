package kafkatest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/kafkadump"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Entry is one record of a transactional log as a checker found it: a
// data record or a transaction marker.
type Entry struct {
	Partition     int32
	Offset        int64
	Value         string // data records only
	ProducerID    int64
	Epoch         int16
	Transactional bool
	// Control: a transaction marker; Commit says COMMIT (true) or ABORT.
	Control bool
	Commit  bool
}

// ErrTxnVerify is what the transactional verifiers' errors match.
var ErrTxnVerify = errors.New("kafkatest: the log does not hold the transactions as they ended")

// problems collects a verifier's findings into a *VerifyError that
// matches ErrTxnVerify.
type problems struct{ VerifyError }

func (p *problems) add(format string, args ...any) {
	p.Total++
	if len(p.Problems) < 30 {
		p.Problems = append(p.Problems, fmt.Sprintf(format, args...))
	}
}

func (p *problems) err() error {
	if p.Total == 0 {
		return nil
	}
	return &TxnVerifyError{p.VerifyError}
}

// TxnVerifyError lists the problems a transactional verifier found.
type TxnVerifyError struct{ VerifyError }

func (e *TxnVerifyError) Error() string {
	s := e.VerifyError.Error()
	return ErrTxnVerify.Error() + s[len(ErrVerify.Error()):]
}

func (e *TxnVerifyError) Unwrap() error { return ErrTxnVerify }

// Decision is how the log ended one transaction's records.
type Decision int

const (
	Open Decision = iota // no marker after it: the transaction is still open
	Committed
	Aborted
)

func (d Decision) String() string {
	return [...]string{"open", "committed", "aborted"}[d]
}

// TxnVerdict is what a whole log (a store scan, or a read_uncommitted
// consumer keeping control records) says of a TxnWorkload's
// transactions.
type TxnVerdict struct {
	// Found is where each value is, Decided how its transaction ended
	// in its partition.
	Found   map[string]Entry
	Decided map[string]Decision
	// Markers are every marker, per partition in offset order.
	Markers map[int32][]Entry
	// AbortedRanges are the aborted transactions Kafka's rules derive
	// from the log (what the .txnindex files must hold), per partition.
	AbortedRanges map[int32][]segment.AbortedTxn
	// Committed and Aborted count the transactions the client saw end
	// so; UncertainCommitted and UncertainAborted split the uncertain
	// ones by how the log ended them.
	Committed, Aborted, UncertainCommitted, UncertainAborted int
	// SpareMarkers counts the markers that ended nothing: no record of
	// their producer was open in that partition (a partition added to a
	// transaction and never written, or a decision's markers written
	// again after a crash).
	SpareMarkers int
}

// VerifyTxnLog reads a whole log (every data record and marker of the
// topic, as ScanTxns or ConsumeTxns at read_uncommitted give it) and
// checks it against res:
//   - every data record is a value of the workload, in the partition it
//     was produced to, found once, transactional, and in production order
//     per producer and partition;
//   - every transactional record is followed by a marker of its producer
//     in its partition (no transaction left open), which decides it;
//   - a transaction's records are decided alike in every partition (all
//     committed or all aborted: atomic);
//   - committed transactions are committed with every record, at the
//     offset kgo acknowledged; aborted ones have no committed record and
//     every record kgo acknowledged is there, aborted; an uncertain one
//     (its EndTxn answer lost) either, but all or nothing.
func VerifyTxnLog(res *TxnResult, log []Entry) (*TxnVerdict, error) {
	var p problems
	v := &TxnVerdict{
		Found: map[string]Entry{}, Decided: map[string]Decision{},
		Markers: map[int32][]Entry{}, AbortedRanges: map[int32][]segment.AbortedTxn{},
	}
	index := txnIndex(res)
	sorted := sortEntries(log)
	type open struct {
		first  int64
		values []string
	}
	opens := map[int32]map[int64]*open{}
	lastOffset := map[int32]int64{}
	for _, e := range sorted {
		if lo, ok := lastOffset[e.Partition]; ok && e.Offset <= lo {
			p.add("partition %d: offset %d after offset %d", e.Partition, e.Offset, lo)
		}
		lastOffset[e.Partition] = e.Offset
		os := opens[e.Partition]
		if os == nil {
			os = map[int64]*open{}
			opens[e.Partition] = os
		}
		if e.Control {
			v.Markers[e.Partition] = append(v.Markers[e.Partition], e)
			o := os[e.ProducerID]
			if o == nil {
				// Kafka writes a marker to every partition of the
				// transaction; one with no data here is harmless
				// (a partition added, nothing appended; a decision
				// finished again after a crash).
				v.SpareMarkers++
				continue
			}
			d := Aborted
			if e.Commit {
				d = Committed
			} else {
				lso := e.Offset + 1
				for pid, other := range os {
					if pid != e.ProducerID && other.first < lso {
						lso = other.first
					}
				}
				v.AbortedRanges[e.Partition] = append(v.AbortedRanges[e.Partition], segment.AbortedTxn{
					ProducerID: e.ProducerID, FirstOffset: o.first, LastOffset: e.Offset, LastStableOffset: lso})
			}
			for _, val := range o.values {
				v.Decided[val] = d
			}
			delete(os, e.ProducerID)
			continue
		}
		if !e.Transactional {
			p.add("partition %d offset %d (%q): not transactional", e.Partition, e.Offset, e.Value)
		}
		if prev, dup := v.Found[e.Value]; dup {
			p.add("value %q twice: partition %d offset %d and partition %d offset %d", e.Value, prev.Partition, prev.Offset, e.Partition, e.Offset)
			continue
		}
		v.Found[e.Value] = e
		if e.Transactional {
			o := os[e.ProducerID]
			if o == nil {
				o = &open{first: e.Offset}
				os[e.ProducerID] = o
			}
			o.values = append(o.values, e.Value)
			v.Decided[e.Value] = Open
		}
	}
	for part, os := range opens {
		for pid, o := range os {
			p.add("partition %d: producer %d's transaction from offset %d (%d records, first %q) has no marker: still open", part, pid, o.first, len(o.values), o.values[0])
		}
	}
	checkFound(&p, res, index, v.Found)
	for i := range res.Txns {
		tx := &res.Txns[i]
		decisions := map[Decision][]string{}
		found := 0
		for _, a := range tx.Records {
			if _, ok := v.Found[a.Value]; !ok {
				continue
			}
			found++
			d := v.Decided[a.Value]
			decisions[d] = append(decisions[d], a.Value)
		}
		if len(decisions) > 1 {
			p.add("transaction %d (%s): not atomic: %s", tx.Index, tx.Outcome, decisionsText(decisions))
			continue
		}
		committed := len(decisions[Committed]) > 0
		switch tx.Outcome {
		case TxnCommitted:
			v.Committed++
			if found < len(tx.Records) || !committed {
				p.add("transaction %d: committed by the client, the log has %d of its %d records, %s", tx.Index, found, len(tx.Records), decisionsText(decisions))
			}
		case TxnAborted:
			v.Aborted++
			if committed {
				p.add("transaction %d: aborted by the client (%v), the log commits %s", tx.Index, tx.Err, decisionsText(decisions))
			}
			for _, a := range tx.Records {
				if _, ok := v.Found[a.Value]; !ok && a.Offset >= 0 {
					p.add("transaction %d: record %q acknowledged at partition %d offset %d, aborted, not in the log", tx.Index, a.Value, a.Partition, a.Offset)
				}
			}
		case TxnUncertain:
			if committed {
				v.UncertainCommitted++
				if found < len(tx.Records) {
					p.add("transaction %d: uncertain, committed with %d of its %d records", tx.Index, found, len(tx.Records))
				}
			} else {
				v.UncertainAborted++
			}
		}
	}
	return v, p.err()
}

// VerifyTxnCommitted checks what a read_committed consumer read
// (ConsumeTxns, control records kept) against the verdict of the whole
// log: exactly the committed records, each once, at the offset the log
// has it, and every marker where the log has it; no record of an aborted
// transaction.
func VerifyTxnCommitted(res *TxnResult, v *TxnVerdict, consumed []Entry) error {
	var p problems
	index := txnIndex(res)
	seen := map[string]Entry{}
	markers := map[int32][]Entry{}
	for _, e := range sortEntries(consumed) {
		if e.Control {
			markers[e.Partition] = append(markers[e.Partition], e)
			continue
		}
		if _, ok := index[e.Value]; !ok {
			p.add("partition %d offset %d: value %q was never produced", e.Partition, e.Offset, e.Value)
			continue
		}
		if prev, dup := seen[e.Value]; dup {
			p.add("value %q read twice: partition %d offset %d and partition %d offset %d", e.Value, prev.Partition, prev.Offset, e.Partition, e.Offset)
			continue
		}
		seen[e.Value] = e
		switch d := v.Decided[e.Value]; {
		case d != Committed:
			p.add("value %q read under read_committed at partition %d offset %d: the log has it %s", e.Value, e.Partition, e.Offset, d)
		case v.Found[e.Value].Partition != e.Partition || v.Found[e.Value].Offset != e.Offset:
			f := v.Found[e.Value]
			p.add("value %q read at partition %d offset %d, the log has it at partition %d offset %d", e.Value, e.Partition, e.Offset, f.Partition, f.Offset)
		}
	}
	for val, d := range v.Decided {
		if _, ok := seen[val]; d == Committed && !ok {
			f := v.Found[val]
			p.add("value %q committed at partition %d offset %d, not read under read_committed", val, f.Partition, f.Offset)
		}
	}
	compareMarkers(&p, "read_committed", markers, v.Markers)
	return p.err()
}

// CompareVerdicts checks that two whole-log readings (a read_uncommitted
// consumer's and a store scan's) agree: the same values at the same
// offsets, decided alike, the same markers.
func CompareVerdicts(a, b *TxnVerdict, aName, bName string) error {
	var p problems
	for val, ea := range a.Found {
		eb, ok := b.Found[val]
		switch {
		case !ok:
			p.add("value %q: %s has it at partition %d offset %d, %s does not", val, aName, ea.Partition, ea.Offset, bName)
		case ea.Partition != eb.Partition || ea.Offset != eb.Offset || a.Decided[val] != b.Decided[val]:
			p.add("value %q: %s has it at partition %d offset %d %s, %s at partition %d offset %d %s", val,
				aName, ea.Partition, ea.Offset, a.Decided[val], bName, eb.Partition, eb.Offset, b.Decided[val])
		}
	}
	for val, eb := range b.Found {
		if _, ok := a.Found[val]; !ok {
			p.add("value %q: %s has it at partition %d offset %d, %s does not", val, bName, eb.Partition, eb.Offset, aName)
		}
	}
	compareMarkers(&p, aName+" and "+bName, a.Markers, b.Markers)
	return p.err()
}

func compareMarkers(p *problems, what string, got, want map[int32][]Entry) {
	for _, part := range partitionsOf(got, want) {
		g, w := got[part], want[part]
		if len(g) != len(w) {
			p.add("%s: partition %d: %d markers, the log has %d", what, part, len(g), len(w))
			continue
		}
		for i := range g {
			if g[i].Offset != w[i].Offset || g[i].Commit != w[i].Commit || g[i].ProducerID != w[i].ProducerID {
				p.add("%s: partition %d: marker %d is %s, the log has %s", what, part, i, markerText(g[i]), markerText(w[i]))
			}
		}
	}
}

func partitionsOf(ms ...map[int32][]Entry) []int32 {
	var parts []int32
	for _, m := range ms {
		for part := range m {
			if !slices.Contains(parts, part) {
				parts = append(parts, part)
			}
		}
	}
	slices.Sort(parts)
	return parts
}

func markerText(e Entry) string {
	kind := "ABORT"
	if e.Commit {
		kind = "COMMIT"
	}
	return fmt.Sprintf("%s of producer %d epoch %d at offset %d", kind, e.ProducerID, e.Epoch, e.Offset)
}

// checkFound checks what is common to every reading: each value is the
// workload's, in its partition, at its acknowledged offset, and in
// production order per producer and partition.
func checkFound(p *problems, res *TxnResult, index map[string][2]int, found map[string]Entry) {
	type key struct {
		partition int32
		pid       int64
	}
	var vals []Entry
	for _, e := range found {
		vals = append(vals, e)
	}
	vals = sortEntries(vals)
	last := map[key][2]int{}
	for _, e := range vals {
		at, ok := index[e.Value]
		if !ok {
			p.add("partition %d offset %d: value %q was never produced", e.Partition, e.Offset, e.Value)
			continue
		}
		a := res.Txns[at[0]].Records[at[1]]
		if a.Partition != e.Partition {
			p.add("value %q in partition %d, produced to %d", e.Value, e.Partition, a.Partition)
		}
		if a.Offset >= 0 && a.Offset != e.Offset {
			p.add("value %q at offset %d, acknowledged at %d", e.Value, e.Offset, a.Offset)
		}
		k := key{e.Partition, e.ProducerID}
		if l, ok := last[k]; ok && (at[0] < l[0] || at[0] == l[0] && at[1] < l[1]) {
			p.add("partition %d offset %d: %q after transaction %d record %d: out of production order", e.Partition, e.Offset, e.Value, l[0], l[1])
		}
		last[k] = at
	}
}

// txnIndex maps each value of res to its transaction and record index.
func txnIndex(res *TxnResult) map[string][2]int {
	index := map[string][2]int{}
	for i, tx := range res.Txns {
		for j, a := range tx.Records {
			index[a.Value] = [2]int{i, j}
		}
	}
	return index
}

func sortEntries(es []Entry) []Entry {
	s := slices.Clone(es)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Partition != s[j].Partition {
			return s[i].Partition < s[j].Partition
		}
		return s[i].Offset < s[j].Offset
	})
	return s
}

func decisionsText(ds map[Decision][]string) string {
	var b bytes.Buffer
	for _, d := range []Decision{Committed, Aborted, Open} {
		if vs := ds[d]; len(vs) > 0 {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d %s (%s", len(vs), d, vs[0])
			if len(vs) > 1 {
				b.WriteString(", ...")
			}
			b.WriteString(")")
		}
	}
	if b.Len() == 0 {
		return "none of its records"
	}
	return b.String()
}

// ConsumeTxns reads every partition of topic from its start to its high
// watermark with a kgo consumer at the isolation level given (kgo's
// ReadCommitted or ReadUncommitted; consumeTo), and returns what it read:
// data records and markers. It fails when a partition's last stable
// offset (ListOffsets at read_committed) stays below its high watermark
// for stableWait: a transaction is still open, and a read_committed
// consumer could not reach the end. (An EndTxn answers once its
// decision is durable, as Kafka's does; its markers become durable, and
// the last stable offset passes the transaction, a moment later.)
func ConsumeTxns(ctx context.Context, brokers []string, topic string, partitions int32, iso kgo.IsolationLevel, opts ...kgo.Opt) ([]Entry, error) {
	hw, err := stableEnds(ctx, brokers, topic, partitions)
	if err != nil {
		return nil, err
	}
	var found []Entry
	err = consumeTo(ctx, brokers, topic, hw, iso, opts, func(r *kgo.Record) error {
		e := Entry{Partition: r.Partition, Offset: r.Offset, ProducerID: r.ProducerID, Epoch: r.ProducerEpoch,
			Transactional: r.Attrs.IsTransactional(), Control: r.Attrs.IsControl()}
		if e.Control {
			m, err := recordbatch.ParseEndTxnMarker(r.Key, r.Value)
			if err != nil {
				return fmt.Errorf("kafkatest: consume %s-%d: control record at offset %d: %w", topic, r.Partition, r.Offset, err)
			}
			e.Commit = m.Type == recordbatch.ControlCommit
		} else {
			e.Value = string(r.Value)
		}
		found = append(found, e)
		return nil
	})
	return found, err
}

// stableWait bounds how long stableEnds waits for the last stable
// offsets to reach the high watermarks.
const stableWait = 10 * time.Second

// stableEnds returns the high watermark of each partition of topic once
// its last stable offset is the same, asking again (every 10 ms, for at
// most stableWait) while a partition's is below.
func stableEnds(ctx context.Context, brokers []string, topic string, partitions int32) (map[int32]int64, error) {
	cl, err := kgo.NewClient(ClientOpts(brokers...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: list offsets: %w", err)
	}
	defer cl.Close()
	deadline := time.Now().Add(stableWait)
	for {
		hw, err := listOffsetsWith(ctx, cl, topic, partitions, 0)
		if err != nil {
			return nil, err
		}
		lso, err := listOffsetsWith(ctx, cl, topic, partitions, 1)
		if err != nil {
			return nil, err
		}
		var open error
		for p := range partitions {
			if lso[p] != hw[p] {
				open = fmt.Errorf("%w: partition %d: last stable offset %d, high watermark %d: a transaction is still open", ErrTxnVerify, p, lso[p], hw[p])
				break
			}
		}
		if open == nil {
			return hw, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (for %v)", open, stableWait)
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(open, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ListOffsetsAt asks for each partition's latest offset (ListOffsets -1)
// at isolation level iso: 0 the high watermark, 1 (read_committed) the
// last stable offset.
func ListOffsetsAt(ctx context.Context, brokers []string, topic string, partitions int32, iso int8) (map[int32]int64, error) {
	cl, err := kgo.NewClient(ClientOpts(brokers...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: list offsets: %w", err)
	}
	defer cl.Close()
	return listOffsetsWith(ctx, cl, topic, partitions, iso)
}

// listOffsetsWith is ListOffsetsAt through cl.
func listOffsetsWith(ctx context.Context, cl *kgo.Client, topic string, partitions int32, iso int8) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := range partitions {
		pt := kmsg.NewListOffsetsRequestTopicPartition()
		pt.Partition = p
		pt.Timestamp = -1
		t.Partitions = append(t.Partitions, pt)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: list offsets of %s: %w", topic, err)
	}
	ends := make(map[int32]int64, partitions)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafkatest: list offsets of %s-%d: %w", topic, rp.Partition, err)
			}
			ends[rp.Partition] = rp.Offset
		}
	}
	for p := range partitions {
		if _, ok := ends[p]; !ok {
			return nil, fmt.Errorf("kafkatest: list offsets of %s: no answer for partition %d", topic, p)
		}
	}
	return ends, nil
}

// ConsumeTxnsAndVerify reads res's topic through brokers twice, at
// read_uncommitted (every record and marker: VerifyTxnLog) and at
// read_committed (VerifyTxnCommitted against the first), and returns the
// verdict of the first.
func ConsumeTxnsAndVerify(ctx context.Context, brokers []string, res *TxnResult, opts ...kgo.Opt) (*TxnVerdict, error) {
	all, err := ConsumeTxns(ctx, brokers, res.Topic, res.Partitions, kgo.ReadUncommitted(), opts...)
	if err != nil {
		return nil, err
	}
	v, err := VerifyTxnLog(res, all)
	if err != nil {
		return v, fmt.Errorf("read_uncommitted: %w", err)
	}
	committed, err := ConsumeTxns(ctx, brokers, res.Topic, res.Partitions, kgo.ReadCommitted(), opts...)
	if err != nil {
		return v, err
	}
	if err := VerifyTxnCommitted(res, v, committed); err != nil {
		return v, fmt.Errorf("read_committed: %w", err)
	}
	return v, nil
}

// ScanTxns reads every data record and marker of topic's partitions from
// an open store, with Partition.Read, each batch's CRC checked.
func ScanTxns(st *logstore.Store, topic string, partitions int32) ([]Entry, error) {
	var found []Entry
	for pn := range partitions {
		p, err := st.ExistingPartition(topic, pn)
		if err != nil {
			return found, fmt.Errorf("kafkatest: scan: %w", err)
		}
		err = scanRecords(p, func(b recordbatch.Batch, r *recordbatch.Record) error {
			e := Entry{Partition: pn, Offset: r.Offset, ProducerID: b.ProducerID(), Epoch: b.ProducerEpoch(),
				Transactional: b.Attributes().Transactional(), Control: b.Attributes().Control()}
			if e.Control {
				m, err := recordbatch.ParseEndTxnMarker(r.Key, r.Value)
				if err != nil {
					return fmt.Errorf("kafkatest: scan %s-%d: marker at offset %d: %w", topic, pn, r.Offset, err)
				}
				e.Commit = m.Type == recordbatch.ControlCommit
			} else {
				e.Value = string(r.Value)
			}
			found = append(found, e)
			return nil
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

// ScanTxnsAndVerify checks the store in dir (no process may have it
// open) after a TxnWorkload:
//   - logstore.Check finds no problem: among others, every .txnindex
//     equals what a rebuild from the log gives;
//   - then, the store opened: the scan of every record and marker passes
//     VerifyTxnLog, and agrees with want (a consumer's verdict) when
//     want is not nil;
//   - each partition's AbortedTransactions over the whole log (read from
//     its .txnindex files) are those the log's ABORT markers give by
//     Kafka's rules, last stable offsets included;
//   - Kafka's dump of the partition's .log files (package kafkadump)
//     prints every marker the scan found, at its offset, and no other.
func ScanTxnsAndVerify(dir string, res *TxnResult, want *TxnVerdict) (*TxnVerdict, error) {
	var p problems
	if _, err := logstore.Check(dir, func(pr logstore.Problem) {
		if pr.Kind != logstore.ProblemNote {
			p.add("check: %s", pr)
		}
	}); err != nil {
		return nil, fmt.Errorf("kafkatest: check: %w", err)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("kafkatest: scan: %w", err)
	}
	v, err := scanVerify(st, dir, res, want)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("kafkatest: scan: close: %w", cerr)
	}
	return v, err
}

func scanVerify(st *logstore.Store, dir string, res *TxnResult, want *TxnVerdict) (*TxnVerdict, error) {
	log, err := ScanTxns(st, res.Topic, res.Partitions)
	if err != nil {
		return nil, err
	}
	v, err := VerifyTxnLog(res, log)
	if err != nil {
		return v, fmt.Errorf("scan: %w", err)
	}
	if want != nil {
		if err := CompareVerdicts(v, want, "the scan", "the consumer"); err != nil {
			return v, err
		}
	}
	var p problems
	for pn := range res.Partitions {
		part, err := st.ExistingPartition(res.Topic, pn)
		if err != nil {
			return v, fmt.Errorf("kafkatest: scan: %w", err)
		}
		got, err := part.AbortedTransactions(part.StartOffset(), part.EndOffset())
		if err != nil {
			return v, fmt.Errorf("kafkatest: scan: %w", err)
		}
		if w := v.AbortedRanges[pn]; !slices.Equal(got, w) {
			p.add("partition %d: the .txnindex files hold the aborted transactions %v, the log's ABORT markers give %v", pn, got, w)
		}
		pdir := filepath.Join(dir, logstore.PartitionID{Topic: res.Topic, Partition: pn}.String())
		dumped, err := DumpMarkers(pdir)
		if err != nil {
			return v, err
		}
		var scanned []Entry
		for _, m := range v.Markers[pn] {
			scanned = append(scanned, Entry{Partition: pn, Offset: m.Offset, Commit: m.Commit, ProducerID: -1})
		}
		compareMarkers(&p, "the dump", map[int32][]Entry{pn: dumped}, map[int32][]Entry{pn: scanned})
	}
	return v, p.err()
}

// dumpMarker matches a marker's line in kafkadump's deep iteration.
var dumpMarker = regexp.MustCompile(`^\| offset: (\d+) .* endTxnMarker: (COMMIT|ABORT) `)

// DumpMarkers prints the .log files of the partition directory pdir with
// Kafka's dump (package kafkadump, deep iteration) and returns the
// markers it printed (offset and type; ProducerID -1: the record line
// does not name it).
func DumpMarkers(pdir string) ([]Entry, error) {
	logs, err := filepath.Glob(filepath.Join(pdir, "*.log"))
	if err != nil || len(logs) == 0 {
		return nil, fmt.Errorf("kafkatest: dump %s: no .log files (%v)", pdir, err)
	}
	slices.Sort(logs)
	var out, errOut bytes.Buffer
	opts := kafkadump.DefaultOptions()
	opts.DeepIteration = true
	if err := kafkadump.Dump(&out, &errOut, logs, opts); err != nil {
		return nil, fmt.Errorf("kafkatest: dump %s: %w (%s)", pdir, err, errOut.String())
	}
	var ms []Entry
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := dumpMarker.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		off, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("kafkatest: dump %s: %q: %w", pdir, sc.Text(), err)
		}
		ms = append(ms, Entry{Offset: off, Control: true, Commit: m[2] == "COMMIT", ProducerID: -1})
	}
	return ms, sc.Err()
}
