package catalog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// The topic configs the catalog supports, by Kafka's names.
const (
	ConfigSegmentBytes    = "segment.bytes"
	ConfigSegmentMs       = "segment.ms"
	ConfigMaxMessageBytes = "max.message.bytes"
	ConfigRetentionBytes  = "retention.bytes"
	ConfigRetentionMs     = "retention.ms"
)

// configDef is a config's type and range, as Kafka's LogConfig defines
// it.
type configDef struct {
	bits     int // 32 for Kafka's INT, 64 for LONG
	min, max int64
}

// configDefs are Kafka 4's definitions (LogConfig): segment.bytes is an
// INT of at least 1 MiB (Kafka 3 took 14), segment.ms a LONG of at least
// 1, max.message.bytes an INT of at least 0, retention.bytes any LONG
// (negative: no limit), retention.ms a LONG of at least -1 (-1: no
// limit).
var configDefs = map[string]configDef{
	ConfigSegmentBytes:    {32, 1 << 20, math.MaxInt32},
	ConfigSegmentMs:       {64, 1, math.MaxInt64},
	ConfigMaxMessageBytes: {32, 0, math.MaxInt32},
	ConfigRetentionBytes:  {64, math.MinInt64, math.MaxInt64},
	ConfigRetentionMs:     {64, -1, math.MaxInt64},
}

// SupportedConfigs lists the topic configs the catalog takes, sorted.
func SupportedConfigs() []string {
	names := make([]string, 0, len(configDefs))
	for name := range configDefs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// parseConfig parses one config value as Kafka does (the value trimmed,
// then Integer.parseInt or Long.parseLong) and checks its range.
func parseConfig(name, value string) (int64, error) {
	def, ok := configDefs[name]
	if !ok {
		return 0, &ConfigError{Name: name, Value: value, Err: fmt.Errorf("%w: this store supports %s", ErrUnknownConfig, strings.Join(SupportedConfigs(), ", "))}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(value), 10, def.bits)
	if err != nil {
		kind := "a 64-bit integer"
		if def.bits == 32 {
			kind = "a 32-bit integer"
		}
		return 0, &ConfigError{Name: name, Value: value, Err: fmt.Errorf("%w: not %s", ErrInvalidConfig, kind)}
	}
	if v < def.min {
		return 0, &ConfigError{Name: name, Value: value, Err: fmt.Errorf("%w: value must be at least %d", ErrInvalidConfig, def.min)}
	}
	return v, nil
}

// ParseConfigs checks Kafka topic configs and converts them to the
// store's per-topic overrides. A config not given stays unset (the
// store's Options apply). Refusals are *ConfigError matching
// ErrUnknownConfig or ErrInvalidConfig; with several bad configs, the
// first by name is reported.
//
// The conversions, where the store's terms differ from Kafka's:
//
//   - segment.ms, retention.ms: milliseconds to a time.Duration; values
//     past about 292 years are taken as the longest Duration.
//   - retention.ms -1 and any negative retention.bytes: keep everything
//     (a negative override). retention.ms 0 (delete every segment but
//     the active one once its newest record is in the past) becomes one
//     nanosecond, which the store, comparing whole milliseconds, treats
//     exactly as Kafka treats 0. retention.bytes 0 (delete every segment
//     but the active one) becomes 1: it differs only while the active
//     segment is empty, when the newest sealed segment is kept.
//   - max.message.bytes below 61 (no Kafka v2 batch is smaller) becomes
//     61: either way every client batch is refused as too large.
func ParseConfigs(configs map[string]string) (logstore.TopicOptions, error) {
	var o logstore.TopicOptions
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v, err := parseConfig(name, configs[name])
		if err != nil {
			return logstore.TopicOptions{}, err
		}
		switch name {
		case ConfigSegmentBytes:
			o.SegmentBytes = &v
		case ConfigSegmentMs:
			d := msDuration(v)
			o.SegmentTime = &d
		case ConfigMaxMessageBytes:
			n := int(max(v, recordbatch.HeaderSize))
			o.MaxMessageBytes = &n
		case ConfigRetentionBytes:
			n := v
			switch {
			case v < 0:
				n = -1
			case v == 0:
				n = 1
			}
			o.RetentionBytes = &n
		case ConfigRetentionMs:
			d := msDuration(v)
			switch {
			case v < 0:
				d = -1
			case v == 0:
				d = time.Nanosecond
			}
			o.RetentionTime = &d
		}
	}
	return o, nil
}

// msDuration converts Kafka milliseconds (>= 0) to a Duration, capped at
// the longest one.
func msDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}
