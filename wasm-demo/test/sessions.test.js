// Sessions, transactions, change streams and monitoring events through the npm API,
// against SecantusDB (a single-node replica set): names, arguments and shapes as the
// official Node driver's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ChangeStream,
  ClientSession,
  CommandStartedEvent,
  CommandSucceededEvent,
  ConnectionCheckedOutEvent,
  MongoClient,
  MongoExpiredSessionError,
  MongoInvalidArgumentError,
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
