// close() leaves nothing behind: a process that used a client exits on its own.
// And the packed tarball installs into an empty folder and works from there, under
// Node.js, and under Deno and Bun when tests/setup.sh installed them (from npm).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runScript, runtimes, serveWorker, startServer, workerd } from './server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.join(here, '..');
const run = promisify(execFile);

describe('lifecycle', { timeout: 240_000 }, () => {
  let server;
  let work;

  before(async () => {
    server = await startServer();
    work = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-work-'));
  });

  after(async () => {
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('exits on its own after close(), with monitors running and a cursor left open', { timeout: 30_000 }, async () => {
    const entry = new URL('../js/node.js', import.meta.url).href;
    const script = `
      import { MongoClient } from ${JSON.stringify(entry)};
      const client = new MongoClient(${JSON.stringify(server.uri)}, { heartbeatFrequencyMS: 500 });
      await client.connect();
      const coll = client.db('lifecycle').collection('c');
      await coll.insertMany(Array.from({ length: 50 }, (_, i) => ({ i })));
      const cursor = coll.find({}, { batchSize: 5 });
      await cursor.next();
      await client.close();
      console.log('closed');
    `;
    const { code, output } = await runScript(work, script, 20_000);
    assert.equal(code, 0, output);
    assert.match(output, /closed/);
  });

  it('runs the demo (demo.js, the README demo command\'s npm part) and exits', { timeout: 30_000 }, async () => {
    const { stdout } = await run(process.execPath, [path.join(packageDir, 'demo.js'), server.uri, 'demo_test'], {
      timeout: 20_000,
    });
    assert.deepEqual(stdout.trim().split('\n').slice(1), [
      'inserted 3 documents into anymongo_demo.demo_test',
      'read back 3 documents:',
      '  {"_id":1,"name":"apple","runtime":"npm"}',
      '  {"_id":2,"name":"banana","runtime":"npm"}',
      '  {"_id":3,"name":"cherry","runtime":"npm"}',
    ]);
    assert.match(stdout, /^connected from npm: wire version \d+, replica set 'secantus'/);
  });
});

describe('the packed tarball, installed into an empty folder', { timeout: 240_000 }, () => {
  let server;
  let packed;
  let app;

  before(async () => {
    server = await startServer();
    packed = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-pack-'));
    app = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-app-'));
    await run('npm', ['pack', '--pack-destination', packed], { cwd: packageDir, timeout: 60_000 });
    const tarball = readdirSync(packed).find((name) => /^anymongo-.*\.tgz$/.test(name));
    assert.ok(tarball, 'npm pack made anymongo-*.tgz');
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', path.join(packed, tarball)], {
      cwd: app,
      timeout: 120_000,
    });
  });

  after(async () => {
    await server?.stop();
    for (const dir of [packed, app]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * The smoke set, as source text every runtime runs: CRUD, a session, a transaction,
   * a change stream event and an aggregation cursor, with the installed package's
   * `MongoClient` and `ObjectId`; resolves to the names of the checks that held.
   */
  const SMOKE_SET = `
    async function smokeSet(MongoClient, ObjectId, uri, runtime) {
      // Tracing asked for without @opentelemetry/api installed (an optional peer
      // dependency, which npm does not install): the client works as one that does not trace.
      const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, tracing: { enabled: true } });
      const held = [];
      const check = (name, ok) => held.push(ok ? name : name + ' FAILED');
      try {
        await client.connect();
        const coll = client.db('installed').collection(runtime);
        await coll.deleteMany({});
        const { insertedId } = await coll.insertOne({ from: runtime, n: 1 });
        const found = await coll.findOne({ _id: insertedId });
        check('crud', insertedId instanceof ObjectId && found.from === runtime);
        const session = client.startSession();
        await coll.insertOne({ n: 2 }, { session });
        check('session', (await coll.countDocuments({}, { session })) === 2);
        session.startTransaction();
        await coll.insertOne({ n: 3 }, { session });
        const hidden = await coll.countDocuments({ n: 3 });
        await session.commitTransaction();
        await session.endSession();
        check('transaction', hidden === 0 && (await coll.countDocuments({ n: 3 })) === 1);
        const stream = coll.watch([], { maxAwaitTimeMS: 100 });
        await stream.tryNext();
        await coll.insertOne({ n: 4 });
        const change = await stream.next();
        await stream.close();
        check('change stream', change.operationType === 'insert' && change.fullDocument.n === 4);
        const [sum] = await coll.aggregate([{ $group: { _id: null, total: { $sum: '$n' } } }]).toArray();
        check('aggregation cursor', sum.total === 10);
      } finally {
        await client.close();
      }
      return held.join(', ');
    }
  `;
  const SMOKE_HELD = 'crud, session, transaction, change stream, aggregation cursor';

  /** Runs the smoke set with the installed package under `command`, loaded by `import` or `require`. */
  async function connectAndInsert(runtime, command, loader = 'import') {
    const load = loader === 'require'
      ? "import { createRequire } from 'node:module';\n const { MongoClient, ObjectId } = createRequire(import.meta.url)('anymongo');"
      : "import { MongoClient, ObjectId } from 'anymongo';";
    const script = `
      ${load}
      ${SMOKE_SET}
      console.log(await smokeSet(MongoClient, ObjectId, ${JSON.stringify(server.uri)}, ${JSON.stringify(runtime)}));
    `;
    const { code, output } = await runScript(app, script, 60_000, command);
    assert.equal(code, 0, output);
    assert.equal(output.trim().split('\n').at(-1), SMOKE_HELD);
  }

  it('runs the smoke set under Node.js', { timeout: 60_000 }, async () => {
    await connectAndInsert('node');
  });

  it('runs the smoke set under Node.js through require()', { timeout: 60_000 }, async () => {
    await connectAndInsert('node', undefined, 'require');
  });

  const deno = path.join(runtimes, 'deno');
  it('runs the smoke set under Deno (Deno.connect)', { timeout: 60_000, skip: !existsSync(deno) && 'deno not installed (bash tests/setup.sh js-runtimes)' }, async () => {
    await connectAndInsert('deno', [deno, 'run', '--allow-net', '--allow-read', '--allow-env']);
  });

  const bun = path.join(runtimes, 'bun');
  it('runs the smoke set under Bun (node:net)', { timeout: 60_000, skip: !existsSync(bun) && 'bun not installed (bash tests/setup.sh js-runtimes)' }, async () => {
    await connectAndInsert('bun', [bun]);
  });

  it('runs the smoke set under Bun through require()', { timeout: 60_000, skip: !existsSync(bun) && 'bun not installed (bash tests/setup.sh js-runtimes)' }, async () => {
    await connectAndInsert('bun', [bun], 'require');
  });
  it('runs the smoke set under workerd (the Workers runtime: cloudflare:sockets, single-threaded monitoring)', {
    timeout: 90_000,
    skip: !existsSync(workerd) && 'workerd not installed (bash tests/setup.sh js-runtimes)',
  }, async () => {
    const worker = await serveWorker(
      app,
      `
      import { MongoClient, ObjectId } from 'anymongo/js/workers.js';
      ${SMOKE_SET}
      export default {
        async fetch() {
          try {
            return Response.json({ held: await smokeSet(MongoClient, ObjectId, ${JSON.stringify(server.uri)}, 'workerd') });
          } catch (error) {
            return Response.json({ error: \`\${error.name}: \${error.message}\` }, { status: 500 });
          }
        },
      };
      `,
      {
        packageDir: path.join(app, 'node_modules', 'anymongo'),
        bsonFile: path.join(app, 'node_modules', 'bson', 'lib', 'bson.mjs'),
      },
    );
    try {
      // The first request may wait for workerd to compile the Worker.
      const response = await fetch(worker.url, { signal: AbortSignal.timeout(60_000) });
      const body = await response.json();
      assert.deepEqual(body, { held: SMOKE_HELD }, worker.log());
    } finally {
      await worker.stop();
    }
  });
});
