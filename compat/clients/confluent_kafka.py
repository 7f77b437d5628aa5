"""Driver of confluent-kafka-python (librdkafka) for the compatibility runner.

Usage: python3 confluent_kafka.py MODE JSON (the runner passes this file's
text with python3 -c, which takes the same arguments)

MODE is produce, consume, subscribe, txn, group, login or admin; JSON holds
the parameters (see each mode). Every line on stdout is one JSON object;
stderr is for diagnostics. The runner bounds the process; each mode also
bounds itself with its own deadline and exits 2 when it runs out.

  produce: produces "records" (each a value and a partition) in order, with
    the librdkafka settings in "config"; one line per delivery report:
    value, partition, offset, error ("" when delivered).
  consume: reads every partition of the topic from the beginning to its
    end (partition EOF: the high watermark, or the last stable offset at
    read_committed) with "config" (isolation.level, ...); one line per
    record: partition, offset, value.
  subscribe: one consumer of group "group" subscribes to the topic and
    polls until it has read "want" records, committing each
    synchronously, then closes (leaving the group); one line per record:
    partition, offset, value.
  login: for each of "attempts" (each: its librdkafka "config" over
    "config", and a "topic" or none), a producer that produces one record
    to the topic and polls until it is delivered or the client reports an
    error (error_cb), or, without a topic, lists the topics; one line per
    attempt: {"result": {"ok": ..., "error": ...}} (the first error).
  txn: one transactional producer (transactional.id from "tid") runs the
    transactions of "txns" in order (each: "commit" true or false, and its
    "records"), flushing each before it ends; one line per delivery
    report (as produce) and one per transaction: txn, outcome (committed,
    aborted, uncertain), error.
  group: two consumers of group "group" subscribe to the topic (of
    "partitions" partitions) and poll in turn until each holds partitions
    and together they hold them all; then a producer produces the first
    half of "records" (one line per delivery report, as produce) and the
    members poll until they read it, committing each record synchronously;
    member 1 closes (leaving the group) and member 0 polls until it holds
    every partition; the other half is produced and member 0 polls until
    the group read every record. One line per record read: member,
    partition, offset, value; one per member: member, assignment (member
    1's as it left).
  admin: one AdminClient call, "op": create_topic (topic, partitions),
    delete_topic (topic), describe_configs (topic, names), alter_configs
    (topic, configs: the whole set, AlterConfigs), create_partitions
    (topic, total), describe_cluster (list_topics' ClusterMetadata:
    AdminClient 1.7 has no describe_cluster). One line: {"result": ...}
    (configs by name; cluster_id, controller, brokers); a failed call
    raises, and the process exits 1 with the error on stderr.
"""

import json
import os
import sys
import time

# This file's name is the module's: run as a script, its own directory
# must not shadow the package.
if "__file__" in globals():
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path = [d for d in sys.path if os.path.abspath(d or ".") != _here]

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def err_text(err):
    if err is None:
        return ""
    return "%s: %s" % (err.name(), err.str())


