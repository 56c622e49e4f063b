// The objects libraries such as Mongoose read, as the official Node.js driver (7.x) has
// them (issue 49): WriteError objects in a MongoBulkWriteError, BulkWriteResult and its
// raw result, server errors made from error documents (their labels, their fields),
// findOneAndX's server reply with includeResultMetadata, Collection.options() and
// isCapped(), change streams' resumeTokenChanged, cursors as EventEmitters. Each
// scenario runs on anymongo against SecantusDB, and on the official driver (from the
// tool cache, when there: server.js, officialDriverPath) against the same server: the
// answers must be equal.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EJSON } from 'bson';
import * as anymongo from '../js/node.js';
import { officialDriverPath, startServer } from './server.js';

const BOUND = { timeout: 60_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };
const officialPath = officialDriverPath();
const require = createRequire(import.meta.url);
// Its main module does not export the bulk write classes: Mongoose takes them from
// `mongodb/lib/bulk/common`.
const official = officialPath ? { ...require(officialPath), ...require(path.join(officialPath, 'lib', 'bulk', 'common')) } : null;

/** `value` as relaxed Extended JSON, comparable across the two drivers' BSON classes. */
function plain(value) {
  return JSON.parse(EJSON.stringify(value, { relaxed: true }));
}

/** The raw bulk result Mongoose builds for a bulk write with nothing to send. */
function emptyBulkResult() {
  return { ok: 1, nInserted: 0, nUpserted: 0, nMatched: 0, nModified: 0, nRemoved: 0, upserted: [], writeErrors: [], insertedIds: [], writeConcernErrors: [] };
}

/** What a WriteError shows: its getters, its entry, the failed write, toJSON and toString. */
function describeWriteError(driver, writeError) {
  return {
    isWriteError: writeError instanceof driver.WriteError,
    index: writeError.index,
    code: writeError.code,
    errmsg: writeError.errmsg,
    errInfo: writeError.errInfo ?? null,
    errKeys: Object.keys(writeError.err).sort(),
    operation: plain(writeError.getOperation()),
    json: plain(writeError.toJSON()),
    string: writeError.toString(),
  };
}

/** What a MongoBulkWriteError shows, as Mongoose reads it. */
function describeBulkError(driver, error) {
  assert.ok(error instanceof driver.MongoBulkWriteError, `${error?.name}: ${error?.message}`);
  const result = error.result;
  return {
    name: error.name,
    code: error.code,
    message: error.message,
    // In the order of their writes: the official driver sends an unordered bulk write's
    // inserts first, then its updates, then its deletes, and lists the errors so.
    writeErrors: error.writeErrors.map((writeError) => describeWriteError(driver, writeError)).sort((a, b) => a.index - b.index),
    isResult: result instanceof driver.BulkWriteResult,
    counts: [error.insertedCount, error.matchedCount, error.modifiedCount, error.deletedCount, error.upsertedCount],
    insertedIds: plain(error.insertedIds),
    rawWriteErrorsAreTheErrors: result.result.writeErrors.every((each, i) => each === error.writeErrors[i]),
    raw: plain({ ...result.result, writeErrors: result.result.writeErrors.length }),
    resultOk: [result.ok, result.isOk(), result.hasWriteErrors(), result.getWriteErrorCount()],
  };
}

/**
 * The scenarios: each takes a driver's module and a database of a connected client of
 * it, and resolves to what it saw (plain data).
 */
