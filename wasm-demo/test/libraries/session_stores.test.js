// connect-mongo (an Express session store) and the Auth.js MongoDB adapter, used as
// their documentation shows: regression guards for libraries that take a MongoClient.
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { BOUND, OPTIONS, dbName, importLib, requireLib, uri } from './common.js';

describe('connect-mongo', BOUND, () => {
  let client;
  let store;

  before(async () => {
    const { MongoClient } = requireLib('mongodb');
    const { MongoStore } = requireLib('connect-mongo');
    client = new MongoClient(uri, OPTIONS);
    await client.db(dbName('connect_mongo')).dropDatabase();
    store = MongoStore.create({ client, dbName: dbName('connect_mongo'), collectionName: 'sessions', ttl: 60, stringify: false });
  });

  after(async () => {
    await store?.close();
  });

  it('stores, reads, touches, lists and destroys sessions', BOUND, async () => {
    const set = promisify(store.set.bind(store));
    const get = promisify(store.get.bind(store));
    const touch = promisify(store.touch.bind(store));
    const destroy = promisify(store.destroy.bind(store));
    const length = promisify(store.length.bind(store));
    const all = promisify(store.all.bind(store));
    const clear = promisify(store.clear.bind(store));
    const session = { cookie: { maxAge: 60_000, expires: new Date(Date.now() + 60_000) }, user: 'ada', visits: 1 };
    await set('sid-1', session);
    await set('sid-2', { ...session, user: 'bob' });
    const read = await get('sid-1');
    assert.equal(read.user, 'ada');
    assert.equal(read.visits, 1);
    await set('sid-1', { ...session, visits: 2 });
    assert.equal((await get('sid-1')).visits, 2);
    await touch('sid-1', session);
    assert.equal(await length(), 2);
    assert.deepEqual((await all()).map((s) => s.user).sort(), ['ada', 'bob']);
    // The TTL index that expires sessions.
    const indexes = await client.db(dbName('connect_mongo')).collection('sessions').indexes();
    assert.ok(indexes.some((index) => index.key.expires === 1 && index.expireAfterSeconds === 0));
    await destroy('sid-1');
    assert.equal(await get('sid-1'), null);
    await clear();
    assert.equal(await length(), 0);
  });
});

describe('the Auth.js MongoDB adapter', BOUND, () => {
  let client;
  let adapter;

  before(async () => {
    const { MongoClient } = requireLib('mongodb');
    const { MongoDBAdapter } = await importLib('@auth/mongodb-adapter', 'index.js');
    client = new MongoClient(uri, OPTIONS);
    await client.db(dbName('authjs')).dropDatabase();
    adapter = MongoDBAdapter(client.connect(), { databaseName: dbName('authjs') });
  });

  after(async () => {
    await client?.close();
  });

  it('keeps users, accounts, sessions and verification tokens', BOUND, async () => {
    const user = await adapter.createUser({ id: 'ignored', name: 'Ada', email: 'ada@example.com', emailVerified: null });
    assert.match(user.id, /^[0-9a-f]{24}$/);
    assert.equal((await adapter.getUser(user.id)).email, 'ada@example.com');
    assert.equal((await adapter.getUserByEmail('ada@example.com')).id, user.id);
    assert.equal(await adapter.getUserByEmail('nobody@example.com'), null);
    const updated = await adapter.updateUser({ id: user.id, name: 'Ada L.' });
    assert.equal(updated.name, 'Ada L.');

    await adapter.linkAccount({ userId: user.id, type: 'oauth', provider: 'github', providerAccountId: 'gh-1', access_token: 't' });
    assert.equal((await adapter.getUserByAccount({ provider: 'github', providerAccountId: 'gh-1' })).id, user.id);

    const expires = new Date(Date.now() + 3_600_000);
    await adapter.createSession({ sessionToken: 'tok', userId: user.id, expires });
    const found = await adapter.getSessionAndUser('tok');
    assert.equal(found.user.name, 'Ada L.');
    assert.equal(found.session.expires.getTime(), expires.getTime());
    const later = new Date(expires.getTime() + 1000);
    assert.equal((await adapter.updateSession({ sessionToken: 'tok', expires: later })).expires.getTime(), later.getTime());
    await adapter.deleteSession('tok');
    assert.equal(await adapter.getSessionAndUser('tok'), null);

    await adapter.createVerificationToken({ identifier: 'ada@example.com', token: 'vt', expires });
    assert.equal((await adapter.useVerificationToken({ identifier: 'ada@example.com', token: 'vt' })).token, 'vt');
    assert.equal(await adapter.useVerificationToken({ identifier: 'ada@example.com', token: 'vt' }), null);

    await adapter.unlinkAccount({ provider: 'github', providerAccountId: 'gh-1' });
    assert.equal(await adapter.getUserByAccount({ provider: 'github', providerAccountId: 'gh-1' }), null);
    await adapter.deleteUser(user.id);
    assert.equal(await adapter.getUser(user.id), null);
  });
});
