// The package installed under the name `mongodb` (a drop-in for the official Node.js
// driver): an application's require('mongodb') gets the CommonJS entry and its
// import('mongodb') the ES one, each with MongoClient, the BSON classes and the error
// classes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cache, startServer } from './server.js';

const packageDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const BOUND = { timeout: 30_000 };

// What an application catches, with the parent the official driver gives it.
const CHECKS = `
  const assert = require('node:assert/strict');
  const parents = {
    MongoServerError: 'MongoError',
    MongoNetworkError: 'MongoError',
    MongoServerSelectionError: 'MongoSystemError',
    MongoAPIError: 'MongoDriverError',
    MongoRuntimeError: 'MongoDriverError',
    MongoParseError: 'MongoDriverError',
    MongoOperationTimeoutError: 'MongoDriverError',
    MongoTransactionError: 'MongoAPIError',
    MongoExpiredSessionError: 'MongoAPIError',
    MongoCursorExhaustedError: 'MongoAPIError',
    MongoMissingCredentialsError: 'MongoAPIError',
    MongoTopologyClosedError: 'MongoAPIError',
    MongoNotConnectedError: 'MongoAPIError',
    MongoChangeStreamError: 'MongoRuntimeError',
    MongoGridFSStreamError: 'MongoRuntimeError',
  };
  function check(mongodb, file) {
    assert.equal(typeof mongodb.MongoClient, 'function');
    assert.ok(new mongodb.ObjectId() instanceof mongodb.ObjectId);
    for (const [name, parent] of Object.entries(parents)) {
      assert.equal(Object.getPrototypeOf(mongodb[name]), mongodb[parent], name);
    }
    assert.ok(new mongodb.MongoParseError('bad') instanceof mongodb.MongoError);
    return require('node:fs').realpathSync(file);
  }
`;

/** Runs `source` (a CommonJS or ES module, by `name`'s extension) with node in `cwd`, with `args`; resolves to its output. */
function run(cwd, name, source, args = []) {
  const file = path.join(cwd, name);
  writeFileSync(file, source);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(output.trim()) : reject(new Error(`${name} exited with ${code}: ${output}`))));
  });
}

describe('installed as node_modules/mongodb', BOUND, () => {
  let dir;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-as-mongodb-'));
    mkdirSync(path.join(dir, 'node_modules'));
    symlinkSync(packageDir, path.join(dir, 'node_modules', 'mongodb'), 'dir');
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("require('mongodb') loads the CommonJS entry", BOUND, async () => {
    const source = `${CHECKS}\nconsole.log(check(require('mongodb'), require.resolve('mongodb')));\n`;
    assert.equal(await run(dir, 'app.cjs', source), path.join(packageDir, 'pkg', 'node.cjs'));
  });

  it("import('mongodb') loads the ES entry", BOUND, async () => {
    const source = `import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
const require = createRequire(import.meta.url);
${CHECKS}
const mongodb = await import('mongodb');
assert.equal(mongodb.default, mongodb.MongoClient);
console.log(check(mongodb, fileURLToPath(import.meta.resolve('mongodb'))));
`;
    assert.equal(await run(dir, 'app.mjs', source), path.join(packageDir, 'js', 'node.js'));
  });
});

/**
 * A script written for the official driver: command events, a session with a
 * transaction (withTransaction), bulkWrite, listIndexes and a change stream, printing
 * what it saw. The same file runs under the official driver too, when the benchmarks'
 * cache has it, and must print the same.
 */
const OFFICIAL_DRIVER_SCRIPT = `
const { MongoClient } = require('mongodb');

async function main(uri) {
  const client = new MongoClient(uri, { monitorCommands: true, serverSelectionTimeoutMS: 5000 });
  const commands = new Set();
  client.on('commandStarted', (event) => commands.add(event.commandName));
  await client.connect();
  try {
    const orders = client.db('dropin').collection('orders');
    await orders.deleteMany({});
    const bulk = await orders.bulkWrite([
      { insertOne: { document: { _id: 1, item: 'tea', qty: 2 } } },
      { insertOne: { document: { _id: 2, item: 'jam', qty: 1 } } },
      { updateOne: { filter: { _id: 2 }, update: { $inc: { qty: 4 } } } },
      { deleteOne: { filter: { _id: 1 } } },
    ]);
    await orders.createIndex({ item: 1 });
    const indexes = (await orders.listIndexes().toArray()).map((index) => index.name).sort();
    const changes = orders.watch([{ $match: { operationType: 'insert' } }]);
    await changes.tryNext();
    const session = client.startSession();
    try {
      await session.withTransaction(async () => {
        await orders.insertOne({ _id: 3, item: 'milk', qty: 1 }, { session });
        await orders.updateOne({ _id: 2 }, { $inc: { qty: -1 } }, { session });
      });
    } finally {
      await session.endSession();
    }
    const change = await changes.next();
    await changes.close();
    const stock = await orders.find({}, { projection: { _id: 0 } }).sort({ item: 1 }).toArray();
    console.log(JSON.stringify({
      bulk: [bulk.insertedCount, bulk.modifiedCount, bulk.deletedCount],
      indexes,
      change: [change.operationType, change.documentKey._id],
      stock,
      commands: ['insert', 'update', 'delete', 'createIndexes', 'listIndexes', 'aggregate', 'commitTransaction'].filter((name) => commands.has(name)),
    }));
  } finally {
    await client.close();
  }
}

main(process.argv[2]).catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

describe('a script written for the official driver, with anymongo installed as mongodb', { timeout: 90_000 }, () => {
  let server;
  let dir;
  let officialDir;
  const official = path.join(cache, 'bench-node', 'node_modules', 'mongodb');

  before(async () => {
    server = await startServer();
    dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-dropin-'));
    mkdirSync(path.join(dir, 'node_modules'));
    symlinkSync(packageDir, path.join(dir, 'node_modules', 'mongodb'), 'dir');
    officialDir = mkdtempSync(path.join(os.tmpdir(), 'official-dropin-'));
    mkdirSync(path.join(officialDir, 'node_modules'));
    if (existsSync(official)) symlinkSync(official, path.join(officialDir, 'node_modules', 'mongodb'), 'dir');
  });

  after(async () => {
    await server?.stop();
    for (const each of [dir, officialDir]) if (each) rmSync(each, { recursive: true, force: true });
  });

  const EXPECTED = {
    bulk: [2, 1, 1],
    indexes: ['_id_', 'item_1'],
    change: ['insert', 3],
    stock: [
      { item: 'jam', qty: 4 },
      { item: 'milk', qty: 1 },
    ],
    commands: ['insert', 'update', 'delete', 'createIndexes', 'listIndexes', 'aggregate', 'commitTransaction'],
  };

  it('runs unchanged on anymongo', { timeout: 60_000 }, async () => {
    const output = await run(dir, 'app.cjs', OFFICIAL_DRIVER_SCRIPT, [server.uri]);
    assert.deepEqual(JSON.parse(output.split('\n').at(-1)), EXPECTED);
  });

  it('prints the same under the official driver', {
    timeout: 60_000,
    skip: !existsSync(official) && 'the official driver is not in the cache (./run.sh bench installs it)',
  }, async () => {
    const output = await run(officialDir, 'app.cjs', OFFICIAL_DRIVER_SCRIPT, [server.uri]);
    assert.deepEqual(JSON.parse(output.split('\n').at(-1)), EXPECTED);
  });
});