const SCENARIOS = {
  async unorderedInsertMany(driver, db) {
    const coll = db.collection('insert_many');
    await coll.insertOne({ _id: 2 });
    const documents = [{ _id: 1 }, { _id: 2, a: 'dup' }, { _id: 3 }, { _id: 2, a: 'again' }];
    const error = await coll.insertMany(documents, { ordered: false }).catch((caught) => caught);
    const seen = describeBulkError(driver, error);
    // Mongoose renumbers the write errors through `err.index` (the getter reads it).
    error.writeErrors[0].err.index = 7;
    seen.renumbered = error.writeErrors[0].index;
    seen.stored = await coll.countDocuments();
    return seen;
  },

  async orderedBulkWrite(driver, db) {
    const coll = db.collection('ordered_bulk');
    await coll.insertOne({ _id: 1, n: 0 });
    const error = await coll
      .bulkWrite([
        { insertOne: { document: { _id: 2 } } },
        { updateOne: { filter: { _id: 1 }, update: { $set: { n: 1 } }, upsert: false } },
        { insertOne: { document: { _id: 1 } } },
        { deleteOne: { filter: { _id: 2 } } },
      ])
      .catch((caught) => caught);
    return describeBulkError(driver, error);
  },

  async unorderedBulkWriteOperations(driver, db) {
    const coll = db.collection('unordered_bulk');
    await coll.insertMany([{ _id: 1 }, { _id: 2 }]);
    const error = await coll
      .bulkWrite(
        [
          { updateOne: { filter: { _id: 1 }, update: { $set: { _id: 5 } }, hint: { _id: 1 } } },
          { replaceOne: { filter: { _id: 2 }, replacement: { _id: 6 }, upsert: true } },
          { updateMany: { filter: { _id: 2 }, update: [{ $set: { _id: 7 } }] } },
          { deleteMany: { filter: { _id: 3 } } },
          { insertOne: { document: { _id: 1 } } },
        ],
        { ordered: false },
      )
      .catch((caught) => caught);
    // The error's code and message are its first write error's: the official driver's
    // first is its first batch's (the inserts'), anymongo's the first write's.
    const { code: _code, message: _message, ...seen } = describeBulkError(driver, error);
    return seen;
  },

  async bulkWriteResult(driver, db) {
    const made = new driver.BulkWriteResult(emptyBulkResult(), false);
    const coll = db.collection('bulk_result');
    const result = await coll.bulkWrite(
      [
        { insertOne: { document: { _id: 1 } } },
        { updateOne: { filter: { _id: 9 }, update: { $set: { a: 1 } }, upsert: true } },
        { deleteOne: { filter: { _id: 1 } } },
      ],
      { ordered: true },
    );
    return {
      made: plain(made),
      madeRaw: plain(made.result),
      madeOk: [made.ok, made.isOk(), made.hasWriteErrors(), made.getWriteConcernError() ?? null],
      resultEnumerable: Object.keys(made).includes('result'),
      result: plain(result),
      raw: plain(result.result),
      upsertedAt: plain(result.getUpsertedIdAt(0)),
      rawIsResult: result.getRawResponse() === result.result,
      string: result.toString().startsWith('BulkWriteResult({'),
    };
  },

  async serverErrorFromDocument(driver) {
    const document = { errorLabels: ['TransientTransactionError'], code: 112, codeName: 'WriteConflict', errmsg: 'conflict', extra: { a: 1 } };
    const error = new driver.MongoServerError(document);
    return {
      name: error.name,
      message: error.message,
      errmsg: error.errmsg,
      labels: error.errorLabels,
      transient: error.hasErrorLabel('TransientTransactionError'),
      fields: [error.code, error.codeName, error.extra],
      responseIsDocument: error.errorResponse === document,
    };
  },

  async serverErrorFields(driver, db) {
    const coll = db.collection('server_error_fields');
    await coll.createIndex({ k: 1 }, { unique: true });
    await coll.insertOne({ _id: 1, k: 1 });
    // An `ok: 0` reply (findAndModify), and a single write's write error (insertOne).
    const command = await coll.findOneAndUpdate({ _id: 2 }, { $set: { k: 1 } }, { upsert: true }).catch((caught) => caught);
    const write = await coll.insertOne({ _id: 3, k: 1 }).catch((caught) => caught);
    return [command, write].map((error) => {
      assert.ok(error instanceof driver.MongoServerError, `${error?.name}: ${error?.message}`);
      return {
        name: error.name,
        code: error.code,
        codeName: error.codeName ?? null,
        keyPattern: error.keyPattern,
        keyValue: error.keyValue,
        errmsgIsMessage: error.errmsg === error.message,
        responseCode: error.errorResponse.code,
        responseKeys: Object.keys(error.errorResponse).filter((key) => !key.startsWith('$') && key !== 'operationTime').sort(),
      };
    });
  },

  async withTransactionRetriesAConstructedError(driver, db, client) {
    const coll = db.collection('transaction_retry');
    await coll.insertOne({ _id: 0 });
    const session = client.startSession();
    let attempts = 0;
    try {
      await session.withTransaction(async () => {
        attempts += 1;
        await coll.insertOne({ _id: attempts }, { session });
        if (attempts === 1) {
          throw new driver.MongoServerError({ errorLabels: ['TransientTransactionError'], code: 112, errmsg: 'conflict' });
        }
      });
    } finally {
      await session.endSession();
    }
    return { attempts, stored: (await coll.find().sort({ _id: 1 }).toArray()).map(({ _id }) => _id) };
  },

  async findAndModifyMetadata(driver, db) {
    const coll = db.collection('find_and_modify');
    await coll.insertOne({ _id: 1, n: 1 });
    const strip = ({ $clusterTime: _time, operationTime: _operation, ...rest }) => plain(rest);
    const metadata = { includeResultMetadata: true };
    return {
      updated: strip(await coll.findOneAndUpdate({ _id: 1 }, { $inc: { n: 1 } }, { ...metadata, returnDocument: 'after' })),
      missed: strip(await coll.findOneAndUpdate({ _id: 5 }, { $inc: { n: 1 } }, metadata)),
      upserted: strip(await coll.findOneAndUpdate({ _id: 2 }, { $set: { n: 0 } }, { ...metadata, upsert: true })),
      replaced: strip(await coll.findOneAndReplace({ _id: 2 }, { n: 5 }, { ...metadata, projection: { _id: 0 } })),
      deleted: strip(await coll.findOneAndDelete({ _id: 1 }, metadata)),
      plainValue: plain(await coll.findOneAndUpdate({ _id: 2 }, { $set: { n: 6 } }, { includeResultMetadata: false })),
    };
  },

  async collectionOptions(driver, db) {
    await db.createCollection('capped_log', { capped: true, size: 8192, max: 10 });
    await db.createCollection('plain_log');
    const missing = await db
      .collection('no_such_collection')
      .options()
      .catch((caught) => caught);
    return {
      capped: plain(await db.collection('capped_log').options()),
      isCapped: await db.collection('capped_log').isCapped(),
      plain: plain(await db.collection('plain_log').options()),
      plainIsCapped: await db.collection('plain_log').isCapped(),
      missing: [missing instanceof driver.MongoAPIError, missing.name, missing.message.replace(db.databaseName, 'DB')],
    };
  },

  async changeStreamResumeTokens(driver, db) {
    const coll = db.collection('resume_tokens');
    await coll.insertOne({ _id: 0 });
    const stream = coll.watch();
    const tokens = [];
    stream.on('resumeTokenChanged', (token) => tokens.push(token));
    const closed = once(stream, 'close');
    await stream.tryNext();
    await coll.insertOne({ _id: 1 });
    let change = null;
    for (let tries = 0; change === null && tries < 100; tries += 1) {
      change = await stream.tryNext();
    }
    assert.ok(change, 'the insert came');
    const last = tokens.at(-1);
    await stream.close();
    await closed;
    return {
      emitted: tokens.length > 0,
      lastIsTheStreams: EJSON.stringify(last) === EJSON.stringify(stream.resumeToken),
      hasData: typeof last?._data === 'string',
      change: [change.operationType, change.documentKey._id],
    };
  },

  async cursorEvents(driver, db) {
    const coll = db.collection('cursor_events');
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
    const exhausted = coll.find({}, { batchSize: 2 });
    const exhaustedClose = once(exhausted, 'close');
    const all = await exhausted.toArray();
    await exhaustedClose;
    const closedEarly = coll.aggregate([{ $match: {} }], { batchSize: 1 });
    let closes = 0;
    closedEarly.on('close', () => {
      closes += 1;
    });
    await closedEarly.next();
    await closedEarly.close();
    await closedEarly.close();
    return {
      all: all.map(({ _id }) => _id),
      exhaustedClosed: exhausted.closed,
      closes,
      emitter: [typeof exhausted.on, typeof exhausted.once, typeof exhausted.emit, typeof exhausted.removeListener],
    };
  },
};

