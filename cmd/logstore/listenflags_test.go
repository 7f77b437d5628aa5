package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseListeners(t *testing.T) {
	got, err := parseListeners(
		[]string{"PLAINTEXT://127.0.0.1:9092", "ssl://:9093", "internal://10.0.0.1:9094"},
		[]string{"SSL://broker.example.com:9093"},
		"INTERNAL:SSL")
	if err != nil {
		t.Fatal(err)
	}
	want := []listenerSpec{
		{name: "PLAINTEXT", protocol: protoPlaintext, addr: "127.0.0.1:9092"},
		{name: "SSL", protocol: protoSSL, addr: ":9093", advertise: "broker.example.com:9093"},
		{name: "INTERNAL", protocol: protoSSL, addr: "10.0.0.1:9094"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	for _, tc := range []struct {
		listeners, advertised []string
		protocolMap, want     string
	}{
		{[]string{"127.0.0.1:9092"}, nil, "", "want NAME://HOST:PORT"},
		{[]string{"PLAINTEXT://127.0.0.1"}, nil, "", "missing port"},
		{[]string{"CLIENT://127.0.0.1:9092"}, nil, "", "no security protocol for listener name CLIENT"},
		{[]string{"PLAINTEXT://127.0.0.1:9092", "plaintext://127.0.0.1:9093"}, nil, "", "given twice"},
		{[]string{"PLAINTEXT://127.0.0.1:9092", "SSL://127.0.0.1:9092"}, nil, "", "port 9092 is listener PLAINTEXT's too"},
		{[]string{"PLAINTEXT://127.0.0.1:9092"}, []string{"SSL://h:1"}, "", "no --listener is named SSL"},
		{[]string{"PLAINTEXT://127.0.0.1:9092"}, []string{"PLAINTEXT://h:1", "PLAINTEXT://h:2"}, "", "advertised twice"},
		{[]string{"A://127.0.0.1:9092"}, nil, "A:TLS", "want NAME:PROTOCOL pairs"},
		{[]string{"A://127.0.0.1:9092"}, nil, "A", "want NAME:PROTOCOL pairs"},
	} {
		_, err := parseListeners(tc.listeners, tc.advertised, tc.protocolMap)
		if !errors.Is(err, errListenerFlag) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v %q: error %v, want one with %q", tc.listeners, tc.advertised, tc.protocolMap, err, tc.want)
		}
	}
	// Two listeners may both take a port of the system's choosing.
	if _, err := parseListeners([]string{"PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"}, nil, ""); err != nil {
		t.Error(err)
	}
}
