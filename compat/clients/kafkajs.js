// Driver of kafkajs for the compatibility runner.
//
// Usage: node kafkajs.js MODE JSON, kafkajs resolved through NODE_PATH
// (the runner passes this file's text with node -e, which takes the same
// arguments).
//
// MODE is produce, consume, txn, group, login or admin; JSON holds the
// parameters (see each mode); with "ca" (a PEM file) the client dials
// with TLS, trusting it, and with "sasl" it logs in ({mechanism,
// username, password}, kafkajs's sasl option). Every line on stdout is
// one JSON object; stderr is for kafkajs's warnings and errors. The
// runner bounds the process; each mode also bounds itself ("seconds")
// and exits 2 when it runs out.
//
//   produce: sends "records" (each a value and a partition) in order,
//     "chunk" records at a time (one producer.send each, acks -1), with
//     the producer options of "producer" (idempotent,
//     maxInFlightRequests) and "compression" (none or gzip); one line
//     per record: value, partition, offset (baseOffset of its
//     partition's answer + its index there), error.
//   consume: a consumer of a new group reads the topic from the
//     beginning ("readUncommitted" as given) until it has "want" records,
//     then "grace" ms more to see anything extra; one line per record:
//     partition, offset, value. With "group" it is a consumer of that
//     group, and with "commit" it commits each record (commitOffsets)
//     before the next.
//   txn: one transactional producer ("tid") runs the transactions of
//     "txns" in order (each: "commit" true or false, and its "records"),
//     "chunk" records a send; one line per record (as produce) and one
//     per transaction: txn, outcome (committed, aborted, uncertain),
//     error.
//   group: two consumers of group "group" join until each holds
//     partitions of the topic and together they hold its "partitions";
//     an idempotent producer sends the first half of "records" (one line
//     per record, as produce) and the members read it; member 1
//     disconnects (committing and leaving the group), member 0 rejoins
//     until it holds every partition; the other half is sent and member 0
//     reads it. One line per record read: member, partition, offset,
//     value; one per member: member, assignment (member 1's as it left).
//   login: for each of "attempts" (each: its "sasl", and a "topic" or
//     none), a client that connects a producer (no retries) and sends
//     one record to the topic, or connects an admin client and lists the
//     topics; one line per attempt: {"result": {"ok": ..., "error": ...}}
//     (the error's name and message).
//   admin: one kafka.admin() call, "op": create_topic (topic,
//     partitions), delete_topic (topic), describe_configs (topic, names),
//     alter_configs (topic, configs: the whole set, AlterConfigs),
//     create_partitions (topic, total), delete_records (topic,
//     partition, before: deleteTopicRecords), describe_cluster (its
//     describeCluster, from Metadata). One line: {"result": ...} (configs
//     by name; cluster_id, controller, brokers); a failed call throws,
//     and the process exits 1 with the error on stderr.
'use strict'

const fs = require('fs')
const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs')

const [mode, json] = process.argv.slice(process.argv[1] === '-' || process.argv[1].endsWith('.js') ? 2 : 1)
const a = JSON.parse(json)

const out = obj => process.stdout.write(JSON.stringify(obj) + '\n')
const stderrLog = () => ({ level, log }) => {
  process.stderr.write(`${logLevel[level] || level} ${log.message} ${JSON.stringify(log)}\n`)
}
const newKafka = (sasl, retry) => new Kafka({
  clientId: a.client || 'compat-kafkajs',
  brokers: [a.bootstrap],
  logLevel: logLevel.WARN,
  logCreator: stderrLog,
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: retry || { initialRetryTime: 50, maxRetryTime: 1000, retries: 10 },
  ssl: a.ca ? { ca: [fs.readFileSync(a.ca, 'utf8')] } : undefined,
  sasl,
})
const kafka = newKafka(a.sasl)

const errText = e => (e ? `${e.name}: ${e.message}` : '')

function deadline () {
  const ms = (a.seconds || 45) * 1000
  return setTimeout(() => {
    process.stderr.write(`deadline of ${ms} ms reached\n`)
    process.exit(2)
  }, ms)
}

