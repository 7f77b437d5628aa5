package main

// kafkajs, pinned at kafkaclients.KafkajsVersion and installed with npm into the
// -node-modules directory (.ci/run does it), driven by
// compat/clients/kafkajs.js under node. kafkajs picks each request's
// version from the server's ApiVersions answer: one row, "default".

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/kafkatest"
)

//go:embed clients/kafkajs.js
var kafkajsDriver string

const (
	kafkajsClient   = "kafkajs"
	kafkajsClientID = "compat-kafkajs"
)

// Record counts of the kafkajs cells.
const (
	jsRecords     = 200
	jsIdemRecords = 300
	jsTxns        = 6
	jsPerTxn      = 10
	jsGroupParts  = 4
)

// kafkajsDefaultModules is the -node-modules flag's default.
const kafkajsDefaultModules = ".ci/node/node_modules"

func init() {
	info := ClientInfo{Name: kafkajsClient, Version: "not installed", Source: "npm kafkajs@" + kafkaclients.KafkajsVersion + " (.ci/run installs it into .ci/node)",
		Note: "versions column: default, kafkajs picks each request's version from the server's ApiVersions answer; it ships only the gzip codec"}
	if _, _, v, err := kafkaclients.Kafkajs(kafkajsDefaultModules); err == nil {
		info.Version = "kafkajs " + v
	}
	kafkajsInfo = len(clientInfos)
	clientInfos = append(clientInfos, info)
	cellSets = append(cellSets, kafkajsCells, kafkajsAdminCells)
}

// kafkajsInfo is the index of kafkajs's line in clientInfos. Its version
// is read at init from the default -node-modules directory (flags are
// parsed later), and again by each cell from the directory the flag
// names.
var kafkajsInfo int

func kafkajsCells() []Cell {
	var cells []Cell
	add := func(feature string, run func(context.Context, *Env) Result) {
		cells = append(cells, Cell{Client: kafkajsClient, Version: "default", Feature: feature, ClientID: kafkajsClientID,
			Run: func(ctx context.Context, e *Env) Result {
				_, _, v, err := kafkaclients.Kafkajs(e.NodeModules)
				if err != nil {
					return unavailable("%v", err)
				}
				clientInfos[kafkajsInfo].Version = "kafkajs " + v
				return run(ctx, e)
			}})
	}
	add(FeatureProduce, func(ctx context.Context, e *Env) Result { return kafkajsProduce(ctx, e, "none") })
	add(FeatureIdempotent, kafkajsIdempotent)
	add(FeatureTransactions, kafkajsTransactions)
	add(FeatureReadCommitted, kafkajsReadCommitted)
	add(FeatureGroups, kafkajsGroups)
	add(FeatureGzip, func(ctx context.Context, e *Env) Result { return kafkajsProduce(ctx, e, "gzip") })
	for _, f := range []string{FeatureSnappy, FeatureLZ4, FeatureZstd} {
		cells = append(cells, Cell{Client: kafkajsClient, Version: "default", Feature: f,
			Run: func(context.Context, *Env) Result {
				return notSupported("kafkajs ships only gzip; %s needs a codec package of its own (registered in CompressionCodecs), which is not installed", f)
			}})
	}
	return cells
}

// runKafkajs runs the driver's mode with args (bootstrap, unless args
// name one, client id and seconds added) under node, kafkajs resolved
// through NODE_PATH.
func runKafkajs(ctx context.Context, e *Env, mode string, args map[string]any) (*driverRun, error) {
	node, modules, _, err := kafkaclients.Kafkajs(e.NodeModules)
	if err != nil {
		return nil, err
	}
	if args["bootstrap"] == nil {
		args["bootstrap"] = e.Bootstrap[0]
	}
	args["client"] = kafkajsClientID
	args["seconds"] = driverSeconds(ctx)
	js, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return runDriver(ctx, "kafkajs.js "+mode, e.Tmp, []string{"NODE_PATH=" + modules}, "", node, "-e", kafkajsDriver, mode, string(js))
}

// kafkajsSend produces res's records with the driver (10 records a
// send) and takes its answers into res.
func kafkajsSend(ctx context.Context, e *Env, res *kafkatest.Result, producer map[string]any, compression string) error {
	run, err := runKafkajs(ctx, e, "produce", map[string]any{"topic": res.Topic, "records": specs(res.Records), "chunk": 10,
		"producer": producer, "compression": compression})
	if err != nil {
		return err
	}
	return applyAcks(res, run.Lines)
}

// kafkajsRead reads want records of topic with a consumer of a new group
// (kafkajs has no other kind of consumer), and half a second more to see
// any record too many.
func kafkajsRead(ctx context.Context, e *Env, topic string, want int, readUncommitted bool) ([]kafkatest.Found, error) {
	run, err := runKafkajs(ctx, e, "consume", map[string]any{"topic": topic, "want": want, "readUncommitted": readUncommitted, "grace": 500})
	if err != nil {
		return nil, err
	}
	return foundOf(run.Lines), nil
}

