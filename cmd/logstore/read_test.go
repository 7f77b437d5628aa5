package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readFixture is a store whose partition events-0 holds records with
// null, empty and binary keys, values and headers, a gzip batch and a
// transactional one (offsets 0 to 11).
func readFixture(t *testing.T) string {
	t.Helper()
	lines := []string{
		`{"records":[{"key":"user-7","value":"hello","headers":[{"key":"source","value":"web"},{"key":"trace","value":null}],"timestamp":4102444800000}]}`,
		`{"records":[{"value":null,"timestamp":4102444800001},{"key":"","value":"","timestamp":4102444800002}]}`,
		`{"records":[{"key":"null","value":"two words","timestamp":4102444800003},{"value":"a,b=c","headers":[{"key":"","value":""}],"timestamp":4102444800004}]}`,
		`{"records":[{"keyBase64":"/w==","valueBase64":"AP8Q","headers":[{"key":"bin","valueBase64":"gA=="}],"timestamp":4102444800005}]}`,
		`{"compression":"gzip","records":[{"value":"zipped-1","timestamp":4102444800006},{"value":"zipped-2","timestamp":4102444800007}]}`,
		`{"producerId":9,"producerEpoch":0,"baseSequence":0,"transactional":true,"records":[{"value":"in a transaction","timestamp":4102444800008}]}`,
		`{"records":[{"value":"ünïcödé ✓","timestamp":4102444800009},{"value":"tab\there\nnewline \"quoted\"","timestamp":4102444800010},{"value":"{\"total\":12}","timestamp":-1}]}`,
	}
	input := filepath.Join(t.TempDir(), "records.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, errOut, code := inspectRun(t, "append", "--dir", dir, "--input", input); code != exitOK {
		t.Fatalf("append: exit %d\n%s%s", code, out, errOut)
	}
	return dir
}

func TestReadRecords(t *testing.T) {
	dir := readFixture(t)
	out, code := inspectGolden(t, "read-records", dir, "read", "--dir", dir)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := map[int]string{
		0:  "offset=0 CreateTime=4102444800000 key=user-7 value=hello headers=[source=web,trace=null]",
		1:  "offset=1 CreateTime=4102444800001 key=null value=null headers=[]",
		2:  `offset=2 CreateTime=4102444800002 key="" value="" headers=[]`,
		3:  `offset=3 CreateTime=4102444800003 key="null" value="two words" headers=[]`,
		4:  `offset=4 CreateTime=4102444800004 key=null value="a,b=c" headers=[""=""]`,
		5:  `offset=5 CreateTime=4102444800005 key="\xff" value="\x00\xff\x10" headers=[bin="\x80"]`,
		6:  "offset=6 CreateTime=4102444800006 key=null value=zipped-1 headers=[]",
		8:  "offset=8 CreateTime=4102444800008 key=null value=\"in a transaction\" headers=[]",
		9:  `offset=9 CreateTime=4102444800009 key=null value="ünïcödé ✓" headers=[]`,
		10: `offset=10 CreateTime=4102444800010 key=null value="tab\there\nnewline \"quoted\"" headers=[]`,
		11: `offset=11 CreateTime=-1 key=null value={"total":12} headers=[]`,
	}
	if code != exitOK || len(got) != 12 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], w)
		}
	}

	out, code = inspectGolden(t, "read-records-json", dir, "read", "--dir", dir, "--json")
	got = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(got) != 12 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, l := range got {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %s", l)
		}
	}
	for i, w := range map[int]string{
		0:  `{"offset":0,"timestampType":"CreateTime","timestamp":4102444800000,"key":"user-7","value":"hello","headers":[{"key":"source","value":"web"},{"key":"trace","value":null}]}`,
		1:  `{"offset":1,"timestampType":"CreateTime","timestamp":4102444800001,"key":null,"value":null,"headers":[]}`,
		5:  `{"offset":5,"timestampType":"CreateTime","timestamp":4102444800005,"keyBase64":"/w==","valueBase64":"AP8Q","headers":[{"key":"bin","valueBase64":"gA=="}]}`,
		10: `{"offset":10,"timestampType":"CreateTime","timestamp":4102444800010,"key":null,"value":"tab\there\nnewline \"quoted\"","headers":[]}`,
	} {
		if got[i] != w {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], w)
		}
	}

	// From inside a batch, and a number of records that ends inside one.
	out, code = inspectGolden(t, "read-offset-max-records", dir, "read", "--dir", dir, "--offset", "4", "--max-records", "3")
	if code != exitOK || !strings.HasPrefix(out, "offset=4 ") || strings.Count(out, "\n") != 3 || !strings.Contains(out, "offset=6 ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// At the log end: nothing.
	if out, errOut, code := inspectRun(t, "read", "--dir", dir, "--offset", "12"); code != exitOK || out != "" || errOut != "" {
		t.Fatalf("at the end: exit %d %q %q", code, out, errOut)
	}
}

