package catalog_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/logstore/logstore/catalog"
)

func TestParseConfigs(t *testing.T) {
	o, err := catalog.ParseConfigs(nil)
	if err != nil || o.SegmentBytes != nil || o.SegmentTime != nil || o.MaxMessageBytes != nil || o.RetentionBytes != nil || o.RetentionTime != nil {
		t.Fatalf("no configs: %+v, %v (want every override unset)", o, err)
	}
	o, err = catalog.ParseConfigs(map[string]string{
		"segment.bytes":     " 1048576 ",
		"segment.ms":        "+60000",
		"max.message.bytes": "0",
		"retention.bytes":   "-5",
		"retention.ms":      "-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if *o.SegmentBytes != 1<<20 || *o.SegmentTime != time.Minute || *o.MaxMessageBytes != 61 || *o.RetentionBytes != -1 || *o.RetentionTime >= 0 {
		t.Fatalf("ParseConfigs = seg %d, ms %s, max %d, rb %d, rt %s", *o.SegmentBytes, *o.SegmentTime, *o.MaxMessageBytes, *o.RetentionBytes, *o.RetentionTime)
	}
	o, err = catalog.ParseConfigs(map[string]string{"retention.bytes": "0", "retention.ms": "0", "segment.ms": "9223372036854775807"})
	if err != nil {
		t.Fatal(err)
	}
	if *o.RetentionBytes != 1 || *o.RetentionTime != time.Nanosecond || *o.SegmentTime != math.MaxInt64 {
		t.Fatalf("zeros and the largest: rb %d, rt %s, seg.ms %d", *o.RetentionBytes, *o.RetentionTime, *o.SegmentTime)
	}
	o, err = catalog.ParseConfigs(map[string]string{"retention.ms": "86400000", "retention.bytes": "1000"})
	if err != nil || *o.RetentionTime != 24*time.Hour || *o.RetentionBytes != 1000 {
		t.Fatalf("retention: %+v, %v", o, err)
	}
	// The first bad config by name is reported.
	_, err = catalog.ParseConfigs(map[string]string{"segment.ms": "0", "cleanup.policy": "delete"})
	var ce *catalog.ConfigError
	if !errors.As(err, &ce) || ce.Name != "cleanup.policy" || !errors.Is(err, catalog.ErrUnknownConfig) {
		t.Fatalf("two bad configs: %v", err)
	}
}
