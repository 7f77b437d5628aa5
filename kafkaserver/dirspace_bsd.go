//go:build darwin || freebsd

package kafkaserver

import "syscall"

// dirSpace is the total and usable bytes of the filesystem that holds
// dir (f_blocks and f_bavail, in units of f_bsize), or -1 and -1 when
// statfs fails.
func dirSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return spaceBytes(uint64(st.Blocks), uint64(st.Bsize)), spaceBytes(uint64(st.Bavail), uint64(st.Bsize))
}
