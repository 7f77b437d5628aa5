"""Driver of kafka-python's KafkaAdminClient for the compatibility runner.

Usage: python3 kafka_python.py admin JSON (the runner passes this file's
text with python3 -c, which takes the same arguments)

JSON holds "bootstrap", "client" (the client id), "seconds" (the bound
of the call) and "op", the one KafkaAdminClient call to make:
create_topic (topic, partitions), delete_topic (topic),
describe_configs (topic, names), alter_configs (topic, configs: the
whole set, AlterConfigs), create_partitions (topic, total),
describe_cluster (its describe_cluster, from Metadata). It prints one
JSON line, {"result": ...} (configs by name; cluster_id, controller,
brokers); a failed call raises (kafka-python does not raise for a
resource's error code in DescribeConfigs and AlterConfigs answers: this
driver does), and the process exits 1 with the error on stderr.
"""

import json
import os
import sys

# This file's name is not the package's (kafka), but keep its directory
# off the path all the same, as the other drivers do.
if "__file__" in globals():
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path = [d for d in sys.path if os.path.abspath(d or ".") != _here]

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def check_resources(response, what):
    """Raises for the first resource whose error code is not 0."""
    for r in response.resources:
        if r[0] != 0:
            raise RuntimeError("%s of %s: error code %d: %s" % (what, r[3], r[0], r[1]))


def admin(a):
    ms = max(1, a["seconds"] - 1) * 1000
    adm = KafkaAdminClient(bootstrap_servers=a["bootstrap"], client_id=a["client"],
                           request_timeout_ms=ms, reconnect_backoff_ms=20, reconnect_backoff_max_ms=200)
    op, topic = a["op"], a.get("topic")
    result = {}
    if op == "create_topic":
        adm.create_topics([NewTopic(topic, a["partitions"], 1)], timeout_ms=ms)
    elif op == "delete_topic":
        adm.delete_topics([topic], timeout_ms=ms)
    elif op == "describe_configs":
        configs = {}
        for response in adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]):
            check_resources(response, "describe configs")
            for r in response.resources:
                for entry in r[4]:
                    if entry[0] in a["names"]:
                        configs[entry[0]] = entry[1]
        result["configs"] = configs
    elif op == "alter_configs":
        response = adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=a["configs"])])
        check_resources(response, "alter configs")
    elif op == "create_partitions":
        adm.create_partitions({topic: NewPartitions(a["total"])}, timeout_ms=ms)
    elif op == "describe_cluster":
        c = adm.describe_cluster()
        controller = c.get("controller_id")
        result = {"cluster_id": c.get("cluster_id") or "", "controller": -1 if controller is None else controller,
                  "brokers": [{"id": b["node_id"], "host": b["host"], "port": b["port"]} for b in c["brokers"]]}
    else:
        raise ValueError("unknown admin op %r" % op)
    adm.close()
    out({"result": result})


def main():
    mode, args = sys.argv[1], json.loads(sys.argv[2])
    {"admin": admin}[mode](args)


if __name__ == "__main__":
    main()
