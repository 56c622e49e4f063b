// The package installed under the name `mongodb` (a drop-in for the official Node.js
// driver): an application's require('mongodb') gets the CommonJS entry and its
// import('mongodb') the ES one, each with MongoClient, the BSON classes and the error
// classes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

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

/** Runs `source` (a CommonJS or ES module, by `name`'s extension) with node in `cwd`; resolves to its output. */
function run(cwd, name, source) {
  const file = path.join(cwd, name);
  writeFileSync(file, source);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
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
