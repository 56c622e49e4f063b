// The Node.js driver's surface that libraries (Mongoose) use beyond the spec tests:
// the `mongodb/lib/*` subpaths, the object-only MongoClient options, `undefined`
// written as null unless `ignoreUndefined`, the client as an EventEmitter,
// `client.topology` / `client.s`, `session.serverSession`, per-operation BSON options,
// `explain` on find and the client-side size check. Where the official driver is in
// the tool cache (test/libraries/run.js installs it), each scenario runs on it too and the
// answers must be the same.
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as anymongo from '../js/node.js';
import { nodeTransport } from '../js/transports/node.js';
import { officialDriverPath, startServer } from './server.js';

const BOUND = { timeout: 60_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };
const require = createRequire(import.meta.url);
const officialPath = officialDriverPath();
const official = officialPath ? require(officialPath) : null;
const NO_OFFICIAL = !official && 'the official driver is not in the cache (test/libraries/run.js or ./run.sh bench installs it)';

/** The drivers a scenario runs on: anymongo, and the official one when cached. */
const drivers = () => [['anymongo', anymongo], ...(official ? [['official', official]] : [])];

describe('the mongodb/lib/* subpaths', () => {
  it('lib/bson gives the BSON types and option helpers, the same classes as the main entry', async () => {
    const esm = await import('anymongo/lib/bson');
    const cjs = require('anymongo/lib/bson');
    for (const lib of [esm, cjs]) {
      for (const name of ['Binary', 'BSON', 'BSONError', 'Decimal128', 'Double', 'Int32', 'Long', 'ObjectId', 'UUID', 'EJSON']) {
        assert.ok(lib[name], `lib/bson exports ${name}`);
      }
      assert.deepEqual(lib.resolveBSONOptions({ promoteLongs: false }, { bsonOptions: { useBigInt64: true } }).promoteLongs, false);
      assert.equal(lib.resolveBSONOptions({}, { bsonOptions: { useBigInt64: true } }).useBigInt64, true);
      assert.deepEqual(lib.pluckBSONSerializeOptions({ ignoreUndefined: true, raw: true }), {
        checkKeys: undefined,
        serializeFunctions: undefined,
        ignoreUndefined: true,
      });
    }
    assert.equal(esm.ObjectId, anymongo.ObjectId);
    assert.equal(cjs.ObjectId, require('anymongo').ObjectId);
  });

  it('lib/bulk/common gives the bulk write classes of the main entry, in ESM and CommonJS', async () => {
    const esm = await import('anymongo/lib/bulk/common');
    const cjs = require('anymongo/lib/bulk/common');
    assert.equal(esm.BulkWriteResult, anymongo.BulkWriteResult);
    assert.equal(esm.MongoBulkWriteError, anymongo.MongoBulkWriteError);
    assert.equal(cjs.BulkWriteResult, require('anymongo').BulkWriteResult);
    assert.equal(cjs.MongoBulkWriteError, require('anymongo').MongoBulkWriteError);
    assert.deepEqual({ ...esm.BatchType }, { INSERT: 1, UPDATE: 2, DELETE: 3 });
  });

  it('exports the names the official driver exports there', { skip: NO_OFFICIAL }, () => {
    const theirs = require(path.join(officialPath, 'lib', 'bson'));
    const ours = require('anymongo/lib/bson');
    // Their internal byte helpers (readInt32LE...) are theirs; every BSON type and helper a library uses is here.
    const internal = new Set(['ByteUtils', 'NumberUtils', 'readInt32LE', 'readUint8', 'setUint32LE', 'parseToElementsToArray']);
    const missing = Object.keys(theirs).filter((name) => !internal.has(name) && !(name in ours));
    assert.deepEqual(missing, []);
  });
});

