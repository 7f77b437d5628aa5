package segment_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/segment"
)

// TestUnreadableCheckpointNote: a damaged checkpoint is a note of Verify
// and a field of the recovery report, which say where; the text says
// what, once, without the package prefix.
func TestUnreadableCheckpointNote(t *testing.T) {
	w := writeLog(t, verifyCfg, 3, true)
	name := filepath.Join(w.dir, "logstore.checkpoint")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-2] ^= 1 // a digit of the checksum
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var notes []segment.Problem
	if _, err := segment.Verify(w.dir, nil, func(p segment.Problem) { notes = append(notes, p) }); err != nil {
		t.Fatal(err)
	}
	want := "unreadable checkpoint: checksum mismatch: the next open treats the last shutdown as unclean and scans every segment"
	if len(notes) != 1 || notes[0].Kind != segment.ProblemNote || notes[0].File != name || notes[0].Detail != want {
		t.Fatalf("findings %+v, want one note on %s: %q", notes, name, want)
	}
	l, rep := open(t, w.dir, verifyCfg)
	defer l.Close()
	if rep.Clean || rep.CheckpointError == nil || rep.CheckpointError.Error() != "unreadable checkpoint: checksum mismatch" {
		t.Fatalf("report clean %t, checkpoint error %v; want unclean and the checksum mismatch", rep.Clean, rep.CheckpointError)
	}
}