// sendAcked sends messages (each with its partition) with send and
// prints one line per record, with the offset kafkajs's answer implies.
async function sendAcked (send, messages) {
  try {
    const res = await send(messages)
    const base = new Map()
    for (const r of res) base.set(r.partition, BigInt(r.baseOffset))
    const idx = new Map()
    for (const m of messages) {
      const i = idx.get(m.partition) || 0n
      idx.set(m.partition, i + 1n)
      const b = base.get(m.partition)
      out({ value: m.value, partition: m.partition, offset: b === undefined ? -1 : Number(b + i), error: b === undefined ? 'no answer for the partition' : '' })
    }
    return null
  } catch (e) {
    for (const m of messages) out({ value: m.value, partition: m.partition, offset: -1, error: errText(e) })
    return e
  }
}

function compression () {
  switch (a.compression || 'none') {
    case 'none': return CompressionTypes.None
    case 'gzip': return CompressionTypes.GZIP
    case 'snappy': return CompressionTypes.Snappy
    case 'lz4': return CompressionTypes.LZ4
    case 'zstd': return CompressionTypes.ZSTD
  }
  throw new Error('unknown compression ' + a.compression)
}

async function produce () {
  const producer = kafka.producer(Object.assign({ allowAutoTopicCreation: false }, a.producer || {}))
  await producer.connect()
  const chunk = a.chunk || 10
  const codec = compression()
  for (let i = 0; i < a.records.length; i += chunk) {
    const messages = a.records.slice(i, i + chunk).map(r => ({ value: r.value, partition: r.partition }))
    await sendAcked(ms => producer.send({ topic: a.topic, acks: -1, compression: codec, messages: ms }), messages)
  }
  await producer.disconnect()
}

async function consume () {
  const consumer = kafka.consumer({
    groupId: a.group || `compat-read-${process.pid}-${Date.now()}`,
    readUncommitted: !!a.readUncommitted,
    maxWaitTimeInMs: 100,
    heartbeatInterval: 500,
    sessionTimeout: 6000,
  })
  await consumer.connect()
  await consumer.subscribe({ topic: a.topic, fromBeginning: true })
  let got = 0
  let done
  const all = new Promise(resolve => { done = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      out({ partition, offset: Number(message.offset), value: message.value.toString() })
      if (a.commit) await consumer.commitOffsets([{ topic, partition, offset: String(BigInt(message.offset) + 1n) }])
      if (++got >= a.want) done()
    },
  })
  if (a.want > 0) await all
  await new Promise(resolve => setTimeout(resolve, a.grace || 500))
  await consumer.disconnect()
}

async function txn () {
  const chunk = a.chunk || 10
  const producer = kafka.producer(Object.assign({ transactionalId: a.tid, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false }, a.producer || {}))
  await producer.connect()
  for (let t = 0; t < a.txns.length; t++) {
    const messages = a.txns[t].records.map(r => ({ value: r.value, partition: r.partition }))
    const tx = await producer.transaction()
    let failed = null
    for (let i = 0; i < messages.length && !failed; i += chunk) {
      failed = await sendAcked(ms => tx.send({ topic: a.topic, acks: -1, messages: ms }), messages.slice(i, i + chunk))
    }
    let outcome, why = failed ? errText(failed) : ''
    if (a.txns[t].commit && !failed) {
      try {
        await tx.commit()
        outcome = 'committed'
      } catch (e) {
        outcome = 'uncertain'
        why = errText(e)
      }
    } else {
      try {
        await tx.abort()
      } catch (e) {
        why = why || errText(e)
      }
      outcome = 'aborted'
    }
    out({ txn: t, outcome, error: why })
    if (outcome === 'uncertain') break
  }
  await producer.disconnect()
}

