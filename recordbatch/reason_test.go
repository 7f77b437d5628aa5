package recordbatch_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

// TestCorruptionReason: Reason is the check and its detail, without the
// package prefix and the position that Error has, and the error text is
// as before: the sentinel's, the detail, the position.
func TestCorruptionReason(t *testing.T) {
	good := sampleBatch(t)
	for _, tc := range []struct {
		name     string
		data     []byte
		validate func(recordbatch.Batch) error
		sentinel error
		reason   string
		text     string
	}{
		{"crc", mutate(good, false, func(b []byte) { b[len(b)-1] ^= 1 }), recordbatch.Batch.Validate, recordbatch.ErrCRC,
			"crc mismatch: Record is corrupt (stored crc = ",
			"logstore/recordbatch: crc mismatch: Record is corrupt (stored crc = "},
		{"control", mutate(good, true, func(b []byte) { b[22] |= 0x20 }), recordbatch.Batch.ValidateClient, recordbatch.ErrControl,
			"invalid control batch: a producer may not send control batches",
			"logstore/recordbatch: invalid control batch: a producer may not send control batches at batch byte 21"},
		{"truncated", good[:30], nil, recordbatch.ErrTruncated,
			"batch truncated: batch of 83 bytes, only 30 present",
			"logstore/recordbatch: batch truncated: batch of 83 bytes, only 30 present at batch byte 30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := recordbatch.Parse(tc.data, 0)
			if err == nil && tc.validate != nil {
				err = tc.validate(b)
			}
			var ce *recordbatch.CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, tc.sentinel) {
				t.Fatalf("%v, want a *CorruptionError matching %v", err, tc.sentinel)
			}
			if got := ce.Reason(); !strings.HasPrefix(got, tc.reason) || strings.Contains(got, "logstore") || strings.Contains(got, " at batch byte") {
				t.Errorf("reason %q, want %q and no prefix or position", got, tc.reason)
			}
			if got := err.Error(); !strings.HasPrefix(got, tc.text) {
				t.Errorf("error %q, want %q", got, tc.text)
			}
		})
	}
	// A CorruptionError made by hand around any error: its text.
	ce := &recordbatch.CorruptionError{Section: "batch", Err: errors.New("odd")}
	if got := ce.Reason(); got != "odd" {
		t.Errorf("reason %q, want odd", got)
	}
}

// TestSentinelsHaveCheckNames: every sentinel a *CorruptionError wraps is
// made by check, so Reason can name it without the package prefix. A
// sentinel made by errors.New would put "logstore/recordbatch: " in the
// reasons that reach a producer.
func TestSentinelsHaveCheckNames(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "New" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "errors" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				return true
			}
			text, _ := strconv.Unquote(lit.Value)
			switch text {
			case recordbatch.ErrCorrupt.Error(), recordbatch.ErrBuild.Error():
				// Matched, or returned alone: never a check's sentinel.
			default:
				if strings.HasPrefix(text, "logstore/recordbatch: ") {
					t.Errorf("%s: errors.New(%q): make a check's sentinel with check(name)", fset.Position(lit.Pos()), text)
				}
			}
			return true
		})
	}
}
