package cliout

import (
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

// TestAppendRecordText: when a field of read's line is printed bare, and
// how it is quoted.
func TestAppendRecordText(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{nil, "null"},
		{[]byte{}, `""`},
		{[]byte("null"), `"null"`},
		{[]byte("plain"), "plain"},
		{[]byte("héllo"), "héllo"},
		{[]byte(`{"a":1}`), `{"a":1}`},
		{[]byte(`"x`), `"\"x"`},
		{[]byte("a b"), `"a b"`},
		{[]byte("a=b"), `"a=b"`},
		{[]byte("[x]"), `"[x]"`},
		{[]byte("x,y"), `"x,y"`},
		{[]byte{0xff, 'a'}, `"\xffa"`},
		{[]byte("\u00a0"), `"\u00a0"`},
	} {
		rec := recordbatch.Record{Offset: 3, Timestamp: 7, Value: c.in}
		if got, want := string(AppendRecordText(nil, &rec, recordbatch.CreateTime)), "offset=3 CreateTime=7 key=null value="+c.want+" headers=[]"; got != want {
			t.Errorf("%q: got %s, want %s", c.in, got, want)
		}
	}
}
