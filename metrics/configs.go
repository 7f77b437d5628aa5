package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// configMetrics count the config changes AlterConfigs and
// IncrementalAlterConfigs made.
type configMetrics struct {
	changes *prometheus.CounterVec // resource
}

// ConfigResources are the resource types the config changes counter
// always reports (0 until one changes), Kafka's names in lower case.
var ConfigResources = []string{"topic", "broker"}

func (c *configMetrics) register(reg prometheus.Registerer) {
	c.changes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logstore_config_changes_total",
		Help: "Resources whose configs AlterConfigs or IncrementalAlterConfigs set, durably (validate-only and refused ones not counted), by resource type.",
	}, []string{"resource"})
	for _, r := range ConfigResources {
		c.changes.WithLabelValues(r)
	}
	reg.MustRegister(c.changes)
}

// ConfigChanged counts one resource's configs set; resource is one of
// ConfigResources.
func (m *Metrics) ConfigChanged(resource string) {
	if m == nil {
		return
	}
	m.configs.changes.WithLabelValues(resource).Inc()
}

// ConfigChanges is the count of config changes of resource so far.
func (m *Metrics) ConfigChanges(resource string) float64 {
	if m == nil {
		return 0
	}
	var d dto.Metric
	if err := m.configs.changes.WithLabelValues(resource).Write(&d); err != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}
