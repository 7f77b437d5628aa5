package kafkaserver

import "syscall"

// dirSpace is the total and usable bytes of the filesystem that holds
// dir, as Java's FileStore.getTotalSpace and getUsableSpace read them
// (f_blocks and f_bavail, in units of f_frsize), or -1 and -1 when statfs
// fails.
func dirSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	return spaceBytes(uint64(st.Blocks), unit), spaceBytes(uint64(st.Bavail), unit)
}
