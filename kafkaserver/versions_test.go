package kafkaserver

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestEveryAdvertisedVersion sends a well-formed request of every API at
// every version ApiVersions advertises, encoded by kmsg at that version,
// and checks that the answer decodes at it and says what the API table
// promises (Produce v0-2 close the connection instead). The real clients
// of the other tests each use one version per API (kgo capped at Kafka
// 2.1, 2.8, 3.9 and its newest in the e2e tests; kcat's librdkafka); this
// sweep covers the versions in between.
func TestEveryAdvertisedVersion(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{AuthFailureDelay: time.Millisecond})
	ts.createTopic("t", 1)
	c := ts.dial()
	str := func(s string) *string { return &s }
	// The SASL APIs are sent on connections of a SASL listener of the
	// same server, one each: a handshake ends its connection's choices.
	saslLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.srv.ServeListener(saslLn, ListenerConfig{SASL: true})
	saslDo := func(t *testing.T, v int16, req kmsg.Request) kmsg.Response {
		sc := rawDial(t, saslLn.Addr().String())
		if req.Key() == saslAuthenticateKey {
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 1, "PLAIN"
			if resp := sc.do(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
				t.Fatalf("handshake: error %d", resp.ErrorCode)
			}
		}
		req.SetVersion(v)
		resp := sc.do(req)
		if resp.GetVersion() != v {
			t.Fatalf("answered at v%d", resp.GetVersion())
		}
		return resp
	}
	for _, a := range apis {
		for v := a.min; v <= a.max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", a.name, v), func(t *testing.T) {
				c.t = t
				var req kmsg.Request
				var code func(kmsg.Response) int16
				want := int16(0)
				switch a.key {
				case saslHandshakeKey:
					r := kmsg.NewPtrSASLHandshakeRequest()
					r.Mechanism = "PLAIN"
					if resp := saslDo(t, v, r).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 || len(resp.SupportedMechanisms) != 3 {
						t.Fatalf("error %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
					}
					return
				case saslAuthenticateKey:
					// No users: PLAIN's token is refused, with 58.
					r := kmsg.NewPtrSASLAuthenticateRequest()
					r.SASLAuthBytes = []byte("\x00alice\x00pencil")
					if resp := saslDo(t, v, r).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil {
						t.Fatalf("error %d, message %v; want 58 with a message", resp.ErrorCode, resp.ErrorMessage)
					}
					return
				case 50:
					// Not a super user: refused as a whole.
					req = kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
					want = kerr.ClusterAuthorizationFailed.Code
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode }
				case 51:
					r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
					d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
					d.Name, d.Mechanism = "alice", 1
					r.Deletions = append(r.Deletions, d)
					req = r
					want = kerr.ClusterAuthorizationFailed.Code
					code = func(resp kmsg.Response) int16 {
						return resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode
					}
				case 29:
					// No authorizer: 54, as Kafka without one.
					r := kmsg.NewPtrDescribeACLsRequest()
					r.ResourceType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
					req, want = r, kerr.SecurityDisabled.Code
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.DescribeACLsResponse).ErrorCode }
				case 30:
					r := kmsg.NewPtrCreateACLsRequest()
					c := kmsg.NewCreateACLsRequestCreation()
					c.ResourceType, c.ResourceName, c.Principal, c.Host = kmsg.ACLResourceTypeTopic, "t", "User:a", "*"
					c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
					r.Creations = append(r.Creations, c)
					req, want = r, kerr.SecurityDisabled.Code
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }
				case 31:
					r := kmsg.NewPtrDeleteACLsRequest()
					f := kmsg.NewDeleteACLsRequestFilter()
					f.ResourceType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
					r.Filters = append(r.Filters, f)
					req, want = r, kerr.SecurityDisabled.Code
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }
				case 0:
					if v < 3 {
						old := ts.dial()
						old.t = t
						old.send(produceReq(v, -1, "t", 0, batchOf(-1, 0, 0, "x")))
						old.expectClosed()
						return
					}
					req, code = produceReq(v, -1, "t", 0, batchOf(-1, 0, 0, "x")), partitionCode
				case 1:
					req, code = fetchReq(v, "t", 0, 0, 0, 0), partitionCode
				case 2:
					r := listOffsetsReq("t", 0, -1)
					r.Version = v
					req, code = r, partitionCode
				case 3:
					r := kmsg.NewPtrMetadataRequest()
					mt := kmsg.NewMetadataRequestTopic()
					mt.Topic = str("t")
					r.Topics = append(r.Topics, mt)
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode }
				case 10:
					r := kmsg.NewPtrFindCoordinatorRequest()
					r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g"}
					req = r
					if v >= 1 {
						// A transactional id (key type 1, v1+) finds
						// this node, as a group does.
						r.CoordinatorType = coordinatorTransaction
					}
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.FindCoordinatorResponse)
						if v >= 4 {
							return r.Coordinators[0].ErrorCode
						}
						return r.ErrorCode
					}
				case apiVersionsKey:
					r := kmsg.NewPtrApiVersionsRequest()
					r.ClientSoftwareName, r.ClientSoftwareVersion = "logstore-test", "1"
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.ApiVersionsResponse).ErrorCode }
				case 19:
					r := kmsg.NewPtrCreateTopicsRequest()
					ct := kmsg.NewCreateTopicsRequestTopic()
					ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("c%d", v), 1, 1
					r.Topics = append(r.Topics, ct)
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }
				case 20:
					ts.createTopic(fmt.Sprintf("d%d", v), 1)
					r := kmsg.NewPtrDeleteTopicsRequest()
					r.TopicNames = []string{fmt.Sprintf("d%d", v)}
					dt := kmsg.NewDeleteTopicsRequestTopic()
					dt.Topic = str(fmt.Sprintf("d%d", v))
					r.Topics = append(r.Topics, dt)
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }
				case 22:
					r := kmsg.NewPtrInitProducerIDRequest()
					r.TransactionTimeoutMillis = 60000
					if v%2 == 1 {
						// Odd versions with a transactional id, even
						// ones without.
						r.TransactionalID = str(fmt.Sprintf("init-v%d", v))
					}
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.InitProducerIDResponse).ErrorCode }
				case 8, 9, 11, 12, 13, 14, 15, 16, 42, 47:
					req, code, want = groupVersionReq(a.key, v)
				case 25, 28:
					req, code = txnOffsetsVersionReq(t, c, a.key, v)
				case 24:
					// A transaction of its own per version: InitProducerId
					// (at its newest version), then the partition added.
					id := fmt.Sprintf("add-v%d", v)
					pid, epoch := initTxn(t, c, 4, id)
					r := kmsg.NewPtrAddPartitionsToTxnRequest()
					r.TransactionalID, r.ProducerID, r.ProducerEpoch = id, pid, epoch
					at := kmsg.NewAddPartitionsToTxnRequestTopic()
					at.Topic, at.Partitions = "t", []int32{0}
					r.Topics = append(r.Topics, at)
					req = r
					code = func(resp kmsg.Response) int16 {
						return resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
					}
				case 26:
					// A transaction with a partition added, committed.
					id := fmt.Sprintf("end-v%d", v)
					pid, epoch := initTxn(t, c, 4, id)
					if got := addPartitions(t, c, 3, id, pid, epoch, "t", 0); got["t"][0] != 0 {
						t.Fatalf("AddPartitionsToTxn: %v", got)
					}
					r := kmsg.NewPtrEndTxnRequest()
					r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, pid, epoch, true
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.EndTxnResponse).ErrorCode }
				case 65:
					r := kmsg.NewPtrDescribeTransactionsRequest()
					r.TransactionalIDs = []string{"never-seen"}
					req, want = r, errTransactionalIDNotFound
					code = func(resp kmsg.Response) int16 {
						return resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
					}
				case 66:
					req = kmsg.NewPtrListTransactionsRequest()
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.ListTransactionsResponse).ErrorCode }
				case 61:
					r := kmsg.NewPtrDescribeProducersRequest()
					dt := kmsg.NewDescribeProducersRequestTopic()
					dt.Topic, dt.Partitions = "t", []int32{0}
					r.Topics = append(r.Topics, dt)
					req = r
					code = func(resp kmsg.Response) int16 {
						return resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
					}
				case 32:
					// Topic t and broker 0, synonyms and docs asked
					// for: every config of both, at every version.
					r := kmsg.NewPtrDescribeConfigsRequest()
					r.IncludeSynonyms, r.IncludeDocumentation = true, true
					for _, res := range []struct {
						typ  kmsg.ConfigResourceType
						name string
					}{{kmsg.ConfigResourceTypeTopic, "t"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
						rr := kmsg.NewDescribeConfigsRequestResource()
						rr.ResourceType, rr.ResourceName = res.typ, res.name
						r.Resources = append(r.Resources, rr)
					}
					req = r
					code = func(resp kmsg.Response) int16 { return describeConfigsSweepCode(t, v, resp) }
				case 33:
					// The whole set of t's configs, replaced by one
					// that changes nothing the sweep depends on.
					r := kmsg.NewPtrAlterConfigsRequest()
					rr := kmsg.NewAlterConfigsRequestResource()
					rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
					cfg := kmsg.NewAlterConfigsRequestResourceConfig()
					cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("-1")
					rr.Configs = append(rr.Configs, cfg)
					r.Resources = append(r.Resources, rr)
					req = r
					code = func(resp kmsg.Response) int16 { return resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }
				case 44:
					r := kmsg.NewPtrIncrementalAlterConfigsRequest()
					rr := kmsg.NewIncrementalAlterConfigsRequestResource()
					rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
					cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
					cfg.Name, cfg.Op, cfg.Value = "segment.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("604800000")
					rr.Configs = append(rr.Configs, cfg)
					r.Resources = append(r.Resources, rr)
					req = r
					code = func(resp kmsg.Response) int16 {
						return resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
					}
				case 37:
					// Each version grows "t" by one partition.
					r := kmsg.NewPtrCreatePartitionsRequest()
					ct := kmsg.NewCreatePartitionsRequestTopic()
					ct.Topic, ct.Count = "t", int32(v)+2
					r.Topics = append(r.Topics, ct)
					req = r
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.CreatePartitionsResponse)
						if len(r.Topics) != 1 || r.Topics[0].Topic != "t" {
							t.Fatalf("topics %+v", r.Topics)
						}
						if tp, _ := ts.srv.cat.Topic("t"); r.Topics[0].ErrorCode == 0 && tp.Partitions != int32(v)+2 {
							t.Fatalf("t has %d partitions, want %d", tp.Partitions, v+2)
						}
						return r.Topics[0].ErrorCode
					}
				case 21:
					// Each version moves t-0's start one further, within
					// the records the produces above wrote.
					r := kmsg.NewPtrDeleteRecordsRequest()
					dt := kmsg.NewDeleteRecordsRequestTopic()
					dp := kmsg.NewDeleteRecordsRequestTopicPartition()
					dt.Topic, dp.Offset = "t", int64(v)+1
					dt.Partitions = append(dt.Partitions, dp)
					r.Topics = append(r.Topics, dt)
					req = r
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.DeleteRecordsResponse)
						if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
							t.Fatalf("topics %+v", r.Topics)
						}
						sp := r.Topics[0].Partitions[0]
						if sp.ErrorCode == 0 && sp.LowWatermark != int64(v)+1 {
							t.Fatalf("low watermark %d, want %d", sp.LowWatermark, v+1)
						}
						return sp.ErrorCode
					}
				case 23:
					// Epoch 0 of t-0, current epoch 0 (read from v2):
					// the high watermark.
					req = epochReq(v, "t", 0, 0, 0)
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.OffsetForLeaderEpochResponse)
						if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
							t.Fatalf("topics %+v", r.Topics)
						}
						sp := r.Topics[0].Partitions[0]
						if hwm := openExisting(t, ts.store, "t", 0).DurableEnd(); sp.ErrorCode == 0 && (sp.EndOffset != hwm || v >= 1 && sp.LeaderEpoch != 0) {
							t.Fatalf("epoch %d end %d, want 0 and %d", sp.LeaderEpoch, sp.EndOffset, hwm)
						}
						return sp.ErrorCode
					}
				case 75:
					req = describeTopicPartitionsReq(2000, "", "t")
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.DescribeTopicPartitionsResponse)
						tp, _ := ts.srv.cat.Topic("t")
						if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != int(tp.Partitions) || r.NextCursor != nil {
							t.Fatalf("topics %+v, cursor %+v; t has %d partitions", r.Topics, r.NextCursor, tp.Partitions)
						}
						return r.Topics[0].ErrorCode
					}
				case 60:
					r := kmsg.NewPtrDescribeClusterRequest()
					r.IncludeClusterAuthorizedOperations = true
					req = r
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.DescribeClusterResponse)
						if len(r.Brokers) != 1 || r.ClusterAuthorizedOperations <= 0 {
							t.Fatalf("brokers %+v, authorized operations %d", r.Brokers, r.ClusterAuthorizedOperations)
						}
						return r.ErrorCode
					}
				case 35:
					r := kmsg.NewPtrDescribeLogDirsRequest()
					dt := kmsg.NewDescribeLogDirsRequestTopic()
					dt.Topic, dt.Partitions = "t", []int32{0}
					r.Topics = append(r.Topics, dt)
					req = r
					code = func(resp kmsg.Response) int16 {
						r := resp.(*kmsg.DescribeLogDirsResponse)
						if len(r.Dirs) != 1 || len(r.Dirs[0].Topics) != 1 || len(r.Dirs[0].Topics[0].Partitions) != 1 ||
							r.Dirs[0].Topics[0].Partitions[0].Size <= 0 {
							t.Fatalf("dirs %+v", r.Dirs)
						}
						if v >= 4 && r.Dirs[0].UsableBytes <= 0 {
							t.Fatalf("v%d: usable bytes %d", v, r.Dirs[0].UsableBytes)
						}
						if r.ErrorCode != 0 {
							return r.ErrorCode
						}
						return r.Dirs[0].ErrorCode
					}
				default:
					t.Fatalf("API %s (key %d) is advertised and this test does not send it", a.name, a.key)
				}
				req.SetVersion(v)
				resp := c.do(req)
				if resp.GetVersion() != v {
					t.Fatalf("answered at v%d", resp.GetVersion())
				}
				if got := code(resp); got != want {
					t.Fatalf("error code %d, want %d", got, want)
				}
			})
		}
	}
}
