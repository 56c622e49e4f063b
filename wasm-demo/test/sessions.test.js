// Sessions, transactions, change streams and monitoring events through the npm API,
// against SecantusDB (a single-node replica set): names, arguments and shapes as the
// official Node driver's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ChangeStream,
  ClientBulkWriteResult,
  ClientSession,
  CommandStartedEvent,
  CommandSucceededEvent,
  ConnectionCheckedOutEvent,
  GridFSBucket,
  ObjectId,
  MongoClient,
  MongoClientBulkWriteError,
  MongoExpiredSessionError,
  MongoInvalidArgumentError,
  MongoRuntimeError,
  MongoServerError,
} from '../js/node.js';
import { startServer } from './server.js';

const BOUND = { timeout: 30_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

describe('sessions, transactions, change streams and events', BOUND, () => {
  let server;
  let client;
  let started;
  let db;

  before(async () => {
    server = await startServer();
    client = new MongoClient(server.uri, { ...OPTIONS, monitorCommands: true });
    started = [];
    client.on('commandStarted', (event) => started.push(event));
    db = client.db('npm_session_tests');
  });

  after(async () => {
    await client?.close();
    await server?.stop();
  });

  it('emits command events with monitorCommands, and pool events', BOUND, async () => {
    const checkedOut = [];
    const succeeded = [];
    const onCheckedOut = (event) => checkedOut.push(event);
    const onSucceeded = (event) => succeeded.push(event);
    client.on('connectionCheckedOut', onCheckedOut).on('commandSucceeded', onSucceeded);
    started.length = 0;
    await db.collection('events').insertOne({ x: 1 });
    client.off('connectionCheckedOut', onCheckedOut).off('commandSucceeded', onSucceeded);
    const insert = started.find((event) => event.commandName === 'insert');
    assert.ok(insert instanceof CommandStartedEvent);
    assert.equal(insert.databaseName, 'npm_session_tests');
    assert.equal(insert.command.insert, 'events');
    assert.match(insert.address, /^127\.0\.0\.1:\d+$/);
    assert.equal(typeof insert.requestId, 'number');
    const reply = succeeded.find((event) => event.commandName === 'insert');
    assert.ok(reply instanceof CommandSucceededEvent);
    assert.equal(reply.reply.n, 1);
    assert.equal(reply.requestId, insert.requestId);
    assert.ok(checkedOut.length >= 1 && checkedOut[0] instanceof ConnectionCheckedOutEvent);
    assert.equal(checkedOut[0].address, insert.address);
  });

  it('sends no command events without monitorCommands', BOUND, async () => {
    const quiet = new MongoClient(server.uri, OPTIONS);
    const seen = [];
    quiet.on('commandStarted', (event) => seen.push(event));
    try {
      await quiet.db('npm_session_tests').command({ ping: 1 });
    } finally {
      await quiet.close();
    }
    assert.deepEqual(seen, []);
  });

  it('runs operations in a session: one lsid, causally consistent reads', BOUND, async () => {
    const coll = db.collection('causal');
    const session = client.startSession();
    assert.ok(session instanceof ClientSession);
    started.length = 0;
    await coll.insertOne({ _id: 1 }, { session });
    assert.deepEqual(await coll.findOne({ _id: 1 }, { session }), { _id: 1 });
    const [insert, find] = started.filter(({ commandName }) => ['insert', 'find'].includes(commandName));
    assert.deepEqual(insert.command.lsid, find.command.lsid);
    assert.deepEqual(insert.command.lsid, session.id);
    // The read after the write names the write's operation time.
    assert.ok(find.command.readConcern?.afterClusterTime);
    await session.endSession();
    assert.equal(session.hasEnded, true);
    await assert.rejects(coll.findOne({}, { session }), MongoExpiredSessionError);
    const other = new MongoClient(server.uri, OPTIONS);
    const foreign = other.startSession();
    await assert.rejects(coll.findOne({}, { session: foreign }), MongoInvalidArgumentError);
    await other.close();
  });

  it('commits and aborts transactions', BOUND, async () => {
    const coll = db.collection('transactions');
    await coll.insertOne({ _id: 'setup' });
    const session = client.startSession();
    // Started before the session's first operation, as applications do.
    session.startTransaction({ writeConcern: { w: 'majority' } });
    assert.equal(session.inTransaction(), true);
    await coll.insertOne({ _id: 'committed' }, { session });
    assert.equal(session.transaction.state, 'TRANSACTION_IN_PROGRESS');
    await session.commitTransaction();
    assert.equal(session.inTransaction(), false);
    assert.equal(session.transaction.state, 'TRANSACTION_COMMITTED');
    session.startTransaction();
    await coll.insertOne({ _id: 'aborted' }, { session });
    await session.abortTransaction();
    await session.endSession();
    const ids = (await coll.find({}).toArray()).map(({ _id }) => _id).sort();
    assert.deepEqual(ids, ['committed', 'setup']);
    const commands = started.map(({ commandName }) => commandName);
    assert.ok(commands.includes('commitTransaction') && commands.includes('abortTransaction'));
  });

  it('withTransaction retries a transient error, and rethrows the callback’s own error', BOUND, async () => {
    const coll = db.collection('with_transaction');
    await coll.insertOne({ _id: 0 });
    await client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['insert'], errorCode: 112, errorLabels: ['TransientTransactionError'] },
    });
    const session = client.startSession();
    let attempts = 0;
    const result = await session.withTransaction(async (s) => {
      attempts += 1;
      assert.equal(s, session);
      await coll.insertOne({ _id: 1 }, { session: s });
      return 'done';
    });
    assert.equal(result, 'done');
    assert.equal(attempts, 2);
    assert.equal(await coll.countDocuments({ _id: 1 }), 1);
    const mine = new Error('mine');
    await assert.rejects(
      session.withTransaction(async (s) => {
        await coll.insertOne({ _id: 2 }, { session: s });
        throw mine;
      }),
      (error) => error === mine,
    );
    assert.equal(await coll.countDocuments({ _id: 2 }), 0);
    await session.endSession();
    await assert.rejects(
      client.withSession(async (s) => {
        s.startTransaction();
        await coll.insertOne({ _id: 0 }, { session: s });
      }),
      MongoServerError,
    );
  });

  it('watches a collection: next, resumeToken, on("change"), close', BOUND, async () => {
    const coll = db.collection('watched');
    const stream = coll.watch([{ $match: { operationType: 'insert' } }], { maxAwaitTimeMS: 200 });
    assert.ok(stream instanceof ChangeStream);
    assert.equal(await stream.tryNext(), null);
    await coll.insertOne({ _id: 'a' });
    const change = await stream.next();
    assert.equal(change.operationType, 'insert');
    assert.deepEqual(change.fullDocument, { _id: 'a' });
    assert.deepEqual(stream.resumeToken, change._id);
    const seen = new Promise((resolve) => stream.on('change', resolve));
    await coll.insertOne({ _id: 'b' });
    assert.equal((await seen).documentKey._id, 'b');
    await stream.close();
    assert.equal(stream.closed, true);
    await assert.rejects(stream.next());
    // Resumed after the first change: the second one comes again.
    const resumed = coll.watch([], { resumeAfter: change._id, maxAwaitTimeMS: 200 });
    assert.equal((await resumed.next()).documentKey._id, 'b');
    await resumed.close();
  });
});