// TestReadJSONRoundTrip: what read --json prints decodes to the bytes
// that were appended, binary included.
func TestReadJSONRoundTrip(t *testing.T) {
	dir := readFixture(t)
	out, _, code := inspectRun(t, "read", "--dir", dir, "--json", "--offset", "5", "--max-records", "1")
	var rec struct {
		KeyBase64   string `json:"keyBase64"`
		ValueBase64 string `json:"valueBase64"`
		Headers     []struct {
			Key         string `json:"key"`
			ValueBase64 string `json:"valueBase64"`
		} `json:"headers"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &rec) != nil || rec.KeyBase64 != "/w==" || rec.ValueBase64 != "AP8Q" ||
		len(rec.Headers) != 1 || rec.Headers[0].ValueBase64 != "gA==" {
		t.Fatalf("exit %d: %s -> %+v", code, out, rec)
	}
}

// TestReadKafkaDirectory: a log Kafka wrote, with compressed and
// LogAppendTime batches, transaction markers (not printed) and an offset
// gap.
func TestReadKafkaDirectory(t *testing.T) {
	dir := copyKafkaFixtures(t, "foo-0")
	out, code := inspectGolden(t, "read-kafka", dir, "read", "--dir", dir, "--topic", "foo")
	for _, want := range []string{
		"offset=15 LogAppendTime=1700000000100 ",
		`headers=[h1=x,h2=null]`,
		"\noffset=20 ",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("exit %d:\n%s\nwant %q", code, out, want)
		}
	}
	if strings.Contains(out, "offset=10 ") || strings.Contains(out, "offset=16 ") {
		t.Fatalf("markers printed:\n%s", out)
	}
}

func TestReadBadInput(t *testing.T) {
	partitionBadInput(t, "read")
	dir := readFixture(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--offset", "13"}, "logstore read: --offset 13 is outside partition events-0, which holds offsets 0 to 11\n"},
		{[]string{"--offset", "-1"}, "logstore read: --offset -1 is outside partition events-0, which holds offsets 0 to 11\n"},
		{[]string{"--max-records", "-1"}, "logstore read: --max-records -1: must be 0 (no limit) or more\n"},
	} {
		args := append([]string{"read", "--dir", dir}, c.args...)
		out, errOut, code := inspectRun(t, args...)
		if code != exitError || out != "" || errOut != c.want {
			t.Errorf("logstore %s: exit %d, stdout %q, stderr %q; want 1 and %q", strings.Join(args, " "), code, out, errOut, c.want)
		}
	}
}

// TestReadJSONAppendRoundTrip: what read --json prints, appended again
// as it is (each line a record), gives a partition that reads the same:
// binary, null and empty fields, headers, and the records of a
// compressed and a transactional batch.
func TestReadJSONAppendRoundTrip(t *testing.T) {
	dir := readFixture(t)
	out, errOut, code := inspectRun(t, "read", "--dir", dir, "--json")
	if code != exitOK {
		t.Fatalf("read: exit %d\n%s", code, errOut)
	}
	input := writeFile(t, "read.jsonl", out)
	copyDir := t.TempDir()
	if got, errOut, code := inspectRun(t, "append", "--dir", copyDir, "--input", input); code != exitOK || strings.Count(got, "OK ") != 12 {
		t.Fatalf("append: exit %d\n%s%s", code, got, errOut)
	}
	again, _, code := inspectRun(t, "read", "--dir", copyDir, "--json")
	if code != exitOK || again != out {
		t.Fatalf("exit %d; read again:\n%s\nfirst:\n%s", code, again, out)
	}
}
