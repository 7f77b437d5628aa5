// Package cliout holds what logstore's commands share to write their
// output: whether a writer is a terminal, the one progress line that is
// redrawn in place on stderr, the JSON string quoting of the JSON lines
// the commands build by hand, and the text line of a record that
// `logstore read` prints (AppendRecordText).
//
// JSON strings escape '"', '\\' and the C0 controls (U+0000..U+001F),
// with \n, \r and \t for those three and \u00XX for the others, and
// nothing else: DEL (0x7f) and every non-ASCII character are written as
// they are, as RFC 8259 allows. (Go's encoding/json differs: it escapes
// U+2028 and U+2029 always, and <, > and & unless told not to.)
// Malformed UTF-8 becomes U+FFFD.
package cliout
