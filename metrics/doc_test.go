package metrics_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore/metrics"
)

// describer is a prometheus.Registerer that keeps the name of every
// metric a collector registered with it describes.
type describer struct{ names []string }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names = append(d.names, m[1])
		}
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// TestDocListsEveryMetric: the table in doc.go names exactly the
// metrics New registers.
func TestDocListsEveryMetric(t *testing.T) {
	d := &describer{}
	metrics.New(d)
	registered := slices.Sorted(slices.Values(d.names))
	if len(registered) == 0 {
		t.Fatal("New registered no metric")
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^//\t(logstore_[a-z_]+)`).FindAllSubmatch(doc, -1) {
		documented = append(documented, string(m[1]))
	}
	slices.Sort(documented)
	documented = slices.Compact(documented)
	if !slices.Equal(registered, documented) {
		t.Fatalf("metrics registered:\n%q\nmetrics in doc.go's table:\n%q", registered, documented)
	}
}
