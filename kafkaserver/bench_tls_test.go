package kafkaserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/internal/tlsconf"
)

// serveTLS adds a TLS listener of lc (a certificate of a CA made for the
// test) to ts's server and returns its address, the client side's
// configuration, which trusts that CA, and the CA's PEM file.
func serveTLS(t testing.TB, ts *testServer, lc ListenerConfig) (string, *tls.Config, string) {
	t.Helper()
	ca := testutil.NewCA(t, "bench-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	srvTLS, err := tlsconf.Load(tlsconf.Files{CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.srv.ServeListener(NewTLSListener(ln, srvTLS.Config()), lc)
	pem, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, ca.File
}

// reportCPUPerMiB starts counting the process's CPU time; the func it
// returns stops and reports it per MiB of bytes, as cpu-us/MiB.
func reportCPUPerMiB(b *testing.B, bytes int64) func() {
	cpu0, ok0 := processCPU()
	return func() {
		b.StopTimer()
		if cpu1, ok1 := processCPU(); ok0 && ok1 {
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/(float64(bytes)/(1<<20)), "cpu-us/MiB")
		}
	}
}

// BenchmarkTLS: kgo producing (idempotent, acks=all, 16 KiB records one
// per batch, sync never: the wire and the server, not the disk) and
// consuming (64 MiB of 16 KiB batches from the start) over plaintext
// and over TLS (Go's crypto/tls on both sides, TLS 1.3 with AES-GCM:
// what this machine's CPU accelerates) to the same server in the same
// run, so that their MB/s compare. cpu-us/MiB is the process's CPU
// time (client and server, user and system) per MiB, steadier than
// MB/s where both share two cores.
func BenchmarkTLS(b *testing.B) {
	ts, p, batch := zeroBatchPartition(b, "bench")
	tlsAddr, clientTLS, _ := serveTLS(b, ts, ListenerConfig{})
	ts.createTopic("produced", 1)
	n := 0
	for n < 64<<20 {
		if _, err := p.Append(append([]byte(nil), batch...)); err != nil {
			b.Fatal(err)
		}
		n += len(batch)
	}
	records := int64(n / len(batch) * zeroBatchRecords)
	for _, lis := range []struct {
		name string
		addr string
		opts []kgo.Opt
	}{
		{"plaintext", ts.addr, nil},
		{"tls", tlsAddr, []kgo.Opt{kgo.DialTLSConfig(clientTLS)}},
	} {
		b.Run("produce/"+lis.name, func(b *testing.B) {
			cl, err := kgo.NewClient(append(lis.opts, kgo.SeedBrokers(lis.addr), kgo.DefaultProduceTopic("produced"),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(16<<10+512),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			value := make([]byte, 16<<10)
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPUPerMiB(b, int64(b.N)*int64(len(value)))()
			for range b.N {
				cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						b.Error(err)
					}
				})
			}
			if err := cl.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
		b.Run("consume/"+lis.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPUPerMiB(b, int64(b.N)*int64(n))()
			for range b.N {
				cl, err := kgo.NewClient(append(lis.opts, kgo.SeedBrokers(lis.addr),
					kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": {0: kgo.NewOffset().AtStart()}}))...)
				if err != nil {
					b.Fatal(err)
				}
				var got int64
				for got < records {
					fs := cl.PollFetches(context.Background())
					fs.EachError(func(_ string, _ int32, err error) { b.Fatal(err) })
					got += int64(fs.NumRecords())
				}
				cl.Close()
			}
		})
	}
}