describe("objects as the official driver's (issue 49)", BOUND, () => {
  let server;
  const clients = {};

  before(async () => {
    server = await startServer();
    clients.anymongo = new anymongo.MongoClient(server.uri, OPTIONS);
    if (official) clients.official = new official.MongoClient(server.uri, OPTIONS);
  });

  after(async () => {
    for (const client of Object.values(clients)) await client.close();
    await server?.stop();
  });

  /** Runs `name` on anymongo, and on the official driver when there, each in its own database. */
  async function both(name) {
    const run = async (label, driver) => {
      // The same database for both (the server's messages name it), one after the other.
      const db = clients[label].db(`npm_objects_${name}`);
      await db.dropDatabase();
      return SCENARIOS[name](driver, db, clients[label]);
    };
    const ours = await run('anymongo', anymongo);
    if (official) assert.deepEqual(ours, await run('official', official), `${name}: anymongo (actual) and the official driver (expected) differ`);
    return ours;
  }

  it('reports the write errors of an unordered insertMany as WriteError objects', BOUND, async () => {
    const seen = await both('unorderedInsertMany');
    assert.deepEqual(
      seen.writeErrors.map(({ isWriteError, index, code }) => [isWriteError, index, code]),
      [
        [true, 1, 11000],
        [true, 3, 11000],
      ],
    );
    assert.deepEqual(seen.writeErrors[0].operation, { _id: 2, a: 'dup' });
    assert.deepEqual(seen.writeErrors[0].errKeys, ['code', 'errInfo', 'errmsg', 'index', 'op']);
    assert.ok(seen.writeErrors[1].string.startsWith('WriteError({"code":11000,"index":3,'));
    assert.deepEqual(seen.counts, [2, 0, 0, 0, 0]);
    assert.deepEqual(seen.insertedIds, { 0: 1, 2: 3 });
    assert.equal(seen.rawWriteErrorsAreTheErrors, true);
    assert.equal(seen.renumbered, 7);
    assert.equal(seen.stored, 3);
  });

  it('reports an ordered bulkWrite stopped by a write error', BOUND, async () => {
    const seen = await both('orderedBulkWrite');
    assert.deepEqual(seen.writeErrors.map(({ index, operation }) => [index, operation]), [[2, { _id: 1 }]]);
    assert.deepEqual(seen.counts, [1, 1, 1, 0, 0]);
    assert.equal(seen.raw.nInserted, 1);
  });

  it("gives each failed write of a bulkWrite as the command carried it (getOperation)", BOUND, async () => {
    const seen = await both('unorderedBulkWriteOperations');
    assert.deepEqual(
      seen.writeErrors.map(({ index, operation }) => [index, operation]),
      [
        [0, { q: { _id: 1 }, u: { $set: { _id: 5 } }, hint: { _id: 1 } }],
        [1, { q: { _id: 2 }, u: { _id: 6 }, upsert: true }],
        [2, { q: { _id: 2 }, u: [{ $set: { _id: 7 } }], multi: true }],
        [4, { _id: 1 }],
      ],
    );
  });

  it('makes a BulkWriteResult from a raw bulk result, and keeps it as result', BOUND, async () => {
    const seen = await both('bulkWriteResult');
    assert.deepEqual(seen.made, { insertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0, upsertedIds: {}, insertedIds: {} });
    assert.deepEqual(seen.madeOk, [1, true, false, null]);
    assert.equal(seen.resultEnumerable, false);
    assert.deepEqual(seen.raw.upserted, [{ index: 1, _id: 9 }]);
    assert.deepEqual(seen.raw.insertedIds, [{ index: 0, _id: 1 }]);
    assert.deepEqual([seen.raw.nInserted, seen.raw.nUpserted, seen.raw.nRemoved], [1, 1, 1]);
    assert.deepEqual(seen.upsertedAt, { index: 1, _id: 9 });
    assert.equal(seen.rawIsResult, true);
  });

  it('makes a MongoServerError from an error document, labels and fields kept', BOUND, async () => {
    const seen = await both('serverErrorFromDocument');
    assert.equal(seen.message, 'conflict');
    assert.equal(seen.transient, true);
    assert.deepEqual(seen.fields, [112, 'WriteConflict', { a: 1 }]);
    assert.equal(seen.responseIsDocument, true);
  });

  it("copies the server's error fields (keyPattern, keyValue) onto the error", BOUND, async () => {
    for (const seen of await both('serverErrorFields')) {
      assert.equal(seen.code, 11000);
      assert.deepEqual(seen.keyPattern, { k: 1 });
      assert.deepEqual(seen.keyValue, { k: 1 });
      assert.ok(seen.responseKeys.includes('keyValue'));
    }
  });

  it('retries withTransaction on a MongoServerError made with TransientTransactionError', BOUND, async () => {
    const seen = await both('withTransactionRetriesAConstructedError');
    assert.deepEqual(seen, { attempts: 2, stored: [0, 2] });
  });

  it("gives findOneAndX's server reply with includeResultMetadata (lastErrorObject)", BOUND, async () => {
    const seen = await both('findAndModifyMetadata');
    assert.deepEqual(seen.updated, { lastErrorObject: { n: 1, updatedExisting: true }, value: { _id: 1, n: 2 }, ok: 1 });
    assert.deepEqual(seen.missed, { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 });
    assert.deepEqual(seen.upserted, { lastErrorObject: { n: 1, updatedExisting: false, upserted: 2 }, value: null, ok: 1 });
    assert.deepEqual(seen.replaced.value, { n: 0 });
    assert.deepEqual(seen.deleted.lastErrorObject, { n: 1 });
    assert.deepEqual(seen.plainValue, { _id: 2, n: 5 });
  });

  it('gives a collection its options() and isCapped()', BOUND, async () => {
    const seen = await both('collectionOptions');
    assert.deepEqual(seen.capped, { capped: true, size: 8192, max: 10 });
    assert.equal(seen.isCapped, true);
    assert.equal(seen.plainIsCapped, false);
    assert.deepEqual(seen.missing.slice(0, 2), [true, 'MongoAPIError']);
  });

  it('emits resumeTokenChanged and close on a change stream', BOUND, async () => {
    const seen = await both('changeStreamResumeTokens');
    assert.deepEqual(seen, { emitted: true, lastIsTheStreams: true, hasData: true, change: ['insert', 1] });
  });

  it("makes cursors EventEmitters that emit 'close' once", BOUND, async () => {
    const seen = await both('cursorEvents');
    assert.deepEqual(seen, { all: [1, 2, 3], exhaustedClosed: true, closes: 1, emitter: ['function', 'function', 'function', 'function'] });
  });
});
