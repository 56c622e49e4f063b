// The npm package against SecantusDB on loopback: connection, SCRAM (keys derived
// through WebCrypto), every
// CRUD call of the API, cursors over several batches, BSON round trips and errors.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Binary,
  Decimal128,
  Double,
  Int32,
  Long,
  MongoAPIError,
  MongoClient,
  MongoCursorInUseError,
  MongoDriverError,
  MongoError,
  MongoOperationTimeoutError,
  MongoRuntimeError,
  MongoServerError,
  MongoServerSelectionError,
  ObjectId,
  Timestamp,
} from '../js/node.js';
import { deserialize } from 'bson';
import { nodeTransport } from '../js/transports/node.js';
import { startAuthServer, startServer } from './server.js';

const BOUND = { timeout: 30_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

/**
 * A transport that counts the commands sent whose first element is `name` with an
 * int64 value (BSON type 0x12), as getMore's cursor id is.
 */
function countingTransport(name) {
  const counter = { count: 0 };
  const needle = new TextEncoder().encode(`\x12${name}\x00`);
  const includes = (bytes) => {
    outer: for (let i = 0; i + needle.length <= bytes.length; i++) {
      for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
      return true;
    }
    return false;
  };
  counter.transport = {
    async connect(host, port, tls) {
      const duplex = await nodeTransport.connect(host, port, tls);
      return {
        read: () => duplex.read(),
        write(bytes) {
          if (includes(bytes)) counter.count++;
          return duplex.write(bytes);
        },
        close: () => duplex.close(),
      };
    },
  };
  return counter;
}

describe('against SecantusDB', BOUND, () => {
  let server;
  let client;
  let db;

  before(async () => {
    server = await startServer();
    client = new MongoClient(server.uri, OPTIONS);
    await client.connect();
    db = client.db('npm_tests');
  });

  after(async () => {
    await client?.close();
    await server?.stop();
  });

  it('connects and runs a command', BOUND, async () => {
    const reply = await db.command({ ping: 1 });
    assert.equal(reply.ok, 1);
    const hello = await db.command({ hello: 1 });
    assert.equal(hello.isWritablePrimary, true);
  });

  it('inserts and finds', BOUND, async () => {
    const coll = db.collection('insert_find');
    const document = { name: 'tea', qty: 2 };
    const one = await coll.insertOne(document);
    assert.equal(one.acknowledged, true);
    assert.ok(one.insertedId instanceof ObjectId);
    assert.ok(document._id.equals(one.insertedId), 'insertOne gives the document its _id');
    const many = await coll.insertMany([{ name: 'coffee', qty: 5 }, { _id: 7, name: 'milk', qty: 1 }]);
    assert.equal(many.insertedCount, 2);
    assert.equal(many.insertedIds[1], 7);
    assert.deepEqual(await coll.findOne({ _id: 7 }), { _id: 7, name: 'milk', qty: 1 });
    assert.equal(await coll.findOne({ name: 'none' }), null);
    const sorted = await coll.find({}, { projection: { _id: 0, name: 1 } }).sort({ qty: -1 }).toArray();
    assert.deepEqual(sorted, [{ name: 'coffee' }, { name: 'tea' }, { name: 'milk' }]);
    const limited = await coll.find({ qty: { $gte: 2 } }).sort('qty').limit(1).map((d) => d.name).toArray();
    assert.deepEqual(limited, ['tea']);
    const seen = [];
    for await (const found of coll.find({}, { sort: { qty: 1 } })) seen.push(found.qty);
    assert.deepEqual(seen, [1, 2, 5]);
  });

  it('inserts more than the bson package buffers at once (24 documents of 1 MB)', BOUND, async () => {
    const coll = db.collection('insert_large');
    const payload = 'x'.repeat(1024 * 1024);
    const result = await coll.insertMany(Array.from({ length: 24 }, (_, n) => ({ n, payload })));
    assert.equal(result.insertedCount, 24);
    assert.equal(await coll.countDocuments({}), 24);
  });

  it('updates, replaces and deletes', BOUND, async () => {
    const coll = db.collection('update_delete');
    await coll.insertMany([1, 2, 3, 4].map((n) => ({ n, even: n % 2 === 0 })));
    const one = await coll.updateOne({ n: 1 }, { $set: { tag: 'a' } });
    assert.deepEqual([one.matchedCount, one.modifiedCount, one.upsertedCount], [1, 1, 0]);
    const many = await coll.updateMany({ even: true }, { $inc: { n: 10 } });
    assert.deepEqual([many.matchedCount, many.modifiedCount], [2, 2]);
    const pipeline = await coll.updateOne({ n: 3 }, [{ $set: { double: { $multiply: ['$n', 2] } } }]);
    assert.equal(pipeline.modifiedCount, 1);
    assert.equal((await coll.findOne({ n: 3 })).double, 6);
    const upsert = await coll.updateOne({ n: 99 }, { $set: { fresh: true } }, { upsert: true });
    assert.equal(upsert.upsertedCount, 1);
    assert.ok(upsert.upsertedId instanceof ObjectId);
    const replaced = await coll.replaceOne({ n: 1 }, { n: 1, replaced: true });
    assert.equal(replaced.modifiedCount, 1);
    assert.deepEqual(await coll.findOne({ n: 1 }, { projection: { _id: 0 } }), { n: 1, replaced: true });
    assert.equal((await coll.deleteOne({ n: 99 })).deletedCount, 1);
    assert.equal((await coll.deleteMany({ even: true })).deletedCount, 2);
    assert.equal(await coll.countDocuments(), 2);
  });

  it('findOneAndUpdate, findOneAndReplace, findOneAndDelete', BOUND, async () => {
    const coll = db.collection('find_and_modify');
    await coll.insertOne({ _id: 1, n: 1 });
    assert.deepEqual(await coll.findOneAndUpdate({ _id: 1 }, { $inc: { n: 1 } }), { _id: 1, n: 1 });
    const after = await coll.findOneAndUpdate({ _id: 1 }, { $inc: { n: 1 } }, { returnDocument: 'after' });
    assert.deepEqual(after, { _id: 1, n: 3 });
    assert.equal(await coll.findOneAndUpdate({ _id: 2 }, { $set: { n: 0 } }), null);
    const replaced = await coll.findOneAndReplace({ _id: 1 }, { m: 1 }, { returnDocument: 'after' });
    assert.deepEqual(replaced, { _id: 1, m: 1 });
    assert.deepEqual(await coll.findOneAndDelete({ _id: 1 }), { _id: 1, m: 1 });
    assert.equal(await coll.countDocuments({}), 0);
  });

  it('returns documents with $-prefixed field names as stored (BSON is not extended JSON)', BOUND, async () => {
    const coll = db.collection('dollar_fields');
    const stream = coll.watch([{ $match: { operationType: 'insert' } }], { maxAwaitTimeMS: 100 });
    // Opened now (a change stream opens on its first read), before the inserts.
    assert.equal(await stream.tryNext(), null);
    const stored = [
      { _id: 1, n: { $numberLong: '12' } },
      { _id: 2, n: { $date: 5 } },
      { _id: 3, n: { $oid: '0123456789abcdef01234567' } },
      { _id: 4, n: { a: 1, $numberLong: '12' } },
      { _id: 5, n: { $oid: 'not-an-oid' } },
      { _id: 6, list: [{ $date: { $numberLong: 'x' } }, [{ x: 1, $uuid: 1 }]], $numberDecimal: 'x' },
    ];
    for (const document of stored) await coll.insertOne(document);
    assert.deepEqual(await coll.find({}).toArray(), stored);
    assert.deepEqual(await coll.aggregate([{ $match: {} }]).toArray(), stored);
    for (const document of stored) {
      assert.deepEqual(await coll.findOne({ _id: document._id }), document);
      assert.deepEqual(await coll.findOneAndUpdate({ _id: document._id }, { $set: { seen: true } }), document);
      const { $numberDecimal, ...replacement } = { ...document, seen: 2 };
      assert.deepEqual(
        await coll.findOneAndReplace({ _id: document._id }, replacement, { returnDocument: 'after' }),
        replacement,
      );
      assert.deepEqual(await coll.findOneAndDelete({ _id: document._id }), replacement);
    }
    for (const document of stored) {
      const event = await stream.next();
      assert.equal(event.operationType, 'insert');
      assert.deepEqual(event.fullDocument, document);
    }
    await stream.close();
  });

  it('aggregates, counts and lists distinct values', BOUND, async () => {
    const coll = db.collection('aggregate');
    await coll.insertMany([
      { kind: 'a', v: 1 },
      { kind: 'b', v: 2 },
      { kind: 'a', v: 3 },
    ]);
    const groups = await coll.aggregate([{ $group: { _id: '$kind', total: { $sum: '$v' } } }, { $sort: { _id: 1 } }]).toArray();
    assert.deepEqual(groups, [
      { _id: 'a', total: 4 },
      { _id: 'b', total: 2 },
    ]);
    assert.equal(await coll.countDocuments({ kind: 'a' }), 2);
    assert.equal(await coll.countDocuments({}, { skip: 1, limit: 1 }), 1);
    assert.equal(await coll.estimatedDocumentCount(), 3);
    assert.deepEqual((await coll.distinct('kind')).sort(), ['a', 'b']);
    assert.deepEqual(await coll.distinct('v', { kind: 'a' }), [1, 3]);
    const documents = await db.aggregate([{ $documents: [{ x: 1 }, { x: 2 }] }]).toArray();
    assert.deepEqual(documents, [{ x: 1 }, { x: 2 }]);
  });

  it('creates indexes', BOUND, async () => {
    const coll = db.collection('indexes');
    assert.equal(await coll.createIndex({ a: 1, b: -1 }), 'a_1_b_-1');
    assert.equal(await coll.createIndex({ email: 1 }, { unique: true, name: 'by_email' }), 'by_email');
    const { cursor } = await db.command({ listIndexes: 'indexes' });
    const unique = cursor.firstBatch.find((index) => index.name === 'by_email');
    assert.equal(unique.unique, true);
    await coll.insertOne({ email: 'x@example.com' });
    await assert.rejects(coll.insertOne({ email: 'x@example.com' }), (error) => {
      assert.ok(error instanceof MongoServerError);
      assert.equal(error.code, 11000);
      assert.match(error.message, /duplicate key/);
      return true;
    });
  });

  it('reads a find over several getMore batches', BOUND, async () => {
    const coll = db.collection('batches');
    const total = 250;
    await coll.insertMany(Array.from({ length: total }, (_, i) => ({ i })));
    const counter = countingTransport('getMore');
    const counted = new MongoClient(server.uri, { ...OPTIONS, transport: counter.transport });
    try {
      const cursor = counted.db('npm_tests').collection('batches').find({}, { batchSize: 20, sort: { i: 1 } });
      const all = await cursor.toArray();
      assert.equal(all.length, total);
      assert.deepEqual(
        all.map((d) => d.i),
        Array.from({ length: total }, (_, i) => i),
      );
      // 20 in the first batch, then 12 getMores of up to 20.
      assert.equal(counter.count, Math.ceil((total - 20) / 20));
      // for await over batches, leaving early closes the cursor.
      let seen = 0;
      for await (const _ of counted.db('npm_tests').collection('batches').find({}, { batchSize: 7 })) {
        if (++seen === 30) break;
      }
      assert.equal(seen, 30);
    } finally {
      await counted.close();
    }
  });

  it('round-trips BSON types as the bson package maps them', BOUND, async () => {
    const coll = db.collection('bson_types');
    const date = new Date('2024-05-06T07:08:09.123Z');
    const document = {
      _id: new ObjectId(),
      long: Long.fromString('9007199254740993'),
      smallLong: Long.fromNumber(5),
      decimal: Decimal128.fromString('1234.5678901234567890123456789'),
      binary: new Binary(new Uint8Array([1, 2, 3, 250]), 0),
      uuid: new Binary(new Uint8Array(16).fill(7), 4),
      date,
      timestamp: new Timestamp({ t: 1700000000, i: 3 }),
      int: new Int32(42),
      double: new Double(2.5),
      nested: { list: [1, 'two', null, { three: true }] },
      regex: /^ab+c/i,
    };
    await coll.insertOne(document);
    const found = await coll.findOne({ _id: document._id });
    assert.ok(found._id.equals(document._id));
    assert.ok(found.long instanceof Long);
    assert.equal(found.long.toString(), '9007199254740993');
    assert.equal(found.smallLong, 5, 'a Long that fits a number comes back as a number (promoteLongs)');
    assert.ok(found.decimal instanceof Decimal128);
    assert.equal(found.decimal.toString(), '1234.5678901234567890123456789');
    assert.ok(found.binary instanceof Binary);
    assert.deepEqual([...found.binary.buffer], [1, 2, 3, 250]);
    assert.equal(found.uuid.sub_type, 4);
    assert.ok(found.date instanceof Date);
    assert.equal(found.date.getTime(), date.getTime());
    assert.ok(found.timestamp instanceof Timestamp);
    assert.equal(found.timestamp.t, 1700000000);
    assert.equal(found.timestamp.i, 3);
    assert.equal(found.int, 42);
    assert.equal(found.double, 2.5);
    assert.deepEqual(found.nested, document.nested);
    assert.equal(found.regex.source, '^ab+c');
    // And as filters.
    assert.equal(await coll.countDocuments({ long: Long.fromString('9007199254740993'), date }), 1);
  });

  it('bounds an operation by its own timeoutMS option', BOUND, async (t) => {
    // The server holds the next find for 1 s; the operation's timeoutMS is 200 ms.
    await client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['find'], blockConnection: true, blockTimeMS: 1000 },
    });
    const started = performance.now();
    await assert.rejects(db.collection('timeouts').findOne({}, { timeoutMS: 200 }), (error) => {
      const ms = performance.now() - started;
      t.diagnostic(`elapsed ${ms.toFixed(1)} ms: ${error.message}`);
      assert.ok(error instanceof MongoOperationTimeoutError, `${error.stack}`);
      assert.ok(error instanceof MongoError);
      assert.match(error.message, /timeoutMS 200 ms/);
      assert.ok(ms >= 190 && ms < 900, `${ms} ms`);
      return true;
    });
    // The client goes on working.
    assert.equal(await db.collection('timeouts').findOne({}, { timeoutMS: 5000 }), null);
  });

  it('surfaces a server error as MongoServerError with code, codeName and labels', BOUND, async () => {
    await client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['insert'], errorCode: 2, errorLabels: ['TestLabel'] },
    });
    await assert.rejects(db.collection('errors').insertOne({ x: 1 }), (error) => {
      assert.ok(error instanceof MongoServerError);
      assert.ok(error instanceof MongoError);
      assert.ok(error instanceof Error);
      assert.equal(error.name, 'MongoServerError');
      assert.equal(error.code, 2);
      assert.equal(error.codeName, 'BadValue');
      assert.deepEqual(error.errorLabels, ['TestLabel']);
      assert.ok(error.hasErrorLabel('TestLabel'));
      assert.equal(error.errorResponse.ok, 0);
      return true;
    });
    await assert.rejects(db.command({ noSuchCommand: 1 }), (error) => {
      assert.ok(error instanceof MongoServerError);
      assert.equal(error.code, 59);
      assert.equal(error.codeName, 'CommandNotFound');
      return true;
    });
  });

  it('keeps a cursor whose getMore failed open until it is closed or read to its end', BOUND, async () => {
    const coll = db.collection('getmore_errors');
    await coll.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const failGetMore = () =>
      client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: { times: 1 },
        data: { failCommands: ['getMore'], errorCode: 7 },
      });
    // As the Node driver's: the read that sent the getMore rejects with the server's
    // error. Unlike it, the cursor stays open (load-balancers.md, "Behaviour With
    // Cursors": a load-balanced one keeps its connection until closed); the next read
    // finds it ended and closes it.
    const read = coll.find({}).batchSize(1);
    assert.deepEqual((await read.next()).n, 1);
    await failGetMore();
    await assert.rejects(read.next(), (error) => error instanceof MongoServerError && error.code === 7);
    assert.equal(read.closed, false);
    let closes = 0;
    read.on('close', () => (closes += 1));
    assert.equal(await read.next(), null);
    assert.equal(read.closed, true);
    assert.equal(closes, 1);
    // close() after the failure resolves, and emits 'close' once.
    const closed = coll.find({}).batchSize(1);
    assert.deepEqual((await closed.next()).n, 1);
    await failGetMore();
    await assert.rejects(closed.next(), (error) => error.code === 7);
    closed.on('close', () => (closes += 1));
    await closed.close();
    await closed.close();
    assert.equal(closed.closed, true);
    assert.equal(closes, 2);
    // toArray closes the cursor on the way out, its error the caller's.
    const all = coll.find({}).batchSize(1);
    await failGetMore();
    await assert.rejects(all.toArray(), (error) => error.code === 7);
    assert.equal(all.closed, true);
  });

  it('refuses to change a cursor already read, as MongoCursorInUseError', BOUND, async () => {
    const coll = db.collection('cursor_in_use');
    await coll.insertMany([{ n: 1 }, { n: 2 }]);
    const cursor = coll.find({}).batchSize(1);
    assert.notEqual(await cursor.next(), null);
    assert.throws(() => cursor.sort('n'), (error) => {
      assert.ok(error instanceof MongoCursorInUseError);
      assert.ok(error instanceof MongoAPIError);
      assert.ok(error instanceof MongoDriverError);
      assert.equal(error.name, 'MongoCursorInUseError');
      return true;
    });
    await cursor.close();
  });

  it('reports an unreachable server as MongoServerSelectionError', BOUND, async () => {
    const unreachable = new MongoClient('mongodb://127.0.0.1:1/', { serverSelectionTimeoutMS: 300 });
    await assert.rejects(unreachable.connect(), (error) => {
      assert.ok(error instanceof MongoServerSelectionError);
      assert.match(error.message, /127\.0\.0\.1:1/);
      return true;
    });
    await unreachable.close();
  });
});

