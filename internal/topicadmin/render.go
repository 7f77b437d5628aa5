package topicadmin

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ListText is list's table: a header, then one row per topic.
func ListText(ts []Topic) []byte {
	return table(func(w *tabwriter.Writer) {
		w.Write([]byte("TOPIC\tPARTITIONS\tTOPIC ID\n"))
		for _, t := range ts {
			w.Write([]byte(t.Topic + "\t" + strconv.Itoa(int(t.Partitions)) + "\t" + t.ID + "\n"))
		}
	})
}

// DescribeText is describe's lines for each topic (see the package doc):
// the topic's (with its own configs), then its partitions', indented
// and aligned, then with all one per config of ds, likewise.
func DescribeText(ds []Description, all bool) []byte {
	var out []byte
	for _, d := range ds {
		var own []string
		for _, c := range ownConfigs(d.Configs) {
			own = append(own, c.Name+"="+valueText(c.Value))
		}
		out = append(out, "Topic: "+d.Topic+"  TopicId: "+d.ID+"  PartitionCount: "+strconv.Itoa(int(d.PartitionCount))+
			"  ReplicationFactor: "+strconv.Itoa(d.ReplicationFactor)+"  Configs: "+strings.Join(own, ",")+"\n"...)
		out = append(out, table(func(w *tabwriter.Writer) {
			for _, p := range d.Partitions {
				w.Write([]byte("  Topic: " + d.Topic + "\tPartition: " + strconv.Itoa(int(p.Partition)) + "\tLeader: " + strconv.Itoa(int(p.Leader)) +
					"\tReplicas: " + ids(p.Replicas) + "\tIsr: " + ids(p.ISR) +
					"\tStartOffset: " + strconv.FormatInt(p.StartOffset, 10) + "\tEndOffset: " + strconv.FormatInt(p.EndOffset, 10) + "\n"))
			}
		})...)
		if all {
			out = append(out, table(func(w *tabwriter.Writer) {
				for _, c := range d.Configs {
					w.Write([]byte("  Topic: " + d.Topic + "\tConfig: " + c.Name + "=" + valueText(c.Value) + "\tSource: " + c.Source + "\n"))
				}
			})...)
		}
	}
	return out
}

// ConfigsText is alter-configs' line, as kafka-configs.sh prints it, and
// the topic's own configs after the change.
func ConfigsText(topic string, cs []Config) []byte {
	var own []string
	for _, c := range cs {
		own = append(own, c.Name+"="+valueText(c.Value))
	}
	return []byte("Completed updating config for topic " + topic + ". Configs: " + strings.Join(own, ",") + "\n")
}

// DeleteRecordsText is delete-records' line, as kafka-delete-records.sh
// prints it.
func DeleteRecordsText(topic string, partition int32, low int64) []byte {
	return []byte("partition: " + topic + "-" + strconv.Itoa(int(partition)) + "\tlow_watermark: " + strconv.FormatInt(low, 10) + "\n")
}

// JSONLines is each value's JSON object on a line of its own.
func JSONLines[T any](vs []T) ([]byte, error) {
	var out []byte
	for i := range vs {
		b, err := JSONLine(vs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// JSONLine is v's JSON object and a newline.
func JSONLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func valueText(v *string) string {
	if v == nil {
		return "null"
	}
	return *v
}

func ids(s []int32) string {
	parts := make([]string, len(s))
	for i, id := range s {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

// table runs fill on a tabwriter (two spaces between columns) and
// returns what it wrote.
func table(fill func(w *tabwriter.Writer)) []byte {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fill(w)
	w.Flush()
	return buf.Bytes()
}
