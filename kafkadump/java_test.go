package kafkadump

import (
	"encoding/hex"
	"slices"
	"testing"
)

// TestAppendJavaString checks the decoding against what OpenJDK 17 and 25
// print for new String(bytes, UTF_8): the expected bytes and hash codes
// below were produced by those JDKs. Go's strings.ToValidUTF8 would give
// one U+FFFD per run of bad bytes instead ("ffff" would be one, not two).
func TestAppendJavaString(t *testing.T) {
	tests := []struct {
		in, want string // hex
		hash     int32  // String.hashCode of the decoded string
	}{
		{"", "", 0},
		{"61", "61", 97},
		{"c3a9", "c3a9", 233},
		{"e282ac", "e282ac", 8364},
		{"f09f9880", "f09f9880", 1772899},
		{"80", "efbfbd", 65533},
		{"bf", "efbfbd", 65533},
		{"c0af", "efbfbdefbfbd", 2097056},
		{"c1bf", "efbfbdefbfbd", 2097056},
		{"c2", "efbfbd", 65533},
		{"c241", "efbfbd41", 2031588},
		{"e0", "efbfbd", 65533},
		{"e0a0", "efbfbd", 65533},
		{"e080", "efbfbdefbfbd", 2097056},
		{"e08080", "efbfbdefbfbdefbfbd", 65074269},
		{"e0a080", "e0a080", 2048},
		{"e28241", "efbfbd41", 2031588},
		{"e282", "efbfbd", 65533},
		{"ed9fbf", "ed9fbf", 55295},
		{"eda080", "efbfbd", 65533}, // a surrogate: one replacement, not three
		{"edbfbf", "efbfbd", 65533},
		{"eda0", "efbfbd", 65533},
		{"eda041", "efbfbd41", 2031588},
		{"efbfbd", "efbfbd", 65533},
		{"f0", "efbfbd", 65533},
		{"f090", "efbfbd", 65533},
		{"f09080", "efbfbd", 65533},
		{"f0808080", "efbfbdefbfbdefbfbdefbfbd", 2017367872},
		{"f08f", "efbfbdefbfbd", 2097056},
		{"f4908080", "efbfbdefbfbdefbfbdefbfbd", 2017367872},
		{"f48f", "efbfbd", 65533},
		{"f48fbfbf", "f48fbfbf", 1803232},
		{"f5808080", "efbfbdefbfbdefbfbdefbfbd", 2017367872},
		{"f8", "efbfbd", 65533},
		{"fe", "efbfbd", 65533},
		{"41ff42", "41efbfbd42", 2094054},
		{"ffff", "efbfbdefbfbd", 2097056},
		{"e28228ac", "efbfbd28efbfbd", 63043986},
		{"f09f98", "efbfbd", 65533},
		{"f09f9841", "efbfbd41", 2031588},
		{"6180e282ac62", "61efbfbde282ac62", 66126322},
	}
	for _, tt := range tests {
		in, _ := hex.DecodeString(tt.in)
		got := appendJavaString([]byte("x"), in)
		if h := hex.EncodeToString(got[1:]); h != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, h, tt.want)
		}
		if h := javaStringHash(string(got[1:])); h != tt.hash {
			t.Errorf("%s: hash %d, want %d", tt.in, h, tt.hash)
		}
	}
}

func TestJavaSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{""}},
		{"a.log", []string{"a.log"}},
		{"a,b", []string{"a", "b"}},
		{"a,,b,,", []string{"a", "", "b"}},
		{",a", []string{"", "a"}},
		{",", []string{}},
		{"a, b", []string{"a", " b"}},
	}
	for _, tt := range tests {
		if got := javaSplit(tt.in, ","); !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJavaFile(t *testing.T) {
	tests := []struct {
		in, path, name, abs string
	}{
		{"foo-0/00.log", "foo-0/00.log", "00.log", "/wd/foo-0/00.log"},
		{"foo-0//00.log/", "foo-0/00.log", "00.log", "/wd/foo-0/00.log"},
		{"./a/../00.log", "./a/../00.log", "00.log", "/wd/./a/../00.log"},
		{"/x//y.log", "/x/y.log", "y.log", "/x/y.log"},
		{"///", "/", "", "/"},
		{"00.log", "00.log", "00.log", "/wd/00.log"},
	}
	for _, tt := range tests {
		f := newJavaFile(tt.in)
		if f.String() != tt.path || f.Name() != tt.name || f.AbsolutePath("/wd") != tt.abs {
			t.Errorf("%q: got %q %q %q, want %q %q %q", tt.in, f, f.Name(), f.AbsolutePath("/wd"), tt.path, tt.name, tt.abs)
		}
	}
	if got := newJavaFile("a.log").AbsolutePath("/"); got != "/a.log" {
		t.Errorf("under /: %q", got)
	}
}

// TestScalaReportMapOrder checks the iteration order of Scala 2.13's
// mutable.HashMap: by bucket, then hash; the table doubles at the put that
// finds 11 keys in a 16-slot table.
func TestScalaReportMapOrder(t *testing.T) {
	// "a" hashes to 97 (bucket 1 of 16), "q" to 113 (bucket 1 of 16, 17
	// of 32), "b" to 98 (bucket 2); "Aa" and "BB" both hash to 2112
	// (bucket 0), so they keep their insertion order.
	m := newScalaReportMap()
	for _, k := range []string{"q", "BB", "b", "Aa", "a"} {
		m.put(k, 1, 3)
	}
	if got, want := keys(m), []string{"BB", "Aa", "a", "q", "b"}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	for _, k := range []string{"f1", "f2", "f3", "f4", "f5", "f6"} { // 11 keys now
		m.put(k, 1, 3)
	}
	if m.tableLen != 16 {
		t.Fatalf("table %d, want 16", m.tableLen)
	}
	m.put("a", 5, 7) // a key already present still grows the table
	if m.tableLen != 32 {
		t.Fatalf("table %d, want 32", m.tableLen)
	}
	got := slices.DeleteFunc(keys(m), func(k string) bool { return k[0] == 'f' })
	if want := []string{"BB", "Aa", "a", "b", "q"}; !slices.Equal(got, want) {
		t.Errorf("order after growth %q, want %q", got, want)
	}
	if got := pairsOf(t, &m.byPath["a"].pairs, false); !slices.Equal(got, [][2]int64{{1, 3}, {5, 7}}) {
		t.Errorf("pairs of a: %v", got)
	}
}

func keys(m *scalaReportMap) []string {
	var out []string
	for _, r := range m.ordered() {
		out = append(out, r.path)
	}
	return out
}

func pairsOf(t *testing.T, l *pairList, reverse bool) [][2]int64 {
	t.Helper()
	var out [][2]int64
	if err := l.each(reverse, func(a, b int64) { out = append(out, [2]int64{a, b}) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPairListSpill keeps a bounded number of pairs in memory and the
// rest in a temporary file, and gives them back in order either way.
func TestPairListSpill(t *testing.T) {
	defer func(n int) { reportPairsInMemory = n }(reportPairsInMemory)
	for _, inMemory := range []int{1, 3, 5000, 1 << 16} {
		reportPairsInMemory = inMemory
		var l pairList
		var want [][2]int64
		for i := range int64(9000) {
			l.add(i, -i)
			want = append(want, [2]int64{i, -i})
		}
		if l.len() != 9000 || len(l.tail) > inMemory {
			t.Errorf("%d in memory: len %d, %d kept in memory", inMemory, l.len(), len(l.tail))
		}
		if got := pairsOf(t, &l, false); !slices.Equal(got, want) {
			t.Errorf("%d in memory: forward order differs", inMemory)
		}
		slices.Reverse(want)
		if got := pairsOf(t, &l, true); !slices.Equal(got, want) {
			t.Errorf("%d in memory: reverse order differs", inMemory)
		}
		l.close()
		l.close()
	}
}
