package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is what COMPATIBILITY.md says.
type report struct {
	Date     time.Time
	Took     time.Duration
	Commit   string // logstore's commit (git rev-parse HEAD), "+ changes" when the tree is dirty
	Go       string // "" is runtime.Version()
	Platform string // "" is GOOS/GOARCH
	Clients  []ClientInfo
	Outcomes []outcome
	Partial  bool // -only selected the cells
}

// javaRow is the clients table's row for Java's clients.
var javaRow = ClientInfo{
	Name:    "Java (Apache kafka-clients, and what builds on it: Kafka Streams, Connect, MirrorMaker 2)",
	Version: "not installed",
	Source:  "Maven Central, which is not reachable from this machine",
	Note:    "not measured: no cell runs them, and nothing here claims they work or fail",
}

// tableDetail is how much of a failure's detail a table cell shows; the
// details section has all of it.
const tableDetail = 100

// gitCommit is the checkout's commit, or "unknown".
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += " + uncommitted changes"
	}
	return c
}

// cellText is a cell of a client's table: "pass", "FAIL: detail",
// "n/a: reason" or "not installed".
func cellText(o outcome) string {
	switch o.Status {
	case Pass:
		return "pass"
	case Unavailable:
		return "not installed"
	}
	d, _, _ := strings.Cut(o.Detail, "\n")
	if r := []rune(d); len(r) > tableDetail {
		d = string(r[:tableDetail]) + "…"
	}
	return o.Status.String() + ": " + escapeCell(d)
}

// escapeCell keeps a text inside one Markdown table cell.
func escapeCell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

func (r *report) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	goVersion, platform := r.Go, r.Platform
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	if platform == "" {
		platform = runtime.GOOS + "/" + runtime.GOARCH
	}
	counts := map[Status]int{}
	for _, o := range r.Outcomes {
		counts[o.Status]++
	}

	p("# Compatibility of `logstore serve` with Kafka clients\n\n")
	p("Written by `compat/run` (the program in `compat/`; its package doc says what each feature checks). ")
	p("Every cell ran against a fresh `logstore serve` (`--sync always`; %d KiB segments, %d bytes for the cells of the Go clients, whose batches are small, so that segments roll) behind a fault-injecting proxy, one cell at a time; the clients of the %s cells dial the server's SASL_SSL listener directly (the proxy cannot carry TLS).\n\n", defaultSegmentBytes>>10, smallSegmentBytes, FeatureSASLSSL)
	p("- date: %s\n", r.Date.UTC().Format("2006-01-02 15:04 MST"))
	p("- logstore: %s\n", r.Commit)
	p("- Go: %s, %s\n", goVersion, platform)
	p("- cells: %d (%d pass, %d FAIL, %d n/a, %d not installed) in %.0f s\n",
		len(r.Outcomes), counts[Pass], counts[Fail], counts[NotSupported], counts[Unavailable], r.Took.Seconds())
	if r.Partial {
		p("- a partial run: `-only` selected the cells\n")
	}
	p("\n## Clients\n\n")
	p("| client | version | installed from | note |\n|---|---|---|---|\n")
	for _, c := range append(slices.Clip(r.Clients), javaRow) {
		p("| %s | %s | %s | %s |\n", escapeCell(c.Name), escapeCell(c.Version), escapeCell(c.Source), escapeCell(c.Note))
	}

	// One table per client, in the order their cells ran.
	var clients []string
	byClient := map[string][]outcome{}
	for _, o := range r.Outcomes {
		if _, ok := byClient[o.Client]; !ok {
			clients = append(clients, o.Client)
		}
		byClient[o.Client] = append(byClient[o.Client], o)
	}
	for _, client := range clients {
		var outs []outcome
		for _, o := range byClient[client] {
			if !isAdmin(o.Feature) {
				outs = append(outs, o)
			}
		}
		if len(outs) == 0 {
			continue
		}
		var versions []string
		cells := map[[2]string]outcome{}
		for _, o := range outs {
			if !slices.Contains(versions, o.Version) {
				versions = append(versions, o.Version)
			}
			cells[[2]string{o.Version, o.Feature}] = o
		}
		cols := slices.Clone(features)
		for _, o := range outs {
			if !slices.Contains(cols, o.Feature) {
				cols = append(cols, o.Feature)
			}
		}
		p("\n## %s\n\n| version |", client)
		for _, f := range cols {
			p(" %s |", f)
		}
		p("\n|---|%s\n", strings.Repeat("---|", len(cols)))
		for _, v := range versions {
			p("| %s |", v)
			for _, f := range cols {
				if o, ok := cells[[2]string{v, f}]; ok {
					p(" %s |", cellText(o))
				} else {
					p(" not run |")
				}
			}
			p("\n")
		}
	}

	r.writeAdmin(p)

	p("\n## Details\n\nWhat each cell measured, and how long it took; \"requests\" is the highest version of each request the client under test sent, as the proxy saw it (by its client id).\n")
	for _, client := range clients {
		p("\n### %s\n\n", client)
		for _, o := range byClient[client] {
			detail, rest, multi := strings.Cut(o.Detail, "\n")
			p("- %s, %s: **%s** (%.1f s) %s\n", o.Version, o.Feature, o.Status, o.Took.Seconds(), detail)
			if o.Wire != "" {
				p("  - requests: %s\n", o.Wire)
			}
			if multi {
				p("\n  ```\n")
				for _, l := range strings.Split(strings.TrimRight(rest, "\n"), "\n") {
					p("  %s\n", l)
				}
				p("  ```\n")
			}
		}
	}
	return bw.Flush()
}

// writeAdmin writes the admin table: one row per client and version
// that has admin cells, a column per admin feature.
func (r *report) writeAdmin(p func(string, ...any)) {
	type row struct{ client, version string }
	var rows []row
	cells := map[row]map[string]outcome{}
	for _, o := range r.Outcomes {
		if !isAdmin(o.Feature) {
			continue
		}
		k := row{o.Client, o.Version}
		if cells[k] == nil {
			rows = append(rows, k)
			cells[k] = map[string]outcome{}
		}
		cells[k][o.Feature] = o
	}
	if len(rows) == 0 {
		return
	}
	p("\n## Admin\n\nEach client's admin calls (its admin client: kadm, sarama's ClusterAdmin, AdminClient, KafkaAdminClient, kafkajs's admin, kafka-go's Client), each checked with kgo afterwards.\n\n| client | version |")
	for _, f := range adminFeatures {
		p(" %s |", f)
	}
	p("\n|---|---|%s\n", strings.Repeat("---|", len(adminFeatures)))
	for _, k := range rows {
		p("| %s | %s |", escapeCell(k.client), k.version)
		for _, f := range adminFeatures {
			if o, ok := cells[k][f]; ok {
				p(" %s |", cellText(o))
			} else {
				p(" not run |")
			}
		}
		p("\n")
	}
}
