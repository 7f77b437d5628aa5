// Package kafkaclients finds the real Kafka clients that are not Go
// modules (kcat, confluent-kafka-python, kafkajs) on this machine. The
// server's tests and the compatibility matrix (compat/) both drive them
// and find them here, with one message each that says how to install
// what is missing; .ci/run installs all three.
//
// Every finder answers an error wrapping ErrMissing when its client is
// not installed, so a caller can skip (a test) or report the cell as
// unavailable (the matrix). Results are computed once per process.
package kafkaclients

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrMissing is wrapped by every finder's error when its client is not
// installed.
var ErrMissing = errors.New("kafka client not installed")

// KafkajsVersion is the kafkajs that .ci/run installs with npm into
// .ci/node (the version of the protocol reference's client table).
const KafkajsVersion = "2.2.4"

// Kcat returns the path of kcat (librdkafka's command-line client).
var Kcat = sync.OnceValues(func() (string, error) {
	path, err := exec.LookPath("kcat")
	if err != nil {
		return "", fmt.Errorf("%w: no kcat (Debian package kcat)", ErrMissing)
	}
	return path, nil
})

// ConfluentPython returns a python3 that imports confluent_kafka:
// Debian's python3-confluent-kafka installs it for /usr/bin/python3, so
// that one is tried first.
var ConfluentPython = sync.OnceValues(func() (string, error) {
	var tried []string
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		tried = append(tried, path)
		if exec.Command(path, "-c", "import confluent_kafka").Run() == nil {
			return path, nil
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("%w: no python3", ErrMissing)
	}
	return "", fmt.Errorf("%w: no python3 imports confluent_kafka (tried %s; Debian package python3-confluent-kafka)", ErrMissing, strings.Join(tried, ", "))
})

// Kafkajs says where node is, the absolute path of the node_modules
// directory dir that holds kafkajs, and the version of that kafkajs.
func Kafkajs(dir string) (node, modules, version string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", "", fmt.Errorf("%w: no node", ErrMissing)
	}
	modules, err = filepath.Abs(dir)
	if err != nil {
		return "", "", "", err
	}
	b, err := os.ReadFile(filepath.Join(modules, "kafkajs", "package.json"))
	if err != nil {
		return "", "", "", fmt.Errorf("%w: no kafkajs in the node modules directory %s (npm install --prefix .ci/node kafkajs@%s; .ci/run does it)", ErrMissing, dir, KafkajsVersion)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Version == "" {
		return "", "", "", fmt.Errorf("kafkajs's package.json in %s names no version: %v", dir, err)
	}
	return node, modules, pkg.Version, nil
}
