// The Node driver surface Mongoose reads, item by item as issue 49 numbers the gaps
// (1-11): each test asks the driver under test and the official driver (loaded in the
// same process) the same question, and wants the same answer. Run with the official
// driver as the one under test, they check the question itself against the control.
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { BOUND, OPTIONS, dbName, requireLib, requireOfficial, uri } from './common.js';

const drivers = [
  ['official', requireOfficial],
  ['tested', requireLib],
];

describe('the Node driver surface of issue 49, against the official driver', BOUND, () => {
  const clients = [];

  /** A connected client of the driver `m`, closed after the tests. */
  async function connect(m, options = {}, at = uri) {
    const client = new m.MongoClient(at, { ...OPTIONS, ...options });
    clients.push(client);
    await client.connect();
    return client;
  }

  /**
   * Runs `probe({ m, req, name })` with the official driver, then with the one under
   * test (`req` requires from its install, `name` keeps their collections apart);
   * asserts that both answer the same, and returns the official answer.
   */
  async function sameAnswer(probe) {
    const answers = {};
    for (const [name, req] of drivers) answers[name] = await probe({ m: req('mongodb'), req, name });
    assert.deepStrictEqual(answers.tested, answers.official);
    return answers.official;
  }

  /** A collection of its own for each probe. */
  let serial = 0;
  const db = (client, name) => client.db(dbName('gaps')).collection(`${name}_${++serial}`);

  before(async () => {
    const client = await connect(requireOfficial('mongodb'));
    await client.db(dbName('gaps')).dropDatabase();
  });

  after(async () => {
    for (const client of clients) await client.close();
  });

  it('1: client.topology and its description', BOUND, async () => {
    const answer = await sameAnswer(async ({ m }) => {
      const client = await connect(m);
      return {
        type: client.topology?.description?.type,
        servers: client.topology?.description?.servers?.size,
        heartbeat: typeof client.topology?.s?.description?.heartbeatFrequencyMS,
      };
    });
    assert.equal(answer.type, 'ReplicaSetWithPrimary');
  });

  it('2: writeErrors are WriteError objects', BOUND, async () => {
    const answer = await sameAnswer(async ({ m, req }) => {
      const { WriteError } = req('mongodb/lib/bulk/common');
      const coll = db(await connect(m), 'write_error');
      await coll.insertOne({ _id: 1 });
      const error = await coll.insertMany([{ _id: 2 }, { _id: 1 }, { _id: 3 }], { ordered: false }).catch((e) => e);
      const [first] = error.writeErrors;
      return {
        name: error.name,
        writeError: first instanceof WriteError,
        index: first.index,
        code: first.code,
        err: { index: first.err?.index, code: first.err?.code },
        operation: first.getOperation?.(),
        json: Object.keys(first.toJSON?.() ?? {}).sort(),
        insertedCount: error.result?.insertedCount,
      };
    });
    assert.equal(answer.writeError, true);
    assert.deepEqual(answer.err, { index: 1, code: 11000 });
  });

  it('3: Collection.options() and isCapped()', BOUND, async () => {
    const answer = await sameAnswer(async ({ m, name }) => {
      const client = await connect(m);
      const capped = await client.db(dbName('gaps')).createCollection(`capped_${name}`, { capped: true, size: 4096 });
      const plain = db(client, 'plain');
      await plain.insertOne({});
      const missing = await client.db(dbName('gaps')).collection(`missing_${name}`).options().catch((e) => e.name);
      return { options: await capped.options(), capped: await capped.isCapped(), plain: await plain.isCapped(), missing };
    });
    assert.equal(answer.capped, true);
    assert.equal(answer.plain, false);
  });

  it('4: undefined is serialized as null unless ignoreUndefined', BOUND, async () => {
    const answer = await sameAnswer(async ({ m }) => {
      const client = await connect(m);
      const coll = db(client, 'undefined');
      await coll.insertMany([{ k: 1 }, { k: 2 }]);
      const deleted = (await coll.deleteOne({ _id: undefined })).deletedCount;
      await coll.insertOne({ k: 3, a: undefined });
      await coll.updateOne({ k: 1 }, { $set: { b: undefined } });
      const matched = await coll.aggregate([{ $match: { k: undefined } }, { $project: { _id: 0, k: 1 } }, { $sort: { k: 1 } }]).toArray();
      const ignoring = db(await connect(m, { ignoreUndefined: true }), 'ignore_undefined');
      await ignoring.insertOne({ k: 4, a: undefined });
      return {
        deleted,
        stored: await coll.find({}, { projection: { _id: 0 } }).sort({ k: 1 }).toArray(),
        matched,
        ignored: await ignoring.findOne({}, { projection: { _id: 0 } }),
      };
    });
    assert.equal(answer.deleted, 0);
    assert.deepEqual(answer.stored, [{ k: 1, b: null }, { k: 2 }, { k: 3, a: null }]);
    assert.deepEqual(answer.matched, []);
    assert.deepEqual(answer.ignored, { k: 4 });
  });

  it('5: BulkWriteResult.result and its constructor', BOUND, async () => {
    const answer = await sameAnswer(async ({ m, req }) => {
      const { BulkWriteResult } = req('mongodb/lib/bulk/common');
      const coll = db(await connect(m), 'bulk_result');
      const result = await coll.bulkWrite([{ insertOne: { document: { _id: 1 } } }, { updateOne: { filter: { _id: 1 }, update: { $set: { x: 1 } } } }]);
      const rebuilt = new BulkWriteResult(result.result, true);
      return {
        result: result.result && { nInserted: result.result.nInserted, nModified: result.result.nModified, ok: result.result.ok },
        rebuilt: { insertedCount: rebuilt.insertedCount, modifiedCount: rebuilt.modifiedCount, ok: rebuilt.ok },
      };
    });
    assert.deepEqual(answer.rebuilt, { insertedCount: 1, modifiedCount: 1, ok: 1 });
  });

  it('6: client.s.options.hosts, s.url and s.options.dbName', BOUND, async () => {
    const at = `${uri}gaps_db`;
    const answer = await sameAnswer(async ({ m }) => {
      const client = await connect(m, {}, at);
      const [host] = client.s?.options?.hosts ?? [];
      return { host: host?.host, port: host?.port, text: String(host), url: client.s?.url === at, dbName: client.s?.options?.dbName };
    });
    assert.equal(answer.host, '127.0.0.1');
    assert.equal(answer.dbName, 'gaps_db');
  });

  it('7: lastErrorObject with includeResultMetadata', BOUND, async () => {
    const answer = await sameAnswer(async ({ m }) => {
      const coll = db(await connect(m), 'last_error');
      const upsert = await coll.findOneAndUpdate({ k: 1 }, { $set: { v: 1 } }, { upsert: true, includeResultMetadata: true });
      const update = await coll.findOneAndUpdate({ k: 1 }, { $set: { v: 2 } }, { includeResultMetadata: true, projection: { _id: 0 } });
      const remove = await coll.findOneAndDelete({ k: 1 }, { includeResultMetadata: true, projection: { _id: 0 } });
      return {
        upsert: { ok: upsert.ok, n: upsert.lastErrorObject?.n, updatedExisting: upsert.lastErrorObject?.updatedExisting, upserted: typeof upsert.lastErrorObject?.upserted, value: upsert.value },
        update: { n: update.lastErrorObject?.n, updatedExisting: update.lastErrorObject?.updatedExisting, value: update.value },
        remove: { n: remove.lastErrorObject?.n, value: remove.value },
      };
    });
    assert.deepEqual(answer.update, { n: 1, updatedExisting: true, value: { k: 1, v: 1 } });
  });

  it('8: per-operation BSON options (useBigInt64) and pkFactory', BOUND, async () => {
    const answer = await sameAnswer(async ({ m }) => {
      let next = 0;
      const client = await connect(m, { pkFactory: { createPk: () => `pk-${++next}` } });
      const coll = db(client, 'bson_options');
      const { insertedId } = await coll.insertOne({ n: m.Long.fromNumber(5) });
      const big = await coll.findOne({}, { useBigInt64: true });
      const plain = await coll.findOne({});
      return { insertedId, big: typeof big.n, bigValue: String(big.n), plain: typeof plain.n };
    });
    assert.deepEqual(answer, { insertedId: 'pk-1', big: 'bigint', bigValue: '5', plain: 'number' });
  });

  it('9: change streams emit resumeTokenChanged', BOUND, async () => {
    const answer = await sameAnswer(async ({ m }) => {
      const client = await connect(m);
      const coll = db(client, 'resume_token');
      // From an operation of a session, so that no change is missed while the stream opens.
      const session = client.startSession();
      await coll.insertOne({ seed: true }, { session });
      const startAtOperationTime = session.operationTime;
      await session.endSession();
      const stream = coll.watch([], { startAtOperationTime });
      const tokens = [];
      stream.on('resumeTokenChanged', (token) => tokens.push(token));
      await coll.insertOne({ k: 1 });
      const change = await stream.next();
      await stream.close();
      return { emitted: tokens.length > 0, last: tokens.length > 0 && JSON.stringify(tokens.at(-1)) === JSON.stringify(change._id) };
    });
    assert.deepEqual(answer, { emitted: true, last: true });
  });

  it('10: error fields, serverSession, explain, the size check, cursor events', BOUND, async () => {
    const answer = await sameAnswer(async ({ m }) => {
      const client = await connect(m);
      const coll = db(client, 'various');
      await coll.createIndex({ email: 1 }, { unique: true });
      await coll.insertOne({ email: 'a' });
      const duplicate = await coll.insertOne({ email: 'a' }).catch((e) => e);

      const session = client.startSession();
      await coll.findOne({}, { session });
      const serverSession = { present: session.serverSession != null, sameId: session.serverSession?.id === session.id };
      await session.endSession();

      const explained = await coll.findOne({}, { explain: true });
      const explainedCursor = await coll.find({}, { explain: true }).toArray();

      // Over the 16 MiB (+16 KiB) a command may have: refused before the server sees it.
      const oversized = await coll.findOne({ big: 'x'.repeat(17 * 1024 * 1024) }).catch((e) => e);

      const cursor = coll.find({});
      const closed = once(cursor, 'close');
      await cursor.toArray();
      await closed;

      return {
        duplicate: { name: duplicate.name, code: duplicate.code, keyPattern: duplicate.keyPattern, keyValue: duplicate.keyValue, response: duplicate.errorResponse?.code },
        serverSession,
        explain: { findOne: 'queryPlanner' in (explained ?? {}), find: explainedCursor.length === 1 && 'queryPlanner' in explainedCursor[0] },
        oversized: { failed: oversized instanceof Error, fromServer: oversized instanceof m.MongoServerError },
        cursorIsEmitter: cursor instanceof EventEmitter,
      };
    });
    assert.deepEqual(answer.duplicate.keyValue, { email: 'a' });
    assert.deepEqual(answer.oversized, { failed: true, fromServer: false });
  });

  it('11: error classes take an error document, and withTransaction retries on its labels', BOUND, async () => {
    const answer = await sameAnswer(async ({ m, name }) => {
      const error = new m.MongoServerError({ errmsg: 'write conflict', code: 112, codeName: 'WriteConflict', errorLabels: ['TransientTransactionError'] });
      const client = await connect(m);
      const coll = db(client, 'txn_retry');
      await coll.insertOne({ seed: true });
      // The first insert of the transaction fails once with a transient label.
      await client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: { times: 1 },
        data: { failCommands: ['insert'], errorCode: 112, errorLabels: ['TransientTransactionError'], appName: `gaps-${name}` },
      });
      const labelled = await connect(m, { appName: `gaps-${name}` });
      let attempts = 0;
      const session = labelled.startSession();
      try {
        await session.withTransaction(async () => {
          attempts += 1;
          await labelled.db(coll.dbName).collection(coll.collectionName).insertOne({ in: 'txn' }, { session });
        });
      } finally {
        await session.endSession();
      }
      return {
        error: { message: error.message, code: error.code, codeName: error.codeName, labels: error.errorLabels, transient: error.hasErrorLabel('TransientTransactionError') },
        attempts,
        committed: await coll.countDocuments({ in: 'txn' }),
      };
    });
    assert.deepEqual(answer.error.labels, ['TransientTransactionError']);
    assert.equal(answer.attempts, 2);
    assert.equal(answer.committed, 1);
  });
});
