//go:build !linux && !darwin && !freebsd

package kafkaserver

// dirSpace is -1 and -1, "unknown" in DescribeLogDirs v4+, where there
// is no statfs.
func dirSpace(dir string) (total, usable int64) { return -1, -1 }
