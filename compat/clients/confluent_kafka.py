"""Driver of confluent-kafka-python (librdkafka) for the compatibility runner.

Usage: python3 confluent_kafka.py MODE JSON

MODE is produce, consume, txn or group; JSON holds the parameters (see each
mode). Every line on stdout is one JSON object; stderr is for diagnostics.
The runner bounds the process; each mode also bounds itself with its own
deadline and exits 2 when it runs out.

  produce: produces "records" (each a value and a partition) in order, with
    the librdkafka settings in "config"; one line per delivery report:
    value, partition, offset, error ("" when delivered).
  consume: reads every partition of the topic from the beginning to its
    end (partition EOF: the high watermark, or the last stable offset at
    read_committed) with "config" (isolation.level, ...); one line per
    record: partition, offset, value.
  txn: one transactional producer (transactional.id from "tid") runs the
    transactions of "txns" in order (each: "commit" true or false, and its
    "records"), flushing each before it ends; one line per delivery
    report (as produce) and one per transaction: txn, outcome (committed,
    aborted, uncertain), error.
  group: "members" consumers of group "group" subscribe to the topic
    (of "partitions" partitions) and poll in turn until every member holds
    partitions and together they hold them all; then a producer produces
    "records" (one line per delivery report, as produce) and the members
    poll until the group consumed them all, committing each record
    synchronously; one line per record: member, partition, offset, value;
    one per member: member, assignment; then they close (leaving the
    group).
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
    for i in range(a["members"]):
        conf = {"bootstrap.servers": a["bootstrap"], "group.id": a["group"], "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": 6000, "heartbeat.interval.ms": 200}
        conf.update(a.get("config", {}))
        c = Consumer(conf)
        c.subscribe([a["topic"]])
        members.append(c)
    deadline = time.time() + a.get("seconds", 45)
    got = 0

    def poll_all():
        nonlocal got
        if time.time() > deadline:
            sys.stderr.write("%d of %d records consumed by the deadline; assignments %s\n"
                             % (got, len(a["records"]), [[tp.partition for tp in c.assignment()] for c in members]))
            sys.exit(2)
        for i, c in enumerate(members):
            msg = c.poll(0.05)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out({"member": i, "partition": msg.partition(), "offset": msg.offset(), "value": msg.value().decode()})
            c.commit(message=msg, asynchronous=False)
            got += 1

    def shared():
        held = [set(tp.partition for tp in c.assignment()) for c in members]
        return all(held) and sum(len(h) for h in held) == a["partitions"] and len(set().union(*held)) == a["partitions"]

    while not shared():
        poll_all()
    pconf = {"bootstrap.servers": a["bootstrap"], "acks": "all", "linger.ms": 5}
    pconf.update(a.get("config", {}))
    p = Producer(pconf)

    def on_delivery(err, msg):
        out({"value": msg.value().decode(), "partition": msg.partition(),
             "offset": msg.offset() if err is None else -1, "error": err_text(err)})

    for r in a["records"]:
        p.produce(a["topic"], value=r["value"], partition=r["partition"], on_delivery=on_delivery)
    p.flush(max(1, deadline - time.time()))
    while got < len(a["records"]):
        poll_all()
    for i, c in enumerate(members):
        out({"member": i, "assignment": sorted(tp.partition for tp in c.assignment())})
    for c in members:
        c.close()


def main():
    mode, args = sys.argv[1], json.loads(sys.argv[2])
    {"produce": produce, "consume": consume, "txn": txn, "group": group}[mode](args)


if __name__ == "__main__":
    main()
