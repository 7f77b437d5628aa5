package kafkaserver

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// repeatHandler keeps an error that repeats from flooding the log: a
// warning or error whose message and cause were logged less than every
// ago is counted instead of written, and the next one after that is
// written with "repeated" set to how many were counted since (it stands
// for them); flush writes the counts still held. So a full disk or a
// descriptor limit that fails every request logs one line per interval,
// with a count, never one per request. Records below Warn pass through.
//
// The cause is the error attribute's innermost part, the text after its
// last ": " (Go's wrapping puts the cause last): "open .../t-5/00….log:
// too many open files" and the same for t-6 are one cause.
type repeatHandler struct {
	inner slog.Handler
	state *repeatState
}

type repeatState struct {
	every time.Duration
	now   func() time.Time
	mu    sync.Mutex
	seen  map[string]*repeat
}

// repeat is one message and cause: when it was last written, and what
// has been held back since.
type repeat struct {
	written time.Time
	held    int
	last    slog.Record  // the newest held record
	h       slog.Handler // the handler it came through (its attrs, groups)
}

// maxRepeatKeys bounds the causes remembered; past it the table starts
// afresh (a flood of distinct causes is written, as it should be).
const maxRepeatKeys = 1024

func newRepeatHandler(inner slog.Handler, every time.Duration, now func() time.Time) *repeatHandler {
	return &repeatHandler{inner: inner, state: &repeatState{every: every, now: now, seen: map[string]*repeat{}}}
}

func (h *repeatHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *repeatHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &repeatHandler{inner: h.inner.WithAttrs(as), state: h.state}
}

func (h *repeatHandler) WithGroup(name string) slog.Handler {
	return &repeatHandler{inner: h.inner.WithGroup(name), state: h.state}
}

func (h *repeatHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.inner.Handle(ctx, r)
	}
	key := r.Message + "\x00" + recordCause(r)
	st := h.state
	now := st.now()
	st.mu.Lock()
	rep := st.seen[key]
	if rep != nil && now.Sub(rep.written) < st.every {
		rep.held++
		rep.last, rep.h = r.Clone(), h.inner
		st.mu.Unlock()
		return nil
	}
	held := 0
	if rep == nil {
		if len(st.seen) >= maxRepeatKeys {
			clear(st.seen)
		}
		rep = &repeat{}
		st.seen[key] = rep
	} else {
		held = rep.held
	}
	rep.written, rep.held, rep.last, rep.h = now, 0, slog.Record{}, nil
	st.mu.Unlock()
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held), slog.Duration("within", st.every))
	}
	return h.inner.Handle(ctx, r)
}

// flush writes, for every cause with records held back, the newest one
// with their count.
func (h *repeatHandler) flush() {
	st := h.state
	st.mu.Lock()
	var out []repeat
	for _, rep := range st.seen {
		if rep.held > 0 {
			out = append(out, *rep)
			rep.held, rep.last, rep.h = 0, slog.Record{}, nil
		}
	}
	st.mu.Unlock()
	for _, rep := range out {
		r := rep.last
		r.AddAttrs(slog.Int("repeated", rep.held), slog.Duration("within", st.every))
		_ = rep.h.Handle(context.Background(), r)
	}
}

// recordCause is the innermost part of r's "err" or "reason" attribute,
// or "" without one.
func recordCause(r slog.Record) string {
	cause := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "err" && a.Key != "reason" {
			return true
		}
		s := a.Value.String()
		if i := strings.LastIndex(s, ": "); i >= 0 {
			s = s[i+2:]
		}
		cause = s
		return false
	})
	return cause
}
