// Mongoose through its public API, as an application uses it: the same tests pass with
// the official driver and with anymongo installed as `mongodb` (run.js runs both).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { BOUND, OPTIONS, dbName, requireLib, uri } from './common.js';

describe('Mongoose', BOUND, () => {
  let mongoose;
  let conn;
  let Schema;

  before(async () => {
    // Loading Mongoose is itself under test: it requires `mongodb/lib/*` subpaths.
    const { Mongoose } = requireLib('mongoose');
    mongoose = new Mongoose();
    Schema = mongoose.Schema;
    conn = await mongoose.createConnection(uri, { ...OPTIONS, dbName: dbName('mongoose') }).asPromise();
    await conn.dropDatabase();
  });

  after(async () => {
    await conn?.close();
  });

  /**
   * The model `name`, once Mongoose created its collection and indexes (`Model.init()`).
   * Without the wait, the first write races Mongoose's own createCollection, and
   * SecantusDB can livelock on a collection created implicitly and explicitly at once
   * (seen with anymongo: the server spins in create_collection).
   */
  async function model(name, schema) {
    const Model = conn.model(name, schema);
    await Model.init();
    return Model;
  }

  it('knows its server, and adopts a connected MongoClient with setClient()', BOUND, async () => {
    const { port } = new URL(uri);
    assert.equal(conn.host, '127.0.0.1');
    assert.equal(conn.port, Number(port));
    assert.equal(conn.name, dbName('mongoose'));
    const client = new mongoose.mongo.MongoClient(`${uri}${dbName('mongoose_adopted')}`, OPTIONS);
    await client.connect();
    const adopted = mongoose.createConnection().setClient(client);
    try {
      assert.equal(adopted.readyState, 1);
      assert.equal(adopted.name, dbName('mongoose_adopted'));
      const Pet = adopted.model('AdoptedPet', new Schema({ name: String }));
      await Pet.create({ name: 'Rex' });
      assert.equal((await client.db(dbName('mongoose_adopted')).collection(Pet.collection.name).findOne()).name, 'Rex');
    } finally {
      await adopted.close();
    }
  });

  it('validates documents against their schema', BOUND, async () => {
    const User = await model('ValidatedUser', new Schema({
      name: { type: String, required: true },
      age: { type: Number, min: 0 },
      role: { type: String, enum: ['admin', 'member'], default: 'member' },
      email: { type: String, validate: { validator: (v) => v.includes('@'), message: 'not an email' } },
    }));
    const error = await User.create({ age: -1, role: 'owner', email: 'nope' }).then(() => null, (e) => e);
    assert.equal(error?.name, 'ValidationError');
    assert.deepEqual(Object.keys(error.errors).sort(), ['age', 'email', 'name', 'role']);
    assert.equal(error.errors.email.message, 'not an email');
    assert.equal(await User.countDocuments(), 0);
    const ada = await User.create({ name: 'Ada', age: 36, email: 'ada@example.com' });
    assert.equal(ada.role, 'member');
    // runValidators applies them to updates too.
    await assert.rejects(User.updateOne({ _id: ada._id }, { age: -5 }, { runValidators: true }), { name: 'ValidationError' });
    assert.equal((await User.findById(ada._id)).age, 36);
  });

  it('creates, reads, updates and deletes', BOUND, async () => {
    const Item = await model('CrudItem', new Schema({ name: String, qty: Number, tags: [String] }, { timestamps: true }));
    const [pen, ink] = await Item.create([{ name: 'pen', qty: 1, tags: ['a'] }, { name: 'ink', qty: 5 }]);
    assert.ok(pen.createdAt instanceof Date);
    assert.equal((await Item.findById(pen._id)).name, 'pen');
    assert.equal((await Item.findOne({ qty: { $gt: 2 } })).name, 'ink');
    assert.deepEqual((await Item.find().sort({ qty: -1 })).map((d) => d.name), ['ink', 'pen']);
    const update = await Item.updateOne({ _id: pen._id }, { $inc: { qty: 2 }, $push: { tags: 'b' } });
    assert.equal(update.modifiedCount, 1);
    assert.equal(update.acknowledged, true);
    const updated = await Item.findOneAndUpdate({ name: 'pen' }, { $set: { qty: 10 } }, { returnDocument: 'after' });
    assert.equal(updated.qty, 10);
    assert.deepEqual([...updated.tags], ['a', 'b']);
    const before = await Item.findOneAndUpdate({ name: 'ink' }, { qty: 6 });
    assert.equal(before.qty, 5);
    const upserted = await Item.findOneAndUpdate({ name: 'nib' }, { qty: 3 }, { upsert: true, returnDocument: 'after' });
    assert.equal(upserted.qty, 3);
    ink.qty = 7;
    await ink.save();
    assert.equal((await Item.findById(ink._id).lean()).qty, 7);
    assert.deepEqual((await Item.distinct('name')).sort(), ['ink', 'nib', 'pen']);
    assert.ok(await Item.exists({ name: 'nib' }));
    assert.equal(await Item.estimatedDocumentCount(), 3);
    const meta = await Item.findOneAndUpdate({ name: 'cap' }, { qty: 1 }, { upsert: true, includeResultMetadata: true });
    assert.equal(meta.value, null);
    assert.equal(meta.lastErrorObject.updatedExisting, false);
    assert.ok(meta.lastErrorObject.upserted);
    assert.equal((await Item.findOneAndDelete({ name: 'cap' }, { includeResultMetadata: true })).lastErrorObject.n, 1);
    assert.equal((await Item.deleteOne({ name: 'nib' })).deletedCount, 1);
    assert.equal((await Item.findOneAndDelete({ name: 'ink' })).name, 'ink');
    assert.equal((await Item.deleteMany({})).deletedCount, 1);
    assert.equal(await Item.countDocuments(), 0);
  });

  it('populates references, virtual ones too', BOUND, async () => {
    const authorSchema = new Schema({ name: String });
    authorSchema.virtual('books', { ref: 'PopBook', localField: '_id', foreignField: 'author' });
    const Author = await model('PopAuthor', authorSchema);
    const Book = await model('PopBook', new Schema({ title: String, author: { type: Schema.Types.ObjectId, ref: 'PopAuthor' } }));
    const author = await Author.create({ name: 'Le Guin' });
    await Book.create([{ title: 'The Dispossessed', author: author._id }, { title: 'Earthsea', author: author._id }]);
    const book = await Book.findOne({ title: 'Earthsea' }).populate('author');
    assert.equal(book.author.name, 'Le Guin');
    const withBooks = await Author.findById(author._id).populate({ path: 'books', options: { sort: { title: 1 } } });
    assert.deepEqual(withBooks.books.map((b) => b.title), ['Earthsea', 'The Dispossessed']);
    const lean = await Book.find().sort({ title: 1 }).populate('author', 'name').lean();
    assert.equal(lean[0].author.name, 'Le Guin');
  });

  it('runs document, query and aggregate middleware', BOUND, async () => {
    const calls = [];
    const schema = new Schema({ name: String, slug: String });
    schema.pre('save', function () {
      this.slug ??= this.name.toLowerCase().replace(/ /g, '-');
    });
    schema.post('save', (doc) => calls.push(`saved ${doc.slug}`));
    schema.pre('findOneAndUpdate', function () {
      this.set({ slug: 'updated' });
    });
    schema.pre('deleteOne', { document: true, query: false }, function () {
      calls.push(`deleting ${this.slug}`);
    });
    schema.pre('aggregate', function () {
      this.pipeline().unshift({ $match: { slug: { $ne: 'hidden' } } });
    });
    const Post = await model('HookPost', schema);
    const post = await Post.create({ name: 'Hello World' });
    assert.equal(post.slug, 'hello-world');
    await Post.create({ name: 'x', slug: 'hidden' });
    const updated = await Post.findOneAndUpdate({ _id: post._id }, { name: 'Hi' }, { returnDocument: 'after' });
    assert.equal(updated.slug, 'updated');
    assert.equal((await Post.aggregate([{ $count: 'n' }]))[0].n, 1);
    await updated.deleteOne();
    assert.deepEqual(calls, ['saved hello-world', 'saved hidden', 'deleting updated']);
  });

  it('returns plain objects with lean', BOUND, async () => {
    const Thing = await model('LeanThing', new Schema({ n: Number, when: Date, big: Schema.Types.Decimal128 }));
    await Thing.create({ n: 1, when: new Date(0), big: '1.5' });
    const doc = await Thing.findOne().lean();
    assert.equal(Object.getPrototypeOf(doc), Object.prototype);
    assert.equal(doc.n, 1);
    assert.ok(doc.when instanceof Date);
    assert.ok(doc._id instanceof mongoose.Types.ObjectId);
    assert.equal(doc.big.toString(), '1.5');
    assert.equal(typeof doc.save, 'undefined');
  });

  it('commits and aborts transactions with a session', BOUND, async () => {
    const Account = await model('TxnAccount', new Schema({ owner: String, balance: Number }));
    await Account.createCollection();
    const session = await conn.startSession();
    try {
      session.startTransaction();
      await Account.create([{ owner: 'a', balance: 10 }], { session });
      assert.equal(await Account.countDocuments({}).session(session), 1);
      await session.abortTransaction();
      assert.equal(await Account.countDocuments(), 0);
      session.startTransaction();
      await Account.create([{ owner: 'b', balance: 20 }], { session });
      await Account.updateOne({ owner: 'b' }, { $inc: { balance: 5 } }, { session });
      await session.commitTransaction();
      assert.equal((await Account.findOne({ owner: 'b' })).balance, 25);
    } finally {
      await session.endSession();
    }
  });

  it('runs connection.transaction(), rolling back when the function throws', BOUND, async () => {
    const Ledger = await model('TxnLedger', new Schema({ entry: String }));
    await Ledger.createCollection();
    await conn.transaction(async (session) => {
      await Ledger.create([{ entry: 'kept' }], { session });
    });
    const doc = new Ledger({ entry: 'dropped' });
    await assert.rejects(
      conn.transaction(async (session) => {
        await doc.save({ session });
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.deepEqual((await Ledger.find().lean()).map((d) => d.entry), ['kept']);
    // Mongoose resets the document's state as the transaction is rolled back.
    assert.equal(doc.isNew, true);
    // An error labelled TransientTransactionError makes the transaction run again.
    let attempts = 0;
    await conn.transaction(async (session) => {
      attempts += 1;
      await Ledger.create([{ entry: `attempt ${attempts}` }], { session });
      if (attempts === 1) throw new mongoose.mongo.MongoServerError({ message: 'conflict', errorLabels: ['TransientTransactionError'] });
    });
    assert.equal(attempts, 2);
    assert.deepEqual((await Ledger.find().sort({ entry: 1 }).lean()).map((d) => d.entry), ['attempt 2', 'kept']);
  });

  it('watches changes with a change stream, and resumes after one', BOUND, async () => {
    const Event = await model('StreamEvent', new Schema({ kind: String }));
    await Event.createCollection();
    // The stream starts at an operation of the session, so that no change is missed
    // while it opens.
    const session = await conn.startSession();
    await Event.create([{ kind: 'before' }], { session });
    const startAtOperationTime = session.operationTime;
    await session.endSession();
    const stream = Event.watch([{ $match: { operationType: 'insert' } }], { startAtOperationTime });
    const tokens = [];
    stream.on('resumeTokenChanged', (token) => tokens.push(token));
    const first = new Promise((resolve, reject) => {
      stream.on('change', (change) => {
        if (change.fullDocument.kind === 'first') resolve(change);
      });
      stream.once('error', reject);
    });
    let resumeAfter;
    try {
      await Event.create({ kind: 'first' });
      await Event.create({ kind: 'second' });
      resumeAfter = (await first)._id;
    } finally {
      await stream.close();
    }
    assert.ok(tokens.some((token) => isDeepStrictEqual(token, resumeAfter)), 'resumeTokenChanged gave the change\'s token');
    const resumed = Event.watch([], { resumeAfter });
    try {
      const [change] = await once(resumed, 'change');
      assert.equal(change.fullDocument.kind, 'second');
    } finally {
      await resumed.close();
    }
  });

  it('iterates query and aggregation cursors', BOUND, async () => {
    const Row = await model('CursorRow', new Schema({ i: Number }));
    await Row.insertMany(Array.from({ length: 25 }, (_, i) => ({ i })));
    const seen = [];
    for await (const row of Row.find().sort({ i: 1 }).batchSize(4).cursor()) seen.push(row.i);
    assert.deepEqual(seen, Array.from({ length: 25 }, (_, i) => i));
    const cursor = Row.find({ i: { $lt: 3 } }).sort({ i: -1 }).cursor({ transform: (doc) => doc.i * 10 });
    assert.equal(await cursor.next(), 20);
    assert.equal(await cursor.next(), 10);
    assert.equal(await cursor.next(), 0);
    assert.equal(await cursor.next(), null);
    let sum = 0;
    await Row.find().cursor().eachAsync((row) => {
      sum += row.i;
    }, { parallel: 3 });
    assert.equal(sum, 300);
    const groups = [];
    for await (const g of Row.aggregate([{ $group: { _id: { $mod: ['$i', 5] }, n: { $sum: 1 } } }, { $sort: { _id: 1 } }]).cursor({ batchSize: 2 })) groups.push(g);
    assert.deepEqual(groups, [0, 1, 2, 3, 4].map((_id) => ({ _id, n: 5 })));
  });

  it('aggregates with the pipeline builder and $lookup', BOUND, async () => {
    const Order = await model('AggOrder', new Schema({ customer: String, total: Number }));
    const Customer = await model('AggCustomer', new Schema({ _id: String, city: String }));
    await Customer.create([{ _id: 'ann', city: 'Oslo' }, { _id: 'bob', city: 'Rome' }]);
    await Order.create([{ customer: 'ann', total: 5 }, { customer: 'ann', total: 7 }, { customer: 'bob', total: 1 }]);
    const totals = await Order.aggregate().match({ total: { $gt: 0 } }).group({ _id: '$customer', sum: { $sum: '$total' } }).sort({ sum: -1 });
    assert.deepEqual(totals, [{ _id: 'ann', sum: 12 }, { _id: 'bob', sum: 1 }]);
    const joined = await Order.aggregate([
      { $match: { total: 1 } },
      { $lookup: { from: Customer.collection.name, localField: 'customer', foreignField: '_id', as: 'who' } },
      { $unwind: '$who' },
      { $project: { _id: 0, city: '$who.city' } },
    ]);
    assert.deepEqual(joined, [{ city: 'Rome' }]);
  });

  it('builds indexes and honours collectionOptions', BOUND, async () => {
    const schema = new Schema({ email: String, score: Number });
    schema.index({ email: 1 }, { unique: true });
    schema.index({ score: -1 });
    const Member = await model('IdxMember', schema);
    await Member.init();
    const names = (await Member.listIndexes()).map((index) => index.name).sort();
    assert.deepEqual(names, ['_id_', 'email_1', 'score_-1']);
    await Member.create({ email: 'a@x' });
    const duplicate = await Member.create({ email: 'a@x' }).then(() => null, (e) => e);
    assert.equal(duplicate?.code, 11000);
    assert.deepEqual(duplicate.keyValue, { email: 'a@x' });
    const plan = await Member.find({ email: 'a@x' }).explain();
    assert.ok(plan.queryPlanner, 'explain() returns the query plan');
    // syncIndexes drops what the schema no longer declares.
    await Member.collection.createIndex({ stale: 1 });
    assert.deepEqual(await Member.syncIndexes(), ['stale_1']);

    const Capped = await model('IdxCapped', new Schema({ n: Number }, { collectionOptions: { capped: true, size: 8192, max: 3 } }));
    await Capped.createCollection();
    const [info] = await conn.db.listCollections({ name: Capped.collection.name }).toArray();
    assert.equal(info.options.capped, true);
    assert.equal(info.options.max, 3);
    assert.equal(await Capped.collection.isCapped(), true);
  });

  it('reports which documents of insertMany and bulkWrite failed', BOUND, async () => {
    const Sku = await model('BulkSku', new Schema({ _id: Number, name: { type: String, required: true } }));
    await Sku.create({ _id: 1, name: 'one' });
    const error = await Sku.insertMany([{ _id: 1, name: 'dup' }, { _id: 2, name: 'two' }, { _id: 3 }, { _id: 4, name: 'four' }], { ordered: false }).then(() => null, (e) => e);
    assert.ok(error, 'insertMany should fail');
    assert.equal(error.name, 'MongoBulkWriteError');
    assert.deepEqual(error.writeErrors.map((w) => [w.index, w.code]), [[0, 11000]]);
    assert.deepEqual(error.insertedDocs.map((d) => d._id).sort(), [2, 4]);
    assert.equal(await Sku.countDocuments(), 3);

    const raw = await Sku.insertMany([{ _id: 5, name: 'five' }, { _id: 2, name: 'again' }], { ordered: false, rawResult: true }).then(() => null, (e) => e);
    assert.equal(raw.writeErrors.length, 1);
    assert.equal(raw.result.insertedCount, 1);

    const bulk = await Sku.bulkWrite([
      { insertOne: { document: { _id: 6, name: 'six' } } },
      { insertOne: { document: { _id: 1, name: 'dup' } } },
      { updateOne: { filter: { _id: 2 }, update: { $set: { name: 'TWO' } } } },
    ], { ordered: false }).then(() => null, (e) => e);
    assert.equal(bulk?.name, 'MongoBulkWriteError');
    assert.equal(bulk.writeErrors[0].index, 1);
    assert.equal(bulk.result.insertedCount, 1);
    assert.equal(bulk.result.modifiedCount, 1);
    assert.equal((await Sku.findById(2)).name, 'TWO');
    const ok = await Sku.bulkWrite([{ deleteOne: { filter: { _id: 6 } } }, { updateMany: { filter: {}, update: { $set: { name: 'all' } } } }]);
    assert.equal(ok.deletedCount, 1);
  });

  it('saves changed documents with bulkSave, telling the ones that failed', BOUND, async () => {
    const schema = new Schema({ code: String, n: Number });
    schema.index({ code: 1 }, { unique: true });
    const Tag = await model('BulkSaveTag', schema);
    await Tag.init();
    const [a, b] = await Tag.create([{ code: 'a', n: 1 }, { code: 'b', n: 1 }]);
    a.n = 2;
    b.code = 'a'; // a duplicate key
    const fresh = new Tag({ code: 'c', n: 1 });
    const error = await Tag.bulkSave([a, b, fresh], { ordered: false }).then(() => null, (e) => e);
    assert.equal(error?.name, 'MongoBulkWriteError');
    assert.equal(error.writeErrors.length, 1);
    // The ones that were written are clean again; the failed one keeps its change.
    assert.equal(a.isModified(), false);
    assert.equal(fresh.isNew, false);
    assert.equal(b.isModified('code'), true);
    assert.deepEqual((await Tag.find().sort({ code: 1 }).lean()).map((d) => [d.code, d.n]), [['a', 2], ['b', 1], ['c', 1]]);
  });

  it('stores and queries discriminators', BOUND, async () => {
    const base = new Schema({ at: Date }, { discriminatorKey: 'kind' });
    const Activity = await model('DiscActivity', base);
    const Click = Activity.discriminator('Click', new Schema({ url: String }));
    const Purchase = Activity.discriminator('Purchase', new Schema({ amount: { type: Number, required: true } }));
    await Click.create({ at: new Date(1), url: '/home' });
    await Purchase.create({ at: new Date(2), amount: 9 });
    await assert.rejects(Purchase.create({ at: new Date(3) }), { name: 'ValidationError' });
    const all = await Activity.find().sort({ at: 1 });
    assert.deepEqual(all.map((d) => d.kind), ['Click', 'Purchase']);
    assert.ok(all[0] instanceof Click);
    assert.equal(all[1].amount, 9);
    assert.equal(await Click.countDocuments(), 1);
    assert.equal((await Purchase.findOne().lean()).kind, 'Purchase');
  });

  it('never matches everything when a filter value is undefined', BOUND, async () => {
    const Note = await model('UndefNote', new Schema({ text: String, owner: String }));
    await Note.create([{ text: 'a', owner: 'x' }, { text: 'b', owner: 'y' }]);
    const missing = {}; // e.g. a request parameter that was not sent
    assert.equal((await Note.deleteOne({ _id: missing.id })).deletedCount, 0);
    assert.equal((await Note.collection.deleteOne({ _id: missing.id })).deletedCount, 0);
    assert.equal((await Note.updateMany({ owner: missing.owner }, { text: 'z' })).modifiedCount, 0);
    assert.equal(await Note.findOne({ _id: missing.id }), null);
    assert.equal(await Note.countDocuments(), 2);
  });
});
