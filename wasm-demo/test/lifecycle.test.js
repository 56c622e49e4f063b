// close() leaves nothing behind: a process that used a client exits on its own.
// And the packed tarball installs into an empty folder and works from there.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startServer } from './server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.join(here, '..');
const run = promisify(execFile);

/** Runs `node script.mjs` in `cwd`; resolves to its exit code and output, or fails after `bound` ms. */
function runScript(cwd, script, bound) {
  const file = path.join(cwd, 'script.mjs');
  writeFileSync(file, script);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the script did not exit within ${bound} ms (open handles?): ${output}`));
    }, bound);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

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

  it('packs, installs from the tarball into an empty folder, connects and inserts', { timeout: 180_000 }, async () => {
    const packed = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-pack-'));
    const app = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-app-'));
    try {
      await run('npm', ['pack', '--pack-destination', packed], { cwd: packageDir, timeout: 60_000 });
      const tarball = readdirSync(packed).find((name) => /^anymongo-.*\.tgz$/.test(name));
      assert.ok(tarball, 'npm pack made anymongo-*.tgz');
      writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', path.join(packed, tarball)], {
        cwd: app,
        timeout: 120_000,
      });
      const script = `
        import { MongoClient, ObjectId } from 'anymongo';
        const client = new MongoClient(${JSON.stringify(server.uri)});
        await client.connect();
        const { insertedId } = await client.db('installed').collection('c').insertOne({ from: 'tarball' });
        const found = await client.db('installed').collection('c').findOne({ _id: insertedId });
        console.log(insertedId instanceof ObjectId, found.from);
        await client.close();
      `;
      const { code, output } = await runScript(app, script, 30_000);
      assert.equal(code, 0, output);
      assert.equal(output.trim(), 'true tarball');
    } finally {
      rmSync(packed, { recursive: true, force: true });
      rmSync(app, { recursive: true, force: true });
    }
  });
});
