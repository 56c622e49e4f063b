// The package through require(): the CommonJS entry (pkg/node.cjs, which build.sh
// bundles from the ES modules) resolved by the package's own name, as a CommonJS
// application gets it, against SecantusDB: a CRUD round trip, the BSON values and
// the error classes of that entry.
const assert = require('node:assert/strict');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');
const {
  MongoAPIError,
  MongoClient,
  MongoCursorInUseError,
  MongoError,
  MongoServerError,
  ObjectId,
} = require('anymongo');

const BOUND = { timeout: 30_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

describe('require("anymongo")', BOUND, () => {
  let server;
  let client;

  before(async () => {
    // server.js is an ES module (it imports the ES entry for its own set-up).
    const { startServer } = await import('./server.js');
    server = await startServer();
    client = new MongoClient(server.uri, OPTIONS);
  });

  after(async () => {
    await client?.close();
    await server?.stop();
  });

  it('resolves to the CommonJS entry', () => {
    assert.equal(require.resolve('anymongo'), path.join(__dirname, '..', 'pkg', 'node.cjs'));
    assert.equal(require('anymongo').default, MongoClient);
  });

  it('inserts, finds, updates and deletes', BOUND, async () => {
    const coll = client.db('npm_cjs').collection('crud');
    const { insertedId } = await coll.insertOne({ name: 'tea', qty: 2 });
    assert.ok(insertedId instanceof ObjectId, 'the _id is the ObjectId this entry exports');
    await coll.insertMany([{ name: 'coffee', qty: 5 }, { name: 'milk', qty: 1 }]);
    assert.deepEqual(await coll.findOne({ _id: insertedId }, { projection: { _id: 0 } }), { name: 'tea', qty: 2 });
    const updated = await coll.updateOne({ name: 'milk' }, { $inc: { qty: 1 } });
    assert.equal(updated.modifiedCount, 1);
    const names = await coll.find({}).sort('qty').map((document) => `${document.name}:${document.qty}`).toArray();
    assert.deepEqual(names, ['tea:2', 'milk:2', 'coffee:5']);
    assert.equal((await coll.deleteMany({ qty: 2 })).deletedCount, 2);
    assert.equal(await coll.countDocuments(), 1);
  });

  it("takes the ES build of bson's values too (an application may import bson as an ES module)", BOUND, async () => {
    const esm = await import('bson');
    assert.notEqual(esm.ObjectId, ObjectId, 'bson has two builds, as for the official driver');
    const coll = client.db('npm_cjs').collection('bson');
    const id = new esm.ObjectId();
    await coll.insertOne({ _id: id, n: new esm.Long(7) });
    const found = await coll.findOne({ _id: id });
    assert.ok(found._id instanceof ObjectId);
    assert.ok(found._id.equals(id));
  });

  it("raises this entry's error classes", BOUND, async () => {
    const coll = client.db('npm_cjs').collection('errors');
    await coll.insertOne({ _id: 1 });
    await assert.rejects(coll.insertOne({ _id: 1 }), (error) => {
      assert.ok(error instanceof MongoServerError);
      assert.ok(error instanceof MongoError);
      assert.equal(error.name, 'MongoServerError');
      assert.equal(error.code, 11000);
      return true;
    });
    const cursor = coll.find({});
    await cursor.next();
    assert.throws(() => cursor.limit(1), (error) => error instanceof MongoCursorInUseError && error instanceof MongoAPIError);
    await cursor.close();
  });
});
