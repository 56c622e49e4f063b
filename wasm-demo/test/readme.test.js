// The README's Node.js quick start (issue 47), run as written: its code block, taken
// from README.md, as a script of an application that has installed the package
// (node_modules/anymongo, linked to this package), with MONGODB_URI naming a
// SecantusDB on loopback. tests/tests/readme.rs checks that this block is claimed.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runScript, startServer } from './server.js';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const HEADING = '### The npm package in Node.js';

/** The first ```js block under the README's Node.js quick start heading. */
function quickStart() {
  const readme = readFileSync(path.join(packageDir, '..', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(HEADING));
  assert.ok(readme.includes(HEADING), `README.md has no "${HEADING}"`);
  const block = /^```js\n([\s\S]*?)^```$/m.exec(section);
  assert.ok(block, 'the Node.js quick start has a js block');
  return block[1];
}

describe('the README', () => {
  let server;
  let app;

  before(async () => {
    server = await startServer();
    app = mkdtempSync(path.join(os.tmpdir(), 'anymongo-readme-'));
    mkdirSync(path.join(app, 'node_modules'));
    symlinkSync(packageDir, path.join(app, 'node_modules', 'anymongo'), 'dir');
  });

  after(async () => {
    await server?.stop();
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('runs its Node.js quick start as written', { timeout: 60_000 }, async () => {
    // The child inherits this process's environment: the script reads MONGODB_URI.
    process.env.MONGODB_URI = server.uri;
    const { code, output } = await runScript(app, quickStart(), 30_000);
    assert.equal(code, 0, output);
    // One order, updated once: qty 2 + 1.
    const printed = output.trim().split('\n').join(' ');
    assert.match(printed, /item: 'tea',\s+qty: 3/, output);
    assert.doesNotMatch(printed, /qty: 2/, output);
  });
});