/** The command document of each OP_MSG (2013) or OP_QUERY (2004) message in `bytes`. */
function commands(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found = [];
  for (let at = 0; at + 16 <= bytes.length; at += view.getInt32(at, true)) {
    const opCode = view.getInt32(at + 12, true);
    let body = at + 16;
    if (opCode === 2013) body += 5; // flagBits, then a kind-0 section
    else if (opCode === 2004) body = bytes.indexOf(0, body + 4) + 9; // flags, collection name, skip, return
    else continue;
    found.push(deserialize(bytes.subarray(body, body + view.getInt32(body, true))));
  }
  return found;
}

/**
 * A transport that changes the first character of the SCRAM server signature (`v=`) in
 * the reply to the client's saslContinue, as a server that does not know the password
 * would send it.
 */
function forgingTransport() {
  return {
    async connect(host, port, tls) {
      const duplex = await nodeTransport.connect(host, port, tls);
      let awaitingSignature = false;
      return {
        async read() {
          const bytes = await duplex.read();
          const at = awaitingSignature && bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf('v=') : -1;
          if (at >= 0) {
            bytes[at + 2] = bytes[at + 2] === 0x41 ? 0x42 : 0x41; // 'A' or 'B': still base64
            awaitingSignature = false;
          }
          return bytes;
        },
        write(bytes) {
          if (commands(bytes).some((command) => 'saslContinue' in command)) awaitingSignature = true;
          return duplex.write(bytes);
        },
        close: () => duplex.close(),
      };
    },
  };
}