describe('GridFSBucket and cursors', BOUND, () => {
  let server;
  let client;
  let db;

  before(async () => {
    server = await startServer();
    client = new MongoClient(server.uri, OPTIONS);
    db = client.db('npm_gridfs_tests');
  });

  after(async () => {
    await client?.close();
    await server?.stop();
  });

  it('uploads and downloads files through Node streams, by id and by name', BOUND, async () => {
    const bucket = new GridFSBucket(db, { bucketName: 'files', chunkSizeBytes: 4 });
    const upload = bucket.openUploadStream('hello.txt', { metadata: { kind: 'greeting' } });
    assert.ok(upload.id instanceof ObjectId);
    await new Promise((resolve, reject) => {
      upload.once('finish', resolve).once('error', reject);
      upload.write('hello, ');
      upload.end(Buffer.from('world'));
    });
    const read = async (stream) => {
      const parts = [];
      for await (const part of stream) parts.push(part);
      return Buffer.concat(parts).toString();
    };
    assert.equal(await read(bucket.openDownloadStream(upload.id)), 'hello, world');
    assert.equal(await read(bucket.openDownloadStream(upload.id, { start: 7, end: 12 })), 'world');
    const [file] = await bucket.find({ filename: 'hello.txt' }).toArray();
    assert.equal(file.length, 12);
    assert.equal(file.chunkSize, 4);
    assert.deepEqual(file.metadata, { kind: 'greeting' });
    assert.equal(await db.collection('files.chunks').countDocuments({ files_id: upload.id }), 3);
    await bucket.rename(upload.id, 'renamed.txt');
    assert.equal(await read(bucket.openDownloadStreamByName('renamed.txt')), 'hello, world');
    await bucket.delete(upload.id);
    await assert.rejects(read(bucket.openDownloadStream(upload.id)), (error) => error instanceof MongoRuntimeError && /no GridFS file/.test(error.message));
    await bucket.drop();
  });

  it('clones, rewinds, counts buffered documents and maps through forEach', BOUND, async () => {
    const coll = db.collection('cursor_api');
    await coll.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const cursor = coll.find({}, { projection: { _id: 0 } }).sort({ n: 1 }).batchSize(2);
    assert.deepEqual(await cursor.next(), { n: 1 });
    assert.equal(cursor.bufferedCount(), 1);
    assert.deepEqual(cursor.readBufferedDocuments(), [{ n: 2 }]);
    cursor.rewind();
    assert.deepEqual(await cursor.toArray(), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const seen = [];
    await cursor.clone().forEach((document) => {
      seen.push(document.n);
      return document.n < 2;
    });
    assert.deepEqual(seen, [1, 2]);
    const piped = await coll.aggregate().match({ n: { $gte: 2 } }).project({ _id: 0 }).sort({ n: -1 }).toArray();
    assert.deepEqual(piped, [{ n: 3 }, { n: 2 }]);
    const explained = await coll.find({ n: 1 }).explain();
    assert.ok(explained.ok === 1 || explained.queryPlanner);
  });
});

describe('client bulkWrite and the fluent bulk builder', BOUND, () => {
  let server;
  let client;

  before(async () => {
    server = await startServer();
    client = new MongoClient(server.uri, OPTIONS);
  });

  after(async () => {
    await client?.close();
    await server?.stop();
  });

  it('writes to several namespaces in one call, with verbose results and errors by index', BOUND, async () => {
    const result = await client.bulkWrite(
      [
        { namespace: 'npm_bulk.a', name: 'insertOne', document: { _id: 1, x: 1 } },
        { namespace: 'npm_bulk.b', name: 'insertOne', document: { _id: 2 } },
        { namespace: 'npm_bulk.a', name: 'updateOne', filter: { _id: 1 }, update: { $set: { x: 2 } } },
        { namespace: 'npm_bulk.b', name: 'deleteMany', filter: {} },
      ],
      { verboseResults: true },
    );
    assert.ok(result instanceof ClientBulkWriteResult);
    assert.equal(result.insertedCount, 2);
    assert.equal(result.modifiedCount, 1);
    assert.equal(result.deletedCount, 1);
    assert.deepEqual(result.insertResults.get(1), { insertedId: 2 });
    assert.equal(result.updateResults.get(2).matchedCount, 1);
    const failure = await client
      .bulkWrite(
        [
          { namespace: 'npm_bulk.a', name: 'insertOne', document: { _id: 1 } },
          { namespace: 'npm_bulk.a', name: 'insertOne', document: { _id: 3 } },
        ],
        { ordered: false },
      )
      .catch((error) => error);
    assert.ok(failure instanceof MongoClientBulkWriteError, String(failure));
    assert.equal(failure.writeErrors.get(0).code, 11000);
    assert.equal(failure.partialResult.insertedCount, 1);
  });

  it('builds ordered bulk writes fluently', BOUND, async () => {
    const coll = client.db('npm_bulk').collection('fluent');
    const bulk = coll.initializeOrderedBulkOp();
    bulk.insert({ _id: 1, n: 0 });
    bulk.find({ _id: 1 }).updateOne({ $inc: { n: 1 } });
    bulk.find({ _id: 2 }).upsert().replaceOne({ n: 5 });
    const result = await bulk.execute();
    assert.equal(result.insertedCount, 1);
    assert.equal(result.modifiedCount, 1);
    assert.equal(result.upsertedCount, 1);
    await assert.rejects(bulk.execute(), /re-executed/);
    // The server's reply, as the Node driver gives it.
    const { value, lastErrorObject, ok } = await coll.findOneAndUpdate({ _id: 1 }, { $set: { n: 9 } }, { includeResultMetadata: true });
    assert.deepEqual({ value, lastErrorObject, ok }, { value: { _id: 1, n: 1 }, lastErrorObject: { n: 1, updatedExisting: true }, ok: 1 });
  });
});