async function group () {
  const records = a.records
  const half = Math.floor(records.length / 2)
  let got = 0
  const waiters = []
  const check = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].cond()) {
        waiters[i].resolve()
        waiters.splice(i, 1)
      }
    }
  }
  // until resolves once cond holds (checked on every record and join).
  const until = cond => new Promise(resolve => { waiters.push({ cond, resolve }); check() })
  const consumers = []
  const assigned = [[], []]
  for (let m = 0; m < 2; m++) {
    const c = kafka.consumer({ groupId: a.group, heartbeatInterval: 200, sessionTimeout: 6000, rebalanceTimeout: 10000, maxWaitTimeInMs: 100 })
    c.on(c.events.GROUP_JOIN, e => {
      assigned[m] = (e.payload.memberAssignment[a.topic] || []).slice().sort()
      check()
    })
    await c.connect()
    await c.subscribe({ topic: a.topic, fromBeginning: true })
    consumers.push(c)
  }
  // Both subscribe before either runs, so both join the group's first
  // rebalance.
  for (let m = 0; m < 2; m++) {
    await consumers[m].run({
      eachMessage: async ({ partition, message }) => {
        out({ member: m, partition, offset: Number(message.offset), value: message.value.toString() })
        got++
        check()
      },
    })
  }
  await until(() => assigned[0].length > 0 && assigned[1].length > 0 &&
    new Set(assigned.flat()).size === a.partitions && assigned[0].length + assigned[1].length === a.partitions)
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  const send = async recs => {
    for (let i = 0; i < recs.length; i += 10) {
      const messages = recs.slice(i, i + 10).map(r => ({ value: r.value, partition: r.partition }))
      await sendAcked(ms => producer.send({ topic: a.topic, acks: -1, messages: ms }), messages)
    }
  }
  await send(records.slice(0, half))
  await until(() => got >= half)
  out({ member: 1, assignment: assigned[1] })
  await consumers[1].disconnect()
  await until(() => assigned[0].length === a.partitions)
  await send(records.slice(half))
  await producer.disconnect()
  await until(() => got >= records.length)
  out({ member: 0, assignment: assigned[0] })
  await consumers[0].disconnect()
}

async function login () {
  for (const t of a.attempts) {
    const k = newKafka(t.sasl, { retries: 0 })
    const result = { ok: false, error: '' }
    try {
      if (t.topic) {
        const producer = k.producer({ allowAutoTopicCreation: true })
        await producer.connect()
        await producer.send({ topic: t.topic, acks: -1, messages: [{ value: 'refused?' }] })
        await producer.disconnect()
      } else {
        const adm = k.admin()
        await adm.connect()
        await adm.listTopics()
        await adm.disconnect()
      }
      result.ok = true
    } catch (e) {
      result.error = errText(e)
    }
    out({ result })
  }
}

async function admin () {
  const adm = kafka.admin()
  await adm.connect()
  const timeout = Math.max(1, (a.seconds || 45) - 1) * 1000
  let result = {}
  switch (a.op) {
    case 'create_topic':
      if (!await adm.createTopics({ topics: [{ topic: a.topic, numPartitions: a.partitions, replicationFactor: 1 }], timeout })) {
        throw new Error(`createTopics answered false: ${a.topic} exists`)
      }
      break
    case 'delete_topic':
      await adm.deleteTopics({ topics: [a.topic], timeout })
      break
    case 'describe_configs': {
      const res = await adm.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: a.topic, configNames: a.names }], includeSynonyms: false })
      const configs = {}
      for (const r of res.resources) {
        if (r.errorCode !== 0) throw new Error(`describeConfigs of ${r.resourceName}: error code ${r.errorCode}: ${r.errorMessage}`)
        for (const c of r.configEntries) configs[c.configName] = c.configValue
      }
      result = { configs }
      break
    }
    case 'alter_configs': {
      const configEntries = Object.entries(a.configs).map(([name, value]) => ({ name, value }))
      const res = await adm.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: a.topic, configEntries }], validateOnly: false })
      for (const r of res.resources) {
        if (r.errorCode !== 0) throw new Error(`alterConfigs of ${r.resourceName}: error code ${r.errorCode}: ${r.errorMessage}`)
      }
      break
    }
    case 'create_partitions':
      await adm.createPartitions({ topicPartitions: [{ topic: a.topic, count: a.total }], timeout })
      break
    case 'delete_records':
      // deleteTopicRecords looks the partitions' leaders up in metadata
      // it does not load itself: without this it throws
      // KafkaJSTopicMetadataNotLoaded.
      await adm.fetchTopicMetadata({ topics: [a.topic] })
      await adm.deleteTopicRecords({ topic: a.topic, partitions: [{ partition: a.partition, offset: String(a.before) }] })
      break
    case 'describe_cluster': {
      const c = await adm.describeCluster()
      result = {
        cluster_id: c.clusterId || '',
        controller: c.controller == null ? -1 : c.controller,
        brokers: c.brokers.map(b => ({ id: b.nodeId, host: b.host, port: b.port })),
      }
      break
    }
    default:
      throw new Error(`unknown admin op ${a.op}`)
  }
  await adm.disconnect()
  out({ result })
}

const timer = deadline()
const modes = { produce, consume, txn, group, login, admin }
modes[mode]().then(() => { clearTimeout(timer) }, e => {
  process.stderr.write(`${errText(e)}\n${e.stack}\n`)
  process.exit(1)
})
