package cliout

import (
	"fmt"
	"io"
	"time"
)

// ProgressEvery is how often a Progress line is redrawn at most.
const ProgressEvery = 250 * time.Millisecond

// Progress is one line on a terminal that shows how far a command has
// come: redrawn in place at most every ProgressEvery, and cleared before
// anything else is written to the terminal. A nil *Progress shows
// nothing, so callers need not check.
type Progress struct {
	w     io.Writer
	now   func() time.Time
	next  time.Time // no redraw before then
	shown bool
}

// NewProgress returns a Progress line on w, or nil when w is nil.
func NewProgress(w io.Writer) *Progress {
	if w == nil {
		return nil
	}
	return &Progress{w: w, now: time.Now}
}

// Printf redraws the line with the formatted text, unless it was drawn
// less than ProgressEvery ago; the arguments are formatted only when it
// is drawn. Write errors are ignored: progress is a courtesy, and a
// failing terminal shows up when a real message is written.
func (p *Progress) Printf(format string, args ...any) {
	if p == nil {
		return
	}
	now := p.now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(ProgressEvery)
	_, _ = fmt.Fprintf(p.w, "\r"+format+"\x1b[K", args...)
	p.shown = true
}

// Clear erases the line, if one is shown; the next Printf draws at once.
func (p *Progress) Clear() {
	if p == nil || !p.shown {
		return
	}
	_, _ = io.WriteString(p.w, "\r\x1b[K")
	p.shown = false
	p.next = time.Time{}
}
