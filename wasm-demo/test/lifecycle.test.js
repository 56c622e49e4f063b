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
   * Connects, inserts and reads back with the installed package, under `command`,
   * loaded by `import`, or by `require` (its CommonJS entry under Node.js).
   */
  async function connectAndInsert(runtime, command, loader = 'import') {
    const load = loader === 'require'
      ? "import { createRequire } from 'node:module';\n const { MongoClient, ObjectId } = createRequire(import.meta.url)('anymongo');"
      : "import { MongoClient, ObjectId } from 'anymongo';";
    const script = `
      ${load}
      const client = new MongoClient(${JSON.stringify(server.uri)});
      await client.connect();
      const coll = client.db('installed').collection(${JSON.stringify(runtime)});
      const { insertedId } = await coll.insertOne({ from: ${JSON.stringify(runtime)} });
      const found = await coll.findOne({ _id: insertedId });
      console.log(insertedId instanceof ObjectId, found.from);
      await client.close();
    `;
    const { code, output } = await runScript(app, script, 60_000, command);
    assert.equal(code, 0, output);
    assert.equal(output.trim().split('\n').at(-1), `true ${runtime}`);
  }

  it('works under Node.js', { timeout: 60_000 }, async () => {
    await connectAndInsert('node');
  });

  it('works under Node.js through require()', { timeout: 60_000 }, async () => {
    await connectAndInsert('node', undefined, 'require');
  });

  const deno = path.join(runtimes, 'deno');
  it('works under Deno (Deno.connect)', { timeout: 60_000, skip: !existsSync(deno) && 'deno not installed (bash tests/setup.sh js-runtimes)' }, async () => {
    await connectAndInsert('deno', [deno, 'run', '--allow-net', '--allow-read', '--allow-env']);
  });

  const bun = path.join(runtimes, 'bun');
  it('works under Bun (node:net)', { timeout: 60_000, skip: !existsSync(bun) && 'bun not installed (bash tests/setup.sh js-runtimes)' }, async () => {
    await connectAndInsert('bun', [bun]);
  });

  it('works under Bun through require()', { timeout: 60_000, skip: !existsSync(bun) && 'bun not installed (bash tests/setup.sh js-runtimes)' }, async () => {
    await connectAndInsert('bun', [bun], 'require');
  });
  it('works under workerd (the Workers runtime: cloudflare:sockets, single-threaded monitoring)', {
    timeout: 90_000,
    skip: !existsSync(workerd) && 'workerd not installed (bash tests/setup.sh js-runtimes)',
  }, async () => {
    const worker = await serveWorker(
      app,
      `
      import { MongoClient } from 'anymongo/js/workers.js';
      export default {
        async fetch() {
          const client = new MongoClient(${JSON.stringify(server.uri)}, { serverSelectionTimeoutMS: 5000 });
          try {
            await client.connect();
            const coll = client.db('installed').collection('workerd');
            const { insertedId } = await coll.insertOne({ from: 'workerd' });
            const found = await coll.findOne({ _id: insertedId });
            return Response.json({ from: found.from });
          } catch (error) {
            return Response.json({ error: \`\${error.name}: \${error.message}\` }, { status: 500 });
          } finally {
            await client.close();
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
      assert.deepEqual(body, { from: 'workerd' }, worker.log());
    } finally {
      await worker.stop();
    }
  });
});