// kafkajsProduce: a plain producer (kafkajs's default: not idempotent),
// acks -1, with the codec (none or gzip), read back by kafkajs's
// consumer; with gzip, the store's batches must carry it.
func kafkajsProduce(ctx context.Context, e *Env, codec string) Result {
	topic := "plain"
	if codec != "none" {
		topic = "codec-" + codec
	}
	if err := e.CreateTopic(ctx, topic, 3); err != nil {
		return fail("%v", err)
	}
	res := newResult(topic, 3, jsRecords, "js")
	if err := kafkajsSend(ctx, e, res, map[string]any{}, codec); err != nil {
		return fail("%v", err)
	}
	read, err := kafkajsRead(ctx, e, topic, len(res.Records), true)
	if err != nil {
		return fail("%v", err)
	}
	if codec != "none" {
		return checkReadBack(e, res, read, codec, "its consumer")
	}
	return checkProducedOnce(e, res, read, "its consumer")
}

// kafkajsIdempotent: idempotent: true, maxInFlightRequests 1, through the
// standard faults, 10 records a send; then VerifyProduce.
func kafkajsIdempotent(ctx context.Context, e *Env) Result {
	if err := e.CreateTopic(ctx, "idem", 3); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	res := newResult("idem", 3, jsIdemRecords, "js")
	if err := kafkajsSend(ctx, e, res, map[string]any{"idempotent": true, "maxInFlightRequests": 1}, "none"); err != nil {
		return fail("%v (%s)", err, e.faultText())
	}
	return verdict(e.VerifyProduce(ctx, res))
}

// kafkajsTransactions: producer.transaction(), two records a send (many
// Produce requests, so the faults fire), commit and abort alternating, through the standard faults; then
// VerifyTxn.
func kafkajsTransactions(ctx context.Context, e *Env) Result {
	if err := e.CreateTopic(ctx, "txn", txnPartitions); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	res := newTxnResult("txn", txnPartitions, jsTxns, jsPerTxn, "js")
	run, err := runKafkajs(ctx, e, "txn", map[string]any{"topic": res.Topic, "tid": "compat-kafkajs-txn", "txns": txnSpecs(res), "chunk": 2})
	if err != nil {
		return fail("%v (%s)", err, e.faultText())
	}
	if err := applyTxnLines(res, run.Lines); err != nil {
		return fail("%v", err)
	}
	return verdict(e.VerifyTxn(ctx, res))
}

// kafkajsReadCommitted: kafkajs's consumer (readUncommitted false, its
// default) reads kgo's log of committed and aborted transactions: it
// must read the committed records, and nothing more in the half second
// after.
func kafkajsReadCommitted(ctx context.Context, e *Env) Result {
	res, err := e.WriteTxnLog(ctx, "rc", txnPartitions, rcTxns)
	if err != nil {
		return fail("%v", err)
	}
	committed := 0
	for _, t := range res.Txns {
		if t.Outcome == kafkatest.TxnCommitted {
			committed += len(t.Records)
		}
	}
	read, err := kafkajsRead(ctx, e, res.Topic, committed, false)
	if err != nil {
		return fail("%v", err)
	}
	return verdict(e.CheckReadCommitted(res, read))
}

// kafkajsGroups: two consumers of one group join until they share the
// topic's partitions; the driver's idempotent producer sends half the
// records and the members read them; member 2 disconnects (committing
// and leaving), member 1 takes its partitions over and reads the other
// half; then checkHandover (no record read twice).
func kafkajsGroups(ctx context.Context, e *Env) Result {
	const group = "compat-kafkajs"
	if err := e.CreateTopic(ctx, "grp", jsGroupParts); err != nil {
		return fail("%v", err)
	}
	res := newResult("grp", jsGroupParts, jsRecords, "js")
	run, err := runKafkajs(ctx, e, "group", map[string]any{"topic": res.Topic, "partitions": res.Partitions, "group": group,
		"records": specs(res.Records)})
	if err != nil {
		return fail("%v", err)
	}
	if err := applyAcks(res, run.Lines); err != nil {
		return fail("%v", err)
	}
	return checkHandover(ctx, e, group, res, membersOf(run.Lines, 2), " (kafkajs's automatic commits)")
}

// kafkajsAdminCells: kafkajs's admin client. It has no incremental
// alter and no call that describes log dirs; its describeCluster sends
// Metadata.
func kafkajsAdminCells() []Cell {
	run := func(ctx context.Context, e *Env, args map[string]any) (json.RawMessage, error) {
		r, err := runKafkajs(ctx, e, "admin", args)
		if err != nil {
			return nil, err
		}
		return adminResult(r)
	}
	ops := driverAdminOps(run,
		featureSet(FeatureCreateTopics, FeatureDeleteTopics, FeatureDescribeConfigs, FeatureAlterConfigs, FeatureCreatePartitions, FeatureDeleteRecords, FeatureDescribeCluster),
		map[string]string{
			FeatureIncrementalAlter: "kafkajs's admin has no incremental alter (alterConfigs sends AlterConfigs)",
			FeatureDescribeLogDirs:  "kafkajs's admin has no call that describes log dirs",
		},
		map[string]string{
			FeatureDescribeCluster: "kafkajs's describeCluster sends Metadata",
			FeatureDeleteRecords:   "after fetchTopicMetadata: deleteTopicRecords alone throws KafkaJSTopicMetadataNotLoaded on a fresh admin client",
		})
	return adminCells(kafkajsClient, "default", kafkajsClientID, ops, func(_ context.Context, e *Env) *Result {
		if _, _, _, err := kafkaclients.Kafkajs(e.NodeModules); err != nil {
			r := unavailable("%v", err)
			return &r
		}
		return nil
	})
}