describe('MongoClient options', () => {
  it('accepts every object-only option of the Node driver', () => {
    for (const [, driver] of drivers()) {
      const client = new driver.MongoClient('mongodb://127.0.0.1:1/app', {
        driverInfo: { name: 'Mongoose', version: '9.0.0' },
        pkFactory: { createPk: () => 1 },
        ignoreUndefined: true,
        promoteLongs: false,
        promoteValues: true,
        promoteBuffers: true,
        useBigInt64: false,
        bsonRegExp: true,
        raw: false,
        enableUtf8Validation: false,
        monitorCommands: true,
        serverApi: { version: '1' },
        family: 4,
        noDelay: true,
        maxPoolSize: 7,
        authMechanismProperties: { SERVICE_NAME: 'mongodb' },
        compressors: ['none'],
      });
      assert.equal(client.bsonOptions.promoteLongs, false);
      assert.equal(client.bsonOptions.ignoreUndefined, true);
    }
  });

  it('refuses an unknown option as the official driver does', () => {
    const errors = drivers().map(([, driver]) => {
      try {
        new driver.MongoClient('mongodb://127.0.0.1:1', { notAnOption: 1, norThis: 2 });
        return null;
      } catch (error) {
        return [error.name, error.message];
      }
    });
    assert.deepEqual(errors[0], ['MongoParseError', 'options notanoption, northis are not supported']);
    for (const each of errors) assert.deepEqual(each, errors[0]);
  });

  it('refuses autoEncryption with a clear error', () => {
    assert.throws(() => new anymongo.MongoClient('mongodb://127.0.0.1:1', { autoEncryption: { keyVaultNamespace: 'a.b' } }), {
      name: 'MongoCompatibilityError',
      message: /autoEncryption .* not supported/,
    });
  });

  it('gives client.s as libraries read it', () => {
    const states = drivers().map(([, driver]) => {
      const client = new driver.MongoClient('mongodb://127.0.0.1:27018,localhost/shop?replicaSet=rs');
      const { url, options } = client.s;
      return { url, hosts: options.hosts.map(({ host, port }) => [host, port]), names: options.hosts.map(String), dbName: options.dbName };
    });
    assert.deepEqual(states[0], {
      url: 'mongodb://127.0.0.1:27018,localhost/shop?replicaSet=rs',
      hosts: [
        ['127.0.0.1', 27018],
        ['localhost', 27017],
      ],
      names: ['127.0.0.1:27018', 'localhost:27017'],
      dbName: 'shop',
    });
    for (const each of states) assert.deepEqual(each, states[0]);
  });

  it('is an EventEmitter of node:events', async () => {
    const client = new anymongo.MongoClient('mongodb://127.0.0.1:1');
    assert.ok(client instanceof EventEmitter);
    assert.equal(client.setMaxListeners(0), client);
    assert.equal(client.getMaxListeners(), 0);
    const seen = once(client, 'custom');
    client.emit('custom', 42);
    assert.deepEqual(await seen, [42]);
  });
});

describe('the portable EventEmitter (runtimes without node:events)', () => {
  it('has what libraries call on a client', () => {
    const emitter = new anymongo.PortableEventEmitter();
    const calls = [];
    emitter.on('e', () => calls.push('second'));
    emitter.prependListener('e', () => calls.push('first'));
    assert.equal(emitter.setMaxListeners(0), emitter);
    assert.equal(emitter.getMaxListeners(), 0);
    emitter.emit('e');
    assert.deepEqual(calls, ['first', 'second']);
    assert.equal(emitter.rawListeners('e').length, 2);
  });
});

