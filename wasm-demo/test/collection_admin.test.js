// Index management, bulkWrite, the database's collection commands and db.admin(),
// against SecantusDB: names, arguments and result shapes as the official Node driver's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Admin,
  BulkWriteResult,
  Collection,
  ListCollectionsCursor,
  ListIndexesCursor,
  MongoBulkWriteError,
  MongoClient,
  MongoInvalidArgumentError,
  MongoServerError,
  ObjectId,
} from '../js/node.js';
import { startServer } from './server.js';

const BOUND = { timeout: 30_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

describe('collection and database administration', BOUND, () => {
  let server;
  let client;
  let db;

  before(async () => {
    server = await startServer();
    client = new MongoClient(server.uri, OPTIONS);
    db = client.db('npm_admin_tests');
  });

  after(async () => {
    await client?.close();
    await server?.stop();
  });

  it('creates, lists, finds and drops indexes', BOUND, async () => {
    const coll = db.collection('indexes');
    await coll.insertOne({ a: 1, b: 'x' });
    const names = await coll.createIndexes([{ key: { a: 1 } }, { key: { b: -1, a: 1 }, name: 'by_b', unique: true }]);
    assert.deepEqual(names, ['a_1', 'by_b']);

    const cursor = coll.listIndexes();
    assert.ok(cursor instanceof ListIndexesCursor);
    const listed = await cursor.toArray();
    assert.deepEqual(listed.map(({ name }) => name).sort(), ['_id_', 'a_1', 'by_b']);
    const byB = listed.find(({ name }) => name === 'by_b');
    assert.deepEqual(byB.key, { b: -1, a: 1 });
    assert.equal(byB.unique, true);

    const iterated = [];
    for await (const index of coll.listIndexes({ batchSize: 1 })) iterated.push(index.name);
    assert.deepEqual(iterated.sort(), ['_id_', 'a_1', 'by_b']);

    const indexes = await coll.indexes();
    assert.ok(Array.isArray(indexes));
    assert.equal(indexes.length, 3);
    const information = await coll.indexes({ full: false });
    assert.deepEqual(information.by_b, [['b', -1], ['a', 1]]);
    assert.deepEqual(await coll.indexInformation(), information);

    assert.equal(await coll.indexExists('a_1'), true);
    assert.equal(await coll.indexExists(['a_1', 'by_b']), true);
    assert.equal(await coll.indexExists(['a_1', 'none']), false);
    assert.equal(await coll.indexExists('none'), false);

    const dropped = await coll.dropIndex('a_1');
    assert.equal(dropped.ok, 1);
    assert.equal(await coll.indexExists('a_1'), false);
    await assert.rejects(coll.dropIndex('a_1'), MongoServerError);
    assert.equal(await coll.dropIndexes(), true);
    assert.deepEqual((await coll.indexes()).map(({ name }) => name), ['_id_']);
    await assert.rejects(coll.createIndexes({ key: { a: 1 } }), MongoInvalidArgumentError);
  });

  it('renames a collection, with and without dropTarget', BOUND, async () => {
    const source = db.collection('rename_source');
    await source.insertOne({ _id: 1 });
    const renamed = await source.rename('rename_target');
    assert.ok(renamed instanceof Collection);
    assert.equal(renamed.collectionName, 'rename_target');
    assert.equal(renamed.namespace, 'npm_admin_tests.rename_target');
    assert.deepEqual(await renamed.findOne({}), { _id: 1 });
    assert.equal(await source.countDocuments(), 0);

    // The target exists: an error (NamespaceExists) unless dropTarget.
    await source.insertOne({ _id: 2 });
    const error = await source.rename('rename_target').catch((caught) => caught);
    assert.ok(error instanceof MongoServerError, String(error));
    assert.equal(error.code, 48);
    const replaced = await source.rename('rename_target', { dropTarget: true });
    assert.deepEqual(await replaced.find({}).toArray(), [{ _id: 2 }]);

    const back = await db.renameCollection('rename_target', 'rename_back');
    assert.equal(back.collectionName, 'rename_back');
    assert.deepEqual(await back.find({}).toArray(), [{ _id: 2 }]);
    await db.collection('rename_other').insertOne({ _id: 3 });
    await assert.rejects(db.renameCollection('rename_other', 'rename_back'), { code: 48 });
    await db.renameCollection('rename_other', 'rename_back', { dropTarget: true });
    assert.deepEqual(await back.find({}).toArray(), [{ _id: 3 }]);
  });

  it('runs a bulkWrite of every kind of operation', BOUND, async () => {
    const coll = db.collection('bulk');
    await coll.insertMany([{ _id: 1, n: 1 }, { _id: 2, n: 2 }, { _id: 3, n: 3 }, { _id: 4, n: 4 }]);
    const document = { n: 10 };
    const result = await coll.bulkWrite([
      { insertOne: { document } },
      { updateOne: { filter: { _id: 1 }, update: { $set: { n: 100 } } } },
      { updateMany: { filter: { n: { $in: [2, 3] } }, update: { $inc: { n: 1 } } } },
      { replaceOne: { filter: { _id: 4 }, replacement: { n: 40 } } },
      { updateOne: { filter: { _id: 5 }, update: { $set: { n: 5 } }, upsert: true } },
      { replaceOne: { filter: { _id: 6 }, replacement: { n: 6 }, upsert: true } },
      { deleteOne: { filter: { _id: 2 } } },
      { deleteMany: { filter: { n: { $gte: 40 } } } },
    ]);
    assert.ok(result instanceof BulkWriteResult);
    assert.equal(result.isOk(), true);
    assert.equal(result.ok, 1);
    assert.equal(result.insertedCount, 1);
    assert.equal(result.matchedCount, 4);
    assert.equal(result.modifiedCount, 4);
    assert.equal(result.upsertedCount, 2);
    assert.equal(result.deletedCount, 3);
    assert.ok(document._id instanceof ObjectId, 'bulkWrite gives an inserted document its _id');
    assert.deepEqual(Object.keys(result.insertedIds), ['0']);
    assert.ok(result.insertedIds[0].equals(document._id));
    assert.deepEqual(result.upsertedIds, { 4: 5, 5: 6 });
    assert.deepEqual(result.getUpsertedIdAt(0), { index: 4, _id: 5 });
    assert.deepEqual(result.result.upserted, [{ index: 4, _id: 5 }, { index: 5, _id: 6 }]);
    assert.equal(result.hasWriteErrors(), false);
    const left = await coll.find({}, { sort: { n: 1 } }).toArray();
    assert.deepEqual(left.map(({ n }) => n), [4, 5, 6, 10]);
    assert.deepEqual(left.slice(0, 3).map(({ _id }) => _id), [3, 5, 6]);

    await assert.rejects(coll.bulkWrite({ insertOne: { document: {} } }), MongoInvalidArgumentError);
    await assert.rejects(coll.bulkWrite([{ upsertOne: { filter: {} } }]), MongoInvalidArgumentError);
  });

  it('reports the write errors of an ordered and an unordered bulkWrite', BOUND, async () => {
    const coll = db.collection('bulk_errors');
    const operations = () => [
      { insertOne: { document: { _id: 1 } } },
      { insertOne: { document: { _id: 1 } } },
      { insertOne: { document: { _id: 2 } } },
      { updateOne: { filter: { _id: 2 }, update: { $set: { x: 1 } } } },
    ];

    const ordered = await coll.bulkWrite(operations()).catch((error) => error);
    assert.ok(ordered instanceof MongoBulkWriteError, String(ordered));
    assert.ok(ordered instanceof MongoServerError);
    assert.equal(ordered.code, 11000);
    assert.equal(ordered.writeErrors.length, 1);
    assert.equal(ordered.writeErrors[0].code, 11000);
    assert.equal(ordered.writeErrors[0].index, 1);
    assert.ok(ordered.result instanceof BulkWriteResult);
    assert.equal(ordered.result.insertedCount, 1);
    assert.equal(ordered.result.matchedCount, 0);
    assert.deepEqual(ordered.result.insertedIds, { 0: 1 });
    assert.equal(ordered.insertedCount, 1);
    assert.equal(ordered.result.getWriteErrorCount(), 1);
    assert.equal(await coll.countDocuments(), 1);

    await coll.deleteMany({});
    const unordered = await coll.bulkWrite(operations(), { ordered: false }).catch((error) => error);
    assert.ok(unordered instanceof MongoBulkWriteError, String(unordered));
    assert.equal(unordered.writeErrors.length, 1);
    assert.equal(unordered.writeErrors[0].code, 11000);
    assert.equal(unordered.writeErrors[0].index, 1);
    assert.equal(unordered.result.insertedCount, 2);
    assert.equal(unordered.result.matchedCount, 1);
    assert.equal(unordered.result.modifiedCount, 1);
    assert.deepEqual(unordered.result.insertedIds, { 0: 1, 2: 2 });
    assert.equal(unordered.modifiedCount, 1);
    assert.equal(await coll.countDocuments(), 2);

    // insertMany's failure carries the same result.
    const many = await coll.insertMany([{ _id: 3 }, { _id: 1 }]).catch((error) => error);
    assert.ok(many instanceof MongoBulkWriteError);
    assert.equal(many.result.insertedCount, 1);
    assert.deepEqual(many.insertedIds, { 0: 3 });
  });

  it('creates, lists and drops collections', BOUND, async () => {
    const other = client.db('npm_admin_collections');
    const created = await other.createCollection('capped', { capped: true, size: 4096 });
    assert.ok(created instanceof Collection);
    assert.equal(created.collectionName, 'capped');
    await assert.rejects(other.createCollection('capped'), { code: 48 });
    await other.createCollection('plain');
    await other.collection('implicit').insertOne({ a: 1 });

    const cursor = other.listCollections();
    assert.ok(cursor instanceof ListCollectionsCursor);
    const full = await cursor.toArray();
    assert.deepEqual(full.map(({ name }) => name).sort(), ['capped', 'implicit', 'plain']);
    const capped = full.find(({ name }) => name === 'capped');
    assert.equal(capped.type, 'collection');
    assert.equal(capped.options.capped, true);

    const names = await other.listCollections({}, { nameOnly: true }).toArray();
    assert.deepEqual(names.map(({ name }) => name).sort(), ['capped', 'implicit', 'plain']);
    for (const entry of names) assert.equal(entry.options, undefined, JSON.stringify(entry));
    const filtered = await other.listCollections({ name: 'plain' }, { nameOnly: true }).toArray();
    assert.deepEqual(filtered.map(({ name }) => name), ['plain']);
    const iterated = [];
    for await (const { name } of other.listCollections({}, { batchSize: 1 })) iterated.push(name);
    assert.equal(iterated.length, 3);

    const collections = await other.collections();
    assert.ok(collections.every((c) => c instanceof Collection));
    assert.deepEqual(collections.map((c) => c.collectionName).sort(), ['capped', 'implicit', 'plain']);

    assert.equal(await other.dropCollection('plain'), true);
    // A collection that does not exist: false (NamespaceNotFound), or true from servers
    // that answer ok (MongoDB 7.0+), as with the Node driver.
    assert.equal(typeof (await other.dropCollection('plain')), 'boolean');
    const left = await other.listCollections({}, { nameOnly: true }).map(({ name }) => name).toArray();
    assert.deepEqual(left.sort(), ['capped', 'implicit']);
  });

  it('runs admin commands: ping, command, listDatabases', BOUND, async () => {
    await db.collection('listed').insertOne({ a: 1 });
    const admin = db.admin();
    assert.ok(admin instanceof Admin);
    assert.equal((await admin.ping()).ok, 1);
    const hello = await admin.command({ hello: 1 });
    assert.equal(hello.isWritablePrimary, true);
    const { databases, totalSize, ok } = await admin.listDatabases();
    assert.equal(ok, 1);
    assert.ok(Array.isArray(databases));
    const mine = databases.find(({ name }) => name === 'npm_admin_tests');
    assert.ok(mine, JSON.stringify(databases));
    assert.equal(typeof mine.sizeOnDisk, 'number');
    assert.equal(typeof totalSize, 'number');
    const names = await admin.listDatabases({ nameOnly: true });
    assert.ok(names.databases.some(({ name }) => name === 'npm_admin_tests'));
  });
});
