package testutil

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
)

// ServeFiles listens on a loopback port until the test ends and writes
// the files at paths, one after the other, to every connection it
// accepts (io.Copy from a file: sendfile), then closes the connection.
// The outcome of each connection arrives on the returned channel, which
// holds one.
func ServeFiles(tb testing.TB, paths []string) (addr string, sent <-chan error) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	out := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			err = sendFiles(c, paths)
			out <- errors.Join(err, c.Close())
		}
	}()
	return ln.Addr().String(), out
}

// sendFiles writes the files to c, one after the other.
func sendFiles(c net.Conn, paths []string) error {
	for _, path := range paths {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(c, file)
		file.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadAll reads c to its end into buf, over and over, and returns the
// bytes read.
func ReadAll(c net.Conn, buf []byte) (int64, error) {
	var n int64
	for {
		m, err := c.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