def produce(a):
    conf = {"bootstrap.servers": a["bootstrap"], "acks": "all", "linger.ms": 5}
    conf.update(a.get("config", {}))
    p = Producer(conf)
    deadline = time.time() + a.get("seconds", 45)

    def on_delivery(err, msg):
        out({"value": msg.value().decode(), "partition": msg.partition(),
             "offset": msg.offset() if err is None else -1, "error": err_text(err)})

    for r in a["records"]:
        while True:
            try:
                p.produce(a["topic"], value=r["value"], partition=r["partition"], on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(max(1, deadline - time.time()))
    if left:
        sys.stderr.write("%d records not answered by the deadline\n" % left)
        sys.exit(2)


def consume(a):
    conf = {"bootstrap.servers": a["bootstrap"], "group.id": "compat-unused",
            "enable.auto.commit": False, "enable.partition.eof": True}
    conf.update(a.get("config", {}))
    c = Consumer(conf)
    parts = a["partitions"]
    c.assign([TopicPartition(a["topic"], p, -2) for p in range(parts)])  # -2: OFFSET_BEGINNING
    done = set()
    deadline = time.time() + a.get("seconds", 45)
    while len(done) < parts:
        if time.time() > deadline:
            sys.stderr.write("partitions done %s of %d by the deadline\n" % (sorted(done), parts))
            sys.exit(2)
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                done.add(msg.partition())
                continue
            raise KafkaException(msg.error())
        out({"partition": msg.partition(), "offset": msg.offset(), "value": msg.value().decode()})
    c.close()


def subscribe(a):
    conf = {"bootstrap.servers": a["bootstrap"], "group.id": a["group"],
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    conf.update(a.get("config", {}))
    c = Consumer(conf)
    c.subscribe([a["topic"]])
    deadline = time.time() + a.get("seconds", 45)
    got = 0
    while got < a["want"]:
        if time.time() > deadline:
            sys.stderr.write("%d of %d records read by the deadline\n" % (got, a["want"]))
            sys.exit(2)
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        out({"partition": msg.partition(), "offset": msg.offset(), "value": msg.value().decode()})
        c.commit(message=msg, asynchronous=False)
        got += 1
    c.close()


def login(a):
    for t in a["attempts"]:
        errors = []
        delivered = []
        conf = {"bootstrap.servers": a["bootstrap"], "error_cb": errors.append}
        conf.update(a.get("config", {}))
        conf.update(t["config"])
        p = Producer(conf)
        result = {"ok": False, "error": ""}
        if t.get("topic"):
            p.produce(t["topic"], value=b"refused?", on_delivery=lambda err, msg: delivered.append(err))
            deadline = time.time() + 10
            while not errors and not delivered and time.time() < deadline:
                p.poll(0.1)
            if delivered and delivered[0] is None:
                result["ok"] = True
            elif delivered:
                errors.append(delivered[0])
        else:
            try:
                p.list_topics(timeout=10)
                result["ok"] = True
            except KafkaException as e:
                errors.append(e.args[0])
        if errors:
            result["error"] = err_text(errors[0])
        elif not result["ok"]:
            result["error"] = "neither delivered nor an error within 10 s"
        out({"result": result})


def txn(a):
    conf = {"bootstrap.servers": a["bootstrap"], "transactional.id": a["tid"], "acks": "all",
            "linger.ms": 5, "transaction.timeout.ms": 60000}
    conf.update(a.get("config", {}))
    p = Producer(conf)
    failed = []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(err)
        out({"value": msg.value().decode(), "partition": msg.partition(),
             "offset": msg.offset() if err is None else -1, "error": err_text(err)})

    p.init_transactions(30)
    for t, tx in enumerate(a["txns"]):
        p.begin_transaction()
        del failed[:]
        for r in tx["records"]:
            p.produce(a["topic"], value=r["value"], partition=r["partition"], on_delivery=on_delivery)
        # Flushed before the end, so an aborted transaction's records
        # are in the log (and acknowledged) when the abort comes.
        p.flush(30)
        outcome, why = end(p, tx["commit"] and not failed)
        if failed and not why:
            why = "a record failed: %s" % err_text(failed[0])
        out({"txn": t, "outcome": outcome, "error": why})
        if outcome == "uncertain":
            return


def end(p, commit):
    """Ends the open transaction as librdkafka documents: a retriable
    error is retried, one that requires an abort aborts; returns the
    outcome and the error text."""
    why = ""
    for _ in range(10):
        try:
            if commit:
                p.commit_transaction(30)
                return "committed", why
            p.abort_transaction(30)
            return "aborted", why
        except KafkaException as e:
            ke = e.args[0]
            why = err_text(ke)
            if ke.txn_requires_abort():
                commit = False
                continue
            if ke.retriable():
                continue
            return ("uncertain" if commit else "aborted"), why
    return ("uncertain" if commit else "aborted"), why


def group(a):
    members = []
    for i in range(2):
        conf = {"bootstrap.servers": a["bootstrap"], "group.id": a["group"],
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": 6000, "heartbeat.interval.ms": 200}
        conf.update(a.get("config", {}))
        c = Consumer(conf)
        c.subscribe([a["topic"]])
        members.append(c)
    deadline = time.time() + a.get("seconds", 45)
    got = 0
    records = a["records"]
    half = len(records) // 2
    parts = a["partitions"]

    def held(c):
        return set(tp.partition for tp in c.assignment())

    def poll(active, until):
        nonlocal got
        while not until():
            if time.time() > deadline:
                sys.stderr.write("%d of %d records read by the deadline; assignments %s\n"
                                 % (got, len(records), [sorted(held(c)) for c in active]))
                sys.exit(2)
            for i, c in enumerate(active):
                msg = c.poll(0.05)
                if msg is None:
                    continue
                if msg.error():
                    raise KafkaException(msg.error())
                out({"member": i, "partition": msg.partition(), "offset": msg.offset(), "value": msg.value().decode()})
                c.commit(message=msg, asynchronous=False)
                got += 1

    pconf = {"bootstrap.servers": a["bootstrap"], "acks": "all", "linger.ms": 5}
    pconf.update(a.get("config", {}))
    p = Producer(pconf)

    def on_delivery(err, msg):
        out({"value": msg.value().decode(), "partition": msg.partition(),
             "offset": msg.offset() if err is None else -1, "error": err_text(err)})

    def produce_some(recs):
        for r in recs:
            p.produce(a["topic"], value=r["value"], partition=r["partition"], on_delivery=on_delivery)
        p.flush(max(1, deadline - time.time()))

    def shared():
        h = [held(c) for c in members]
        return all(h) and sum(len(x) for x in h) == parts and len(h[0] | h[1]) == parts

    poll(members, shared)
    produce_some(records[:half])
    poll(members, lambda: got >= half)
    out({"member": 1, "assignment": sorted(held(members[1]))})
    members[1].close()
    poll(members[:1], lambda: len(held(members[0])) == parts)
    produce_some(records[half:])
    poll(members[:1], lambda: got >= len(records))
    out({"member": 0, "assignment": sorted(held(members[0]))})
    members[0].close()


def admin(a):
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
    conf = {"bootstrap.servers": a["bootstrap"]}
    conf.update(a.get("config") or {})
    adm = AdminClient(conf)
    timeout = max(1, a["seconds"] - 1)
    op, topic = a["op"], a.get("topic")

    def wait(futures):
        for f in futures.values():
            f.result(timeout=timeout)

    result = {}
    if op == "create_topic":
        wait(adm.create_topics([NewTopic(topic, a["partitions"], 1)], operation_timeout=timeout, request_timeout=timeout))
    elif op == "delete_topic":
        wait(adm.delete_topics([topic], operation_timeout=timeout, request_timeout=timeout))
    elif op == "describe_configs":
        fs = adm.describe_configs([ConfigResource("topic", topic)], request_timeout=timeout)
        for f in fs.values():
            entries = f.result(timeout=timeout)
            result["configs"] = {n: e.value for n, e in entries.items() if n in a["names"]}
    elif op == "alter_configs":
        wait(adm.alter_configs([ConfigResource("topic", topic, set_config=a["configs"])], request_timeout=timeout))
    elif op == "create_partitions":
        wait(adm.create_partitions([NewPartitions(topic, a["total"])], operation_timeout=timeout, request_timeout=timeout))
    elif op == "describe_cluster":
        md = adm.list_topics(timeout=timeout)
        result = {"cluster_id": md.cluster_id or "", "controller": md.controller_id,
                  "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in md.brokers.values()]}
    else:
        raise ValueError("unknown admin op %r" % op)
    out({"result": result})


def main():
    mode, args = sys.argv[1], json.loads(sys.argv[2])
    {"produce": produce, "consume": consume, "subscribe": subscribe, "txn": txn, "group": group,
     "login": login, "admin": admin}[mode](args)


if __name__ == "__main__":
    main()
