// Package inspect builds what logstore's inspecting commands print about
// a store's state besides its records: the producers of a partition
// (`logstore producers`), the transactions its coordinator holds open,
// and the consumer groups with their committed offsets and lag, read
// from groups.db or asked of a running broker (`logstore groups`).
//
// Each is a value with the command's --json object as its JSON encoding,
// and a text line (AppendText, without its newline). The text lines are
// key=value words in a fixed order; a group id, protocol type, client id
// and metadata are Go-quoted there, since they may hold spaces. What the
// lines hold is the commands' output contract (see their --help): a
// change here is a change of the CLI.
package inspect