/** A transport that records every command the client sends (in `sent`). */
function recordingTransport() {
  const recorder = { sent: [] };
  recorder.transport = {
    async connect(host, port, tls) {
      const duplex = await nodeTransport.connect(host, port, tls);
      return {
        read: () => duplex.read(),
        write(bytes) {
          recorder.sent.push(...commands(bytes));
          return duplex.write(bytes);
        },
        close: () => duplex.close(),
      };
    },
  };
  return recorder;
}

describe('FaaS environment', BOUND, () => {
  let server;

  before(async () => {
    server = await startServer();
  });

  after(async () => {
    await server?.stop();
  });

  it("reports the AWS Lambda variables of process.env in the handshake's client.env", BOUND, async () => {
    const variables = {
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs20.x',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024',
      AWS_REGION: 'us-east-2',
    };
    const recorder = recordingTransport();
    const saved = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
    Object.assign(process.env, variables);
    const client = new MongoClient(server.uri, { ...OPTIONS, transport: recorder.transport });
    try {
      assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
    } finally {
      await client.close();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    // The handshakes: the hellos with client metadata.
    const hellos = recorder.sent.filter((command) => 'client' in command);
    assert.ok(hellos.length >= 1, 'no handshake seen');
    for (const hello of hellos) {
      assert.deepEqual(hello.client.env, { name: 'aws.lambda', region: 'us-east-2', memory_mb: 1024 });
    }
  });
});

describe('SCRAM-SHA-256', BOUND, () => {
  let server;

  before(async () => {
    server = await startAuthServer('npm-user', 'pa:ss@wørd');
  });

  after(async () => {
    await server?.stop();
  });

  it('authenticates with the URI credentials and with options.auth', BOUND, async () => {
    const password = encodeURIComponent('pa:ss@wørd');
    const inUri = new MongoClient(`mongodb://npm-user:${password}@127.0.0.1:${server.port}/?authMechanism=SCRAM-SHA-256`, OPTIONS);
    try {
      const { insertedId } = await inUri.db('app').collection('c').insertOne({ a: 1 });
      assert.ok(insertedId instanceof ObjectId);
    } finally {
      await inUri.close();
    }
    const inOptions = new MongoClient(server.uri, { ...OPTIONS, auth: { username: 'npm-user', password: 'pa:ss@wørd' } });
    try {
      assert.equal(await inOptions.db('app').collection('c').countDocuments(), 1);
    } finally {
      await inOptions.close();
    }
  });

  it('connect() authenticates without a command of its own: the handshake and SASL only', BOUND, async () => {
    const recorder = recordingTransport();
    const client = new MongoClient(server.uri, { ...OPTIONS, transport: recorder.transport, auth: { username: 'npm-user', password: 'pa:ss@wørd' } });
    try {
      await client.connect();
      const names = recorder.sent.map((command) => Object.keys(command)[0]);
      assert.ok(names.includes('saslContinue'), `connect() did not authenticate: ${names}`);
      for (const name of names) assert.ok(['hello', 'isMaster', 'ismaster', 'saslStart', 'saslContinue'].includes(name), `connect() sent ${name}: ${names}`);
      await client.db('app').collection('c').findOne({});
      assert.ok(recorder.sent.some((command) => 'find' in command), 'the recorder saw no find');
    } finally {
      await client.close();
    }
  });

  it('derives the SCRAM-SHA-1 and SCRAM-SHA-256 keys through WebCrypto', BOUND, async () => {
    const admin = new MongoClient(server.uri, { ...OPTIONS, auth: { username: 'npm-user', password: 'pa:ss@wørd' } });
    try {
      await admin.db('admin').command({ createUser: 'both', pwd: 'pencil', roles: ['root'], mechanisms: ['SCRAM-SHA-1', 'SCRAM-SHA-256'] });
    } finally {
      await admin.close();
    }
    // Every deriveBits call is recorded; the package looks crypto.subtle up at each
    // derivation, so the wrapper sees its calls.
    const calls = [];
    const subtle = globalThis.crypto.subtle;
    const deriveBits = subtle.deriveBits;
    subtle.deriveBits = function (algorithm, ...rest) {
      calls.push({ name: algorithm.name, hash: algorithm.hash, iterations: algorithm.iterations });
      return deriveBits.call(this, algorithm, ...rest);
    };
    try {
      for (const [mechanism, hash] of [['SCRAM-SHA-1', 'SHA-1'], ['SCRAM-SHA-256', 'SHA-256']]) {
        calls.length = 0;
        const client = new MongoClient(`mongodb://both:pencil@127.0.0.1:${server.port}/?authMechanism=${mechanism}`, OPTIONS);
        try {
          assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
        } finally {
          await client.close();
        }
        // One derivation: the client's key cache serves its other connections.
        assert.equal(calls.length, 1, `${mechanism}: ${JSON.stringify(calls)}`);
        assert.equal(calls[0].name, 'PBKDF2');
        assert.equal(calls[0].hash, hash);
        assert.ok(calls[0].iterations >= 4096, `${mechanism}: ${calls[0].iterations} iterations`);
      }
    } finally {
      delete subtle.deriveBits;
    }
    assert.equal(subtle.deriveBits, deriveBits);
  });

  it('reports a wrong server signature as MongoRuntimeError', BOUND, async () => {
    const client = new MongoClient(server.uri, { ...OPTIONS, transport: forgingTransport(), auth: { username: 'npm-user', password: 'pa:ss@wørd' } });
    try {
      await assert.rejects(client.connect(), (error) => {
        assert.ok(error instanceof MongoRuntimeError, `${error.name}: ${error.message}`);
        assert.ok(error instanceof MongoDriverError);
        assert.equal(error.name, 'MongoRuntimeError');
        assert.match(error.message, /signature/);
        return true;
      });
    } finally {
      await client.close();
    }
  });

  it('refuses a wrong password and an unauthenticated client', BOUND, async () => {
    const wrong = new MongoClient(server.uri, { ...OPTIONS, auth: { username: 'npm-user', password: 'nope' } });
    await assert.rejects(wrong.connect(), (error) => {
      assert.ok(error instanceof MongoServerError);
      assert.equal(error.code, 18);
      return true;
    });
    await wrong.close();
    const anonymous = new MongoClient(server.uri, OPTIONS);
    try {
      await assert.rejects(anonymous.db('app').collection('c').findOne({}), (error) => {
        assert.ok(error instanceof MongoServerError);
        assert.equal(error.code, 13);
        return true;
      });
    } finally {
      await anonymous.close();
    }
  });
});

describe('idle connections', BOUND, () => {
  let server;

  before(async () => {
    server = await startServer();
  });

  after(async () => {
    await server?.stop();
  });

  it('replaces a pooled connection closed while it sat idle instead of failing the next command', BOUND, async () => {
    // Every connection the transport opens, and whether it carried a ping (the pool's
    // does; the monitor's do not).
    const opened = [];
    const transport = {
      async connect(host, port, tls) {
        const duplex = await nodeTransport.connect(host, port, tls);
        const connection = { duplex, pinged: false };
        opened.push(connection);
        return {
          read: () => duplex.read(),
          write(bytes) {
            if (commands(bytes).some((command) => 'ping' in command)) connection.pinged = true;
            return duplex.write(bytes);
          },
          close: () => duplex.close(),
          isOpenAndIdle: () => duplex.isOpenAndIdle(),
        };
      },
    };
    const client = new MongoClient(server.uri, { ...OPTIONS, transport });
    const closed = [];
    client.on('connectionClosed', (event) => closed.push(event.reason));
    const now = performance.now;
    try {
      assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
      const pooled = opened.filter((connection) => connection.pinged);
      assert.equal(pooled.length, 1);
      // Ended as by the server closing it: the duplex now says it is not open.
      pooled[0].duplex.close();
      assert.equal(pooled[0].duplex.isOpenAndIdle(), false);
      // The pool asks connections idle for a second: the clock is put ahead rather than
      // waited on (the driver reads performance.now()).
      performance.now = () => now.call(performance) + 2000;
      // Not retried: on the closed connection it would fail.
      assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
      assert.deepEqual(closed, ['error']);
      assert.equal(opened.filter((connection) => connection.pinged).length, 2);
    } finally {
      performance.now = now;
      await client.close();
    }
  });
});
