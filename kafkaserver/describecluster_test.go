package kafkaserver

import (
	"context"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestDescribeCluster: this broker at the address dialled, the
// controller, the catalog's cluster id; authorized operations INT32_MIN
// unless asked, then every cluster operation (no authorizer); v1's
// controller endpoint type is 114, an unknown one 115. kgo (at its
// newest version) and kadm's BrokerMetadata agree with it.
func TestDescribeCluster(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	_, portStr, _ := net.SplitHostPort(ts.addr)
	port, _ := strconv.Atoi(portStr)
	cluster := ts.srv.cat.ClusterID()
	if cluster == "" {
		t.Fatal("no cluster id")
	}
	for v := int16(0); v <= 1; v++ {
		for _, ops := range []bool{false, true} {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.Version = v
			r.IncludeClusterAuthorizedOperations = ops
			resp := c.do(r).(*kmsg.DescribeClusterResponse)
			if resp.ErrorCode != 0 || resp.ClusterID != cluster || resp.ControllerID != 0 || len(resp.Brokers) != 1 {
				t.Fatalf("v%d: %+v", v, resp)
			}
			b := resp.Brokers[0]
			if b.NodeID != 0 || b.Host != "127.0.0.1" || b.Port != int32(port) || b.Rack != nil {
				t.Fatalf("v%d broker %+v, want 127.0.0.1:%d", v, b, port)
			}
			want := int32(math.MinInt32)
			if ops {
				want = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
			}
			if resp.ClusterAuthorizedOperations != want {
				t.Fatalf("v%d ops %v: authorized operations %d, want %d", v, ops, resp.ClusterAuthorizedOperations, want)
			}
			if v >= 1 && resp.EndpointType != 1 {
				t.Fatalf("v1: endpoint type %d", resp.EndpointType)
			}
		}
	}
	for typ, want := range map[int8]int16{2: kerr.MismatchedEndpointType.Code, 0: kerr.UnsupportedEndpointType.Code, 3: kerr.UnsupportedEndpointType.Code} {
		r := kmsg.NewPtrDescribeClusterRequest()
		r.Version, r.EndpointType = 1, typ
		resp := c.do(r).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != want || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
			t.Fatalf("endpoint type %d: %+v, want code %d", typ, resp, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	kresp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if kresp.Version != 1 || kresp.ClusterID != cluster || len(kresp.Brokers) != 1 || kresp.Brokers[0].Port != int32(port) {
		t.Fatalf("kgo: %+v", kresp)
	}
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Cluster != cluster || md.Controller != 0 || len(md.Brokers) != 1 || md.Brokers[0].Port != int32(port) {
		t.Fatalf("kadm BrokerMetadata: %+v", md)
	}
}