describe('against SecantusDB', BOUND, () => {
  let server;

  before(async () => {
    server = await startServer();
  });

  after(async () => {
    await server?.stop();
  });

  /** Runs `scenario(MongoClient, collectionName)` on each driver, with a fresh collection; their answers must be equal. */
  async function same(name, scenario, options = {}) {
    const answers = [];
    for (const [driverName, driver] of drivers()) {
      const client = new driver.MongoClient(server.uri, { ...OPTIONS, ...options });
      try {
        await client.connect();
        const db = client.db('node_surface');
        const collection = `${name}_${driverName}`;
        await db.collection(collection).drop().catch(() => {});
        answers.push([driverName, await scenario(client, db, collection, driver)]);
      } finally {
        await client.close();
      }
    }
    for (const [driverName, answer] of answers.slice(1)) {
      assert.deepEqual(answer, answers[0][1], `${driverName} answers as anymongo`);
    }
    return answers[0][1];
  }

  const strip = (documents) => documents.map(({ _id, ...rest }) => rest);

  it('deleteOne({ _id: undefined }) deletes nothing; with ignoreUndefined, the filter is {}', BOUND, async () => {
    const answer = await same('delete_undefined', async (client, db, name) => {
      const coll = db.collection(name);
      await coll.insertMany([{ a: 1 }, { a: 2 }]);
      const strict = await coll.deleteOne({ _id: undefined });
      const many = await coll.deleteMany({ a: undefined });
      const ignoring = await coll.deleteOne({ _id: undefined }, { ignoreUndefined: true });
      return [strict.deletedCount, many.deletedCount, ignoring.deletedCount, await coll.countDocuments()];
    });
    assert.deepEqual(answer, [0, 0, 1, 1]);
  });

  it('writes undefined as null in documents, updates, filters, pipelines and commands', BOUND, async () => {
    const answer = await same('null_everywhere', async (client, db, name) => {
      const coll = db.collection(name);
      await coll.insertOne({ k: 1, a: undefined, nested: { b: undefined }, list: [undefined] });
      await coll.insertMany([{ k: 2, a: undefined }]);
      await coll.updateOne({ k: 1 }, { $set: { c: undefined } });
      await coll.replaceOne({ k: 2 }, { k: 2, d: undefined });
      await coll.bulkWrite([{ insertOne: { document: { k: 3, e: undefined } } }, { updateOne: { filter: { k: 3 }, update: { $set: { f: undefined } } } }]);
      const found = await coll.find({ a: undefined }, { sort: { k: 1 }, projection: undefined }).toArray();
      const matched = await coll.aggregate([{ $match: { k: 1, c: undefined } }, { $project: { _id: 0, k: 1 } }]).toArray();
      const counted = await db.command({ count: name, query: { d: undefined } });
      const one = await coll.findOneAndUpdate({ k: 3, e: undefined }, { $set: { g: undefined } }, { returnDocument: 'after', upsert: undefined });
      return {
        all: strip(await coll.find({}, { sort: { k: 1 } }).toArray()),
        found: strip(found),
        matched,
        counted: counted.n,
        one: strip([one]),
      };
    });
    assert.deepEqual(answer.all, [
      { k: 1, a: null, nested: { b: null }, list: [null], c: null },
      { k: 2, d: null },
      { k: 3, e: null, f: null, g: null },
    ]);
  });

  it('honours ignoreUndefined at the client, database, collection and operation level', BOUND, async () => {
    const answer = await same('ignore_levels', async (client, db, name, driver) => {
      const ignoring = new driver.MongoClient(server.uri, { ...OPTIONS, ignoreUndefined: true });
      try {
        const levels = [
          ignoring.db('node_surface').collection(name),
          client.db('node_surface', { ignoreUndefined: true }).collection(name),
          db.collection(name, { ignoreUndefined: true }),
        ];
        for (const [level, coll] of levels.entries()) await coll.insertOne({ level, a: undefined });
      } finally {
        await ignoring.close();
      }
      await db.collection(name).insertOne({ level: 3, a: undefined }, { ignoreUndefined: true });
      await db.collection(name).insertOne({ level: 4, a: undefined });
      return strip(await db.collection(name).find({}, { sort: { level: 1 } }).toArray());
    });
    assert.deepEqual(answer, [{ level: 0 }, { level: 1 }, { level: 2 }, { level: 3 }, { level: 4, a: null }]);
  });

  it('reads with the BSON options of the client, collection and operation', BOUND, async () => {
    const answer = await same('bson_options', async (client, db, name, driver) => {
      await db.collection(name).insertOne({ _id: 1, big: driver.Long.fromString('9007199254740993'), small: 5 });
      const kinds = (document) => [typeof document.big, document.big?.constructor?.name, String(document.big)];
      return [
        kinds(await db.collection(name).findOne({}, { useBigInt64: true })),
        kinds((await db.collection(name).find({}, { useBigInt64: true }).toArray())[0]),
        kinds(await db.collection(name, { promoteLongs: false }).findOne({})),
        kinds(await db.collection(name).findOne({})),
        kinds((await db.collection(name).aggregate([], { useBigInt64: true }).toArray())[0]),
      ];
    });
    assert.deepEqual(answer[0], ['bigint', 'BigInt', '9007199254740993']);
    assert.deepEqual(answer[2], ['object', 'Long', '9007199254740993']);
  });

  it('takes a pkFactory for the _id of inserts', BOUND, async () => {
    const answer = await same('pk_factory', async (client, db, name, driver) => {
      let next = 0;
      const pkFactory = { createPk: () => `id-${(next += 1)}` };
      const owner = new driver.MongoClient(server.uri, { ...OPTIONS, pkFactory });
      try {
        const coll = owner.db('node_surface').collection(name);
        const one = await coll.insertOne({ a: 1 });
        const many = await coll.insertMany([{ a: 2 }]);
        return [one.insertedId, many.insertedIds[0], await db.collection(name).countDocuments({ _id: 'id-1' })];
      } finally {
        await owner.close();
      }
    });
    assert.deepEqual(answer, ['id-1', 'id-2', 1]);
  });

  it('answers find and findOne with the plan when given explain', BOUND, async () => {
    const answer = await same('explain_option', async (client, db, name) => {
      const coll = db.collection(name);
      await coll.insertOne({ a: 1 });
      const plans = await coll.find({ a: 1 }, { explain: 'queryPlanner' }).toArray();
      const plan = await coll.findOne({ a: 1 }, { explain: true });
      return [plans.length, typeof plans[0].queryPlanner, typeof plan.queryPlanner];
    });
    assert.deepEqual(answer, [1, 'object', 'object']);
  });

  it('refuses a filter or document over the server size limit before sending it', BOUND, async () => {
    const sent = [];
    const answer = await same('oversized', async (client, db, name, driver) => {
      // The official driver emits commandStarted before it serializes (and fails).
      if (driver === anymongo) client.on('commandStarted', ({ commandName }) => commandName !== 'endSessions' && sent.push(commandName));
      const huge = 'x'.repeat(17 * 1024 * 1024);
      const coll = db.collection(name);
      const errors = [];
      for (const attempt of [() => coll.findOne({ huge }), () => coll.insertOne({ huge }), () => coll.deleteMany({ huge })]) {
        errors.push(await attempt().then(() => null, (caught) => caught.name));
      }
      return errors;
    }, { monitorCommands: true });
    assert.deepEqual(answer, ['RangeError', 'RangeError', 'RangeError']);
    assert.deepEqual(sent, []);
  });

  it('has client.topology from connect until close, kept by the SDAM events', BOUND, async () => {
    const answer = await same('topology', async (client, db) => {
      await db.command({ ping: 1 });
      const { description } = client.topology;
      return {
        type: description.type,
        setName: description.setName,
        servers: [...description.servers.values()].map((server) => server.type),
        heartbeat: client.topology.s.description.heartbeatFrequencyMS,
        isMap: description.servers instanceof Map,
      };
    });
    assert.deepEqual(answer, { type: 'ReplicaSetWithPrimary', setName: 'secantus', servers: ['RSPrimary'], heartbeat: 10000, isMap: true });
    const client = new anymongo.MongoClient(server.uri, OPTIONS);
    assert.equal(client.topology, undefined);
    await client.connect();
    assert.ok(client.topology);
    await client.close();
    assert.equal(client.topology, undefined);
  });

  it('gives a session its server session id', BOUND, async () => {
    await same('server_session', async (client, db, name) => {
      const session = client.startSession();
      try {
        await db.collection(name).findOne({}, { session });
        const { id } = session.serverSession;
        return [id.id.sub_type, id.id.length()];
      } finally {
        await session.endSession();
      }
    });
  });

  it('appends driverInfo to the handshake metadata', BOUND, async () => {
    const sent = [];
    const transport = {
      async connect(host, port, tls) {
        const duplex = await nodeTransport.connect(host, port, tls);
        return { read: () => duplex.read(), write: (bytes) => (sent.push(Buffer.from(bytes)), duplex.write(bytes)), close: () => duplex.close() };
      },
    };
    const client = new anymongo.MongoClient(server.uri, { ...OPTIONS, transport, driverInfo: { name: 'Mongoose', version: '9.13.2' } });
    try {
      await client.db('admin').command({ ping: 1 });
    } finally {
      await client.close();
    }
    const text = Buffer.concat(sent).toString('latin1');
    assert.match(text, /anymongo\|Mongoose/);
    assert.match(text, /\|9\.13\.2/);
  });
});
