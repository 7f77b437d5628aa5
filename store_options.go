package logstore

// Options returns the options the store was opened with, after Open's
// checks: a zero segment field still means Kafka's default (see
// Options). The server reports them as the store-wide (broker) values of
// the topic configs it applies (DescribeConfigs).
func (s *Store) Options() Options { return s.opts }
