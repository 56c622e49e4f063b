// The npm package's child of the warm-requests measurement (anymongo_tests::warm_requests,
// run by the `warm_requests` binary; asserted by wasm-demo/test/warm_requests.test.js):
//
//   node steps.mjs node URI               the package's Node.js entry (js/node.js)
//   node steps.mjs workerd URI            worker.js (next to this file) under workerd (where
//                                         tests/setup.sh js-runtimes puts it), its
//                                         client kept in a Durable Object
//
// One client answers the steps read on stdin, one a line, with `done STEP` (or
// `failed STEP: WHY`): `find` finds {_id: 1} in warm_requests.items, `abandon` finds the
// whole collection in batches of 2, reads the first document and leaves the cursor
// unfinished. Under workerd each step is a request to the Worker (`/find`, `/abandon`).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const DATABASE = 'warm_requests';
const COLLECTION = 'items';
// Under the parent's bound on a step (60 s): the first request compiles the Worker.
const REQUEST_TIMEOUT_MS = 50_000;

const [runtime, ...rest] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.join(here, '..', '..', 'wasm-demo');

/** Runs one step; resolves once it ended. */
let run;
let stop = async () => {};
if (runtime === 'node') {
  const { MongoClient } = await import('../../wasm-demo/js/node.js');
  const client = new MongoClient(rest[0]);
  const collection = client.db(DATABASE).collection(COLLECTION);
  run = async (step) => {
    if (step === 'abandon') {
      if ((await collection.find({}).batchSize(2).next()) === null) throw new Error('no document');
    } else if ((await collection.findOne({ _id: 1 })) === null) {
      throw new Error('no document with _id 1');
    }
  };
  stop = () => client.close();
} else if (runtime === 'workerd') {
  const [uri] = rest;
  const { serveWorker } = await import('../../wasm-demo/test/server.js');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-warm-workerd-'));
  const served = await serveWorker(dir, readFileSync(path.join(here, 'worker.js'), 'utf8'), {
    packageDir,
    bsonFile: path.join(packageDir, 'node_modules', 'bson', 'lib', 'bson.mjs'),
    bindings: { URI: uri, DATABASE, COLLECTION },
    durableObjects: { HOLDER: 'Holder' },
  });
  run = async (step) => {
    const response = await fetch(`${served.url}${step}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const body = await response.text();
    if (!response.ok) throw new Error(`${response.status}: ${body} ${served.log()}`);
  };
  stop = async () => {
    await served.stop();
    rmSync(dir, { recursive: true, force: true });
  };
} else {
  console.error('usage: node steps.mjs node URI | node steps.mjs workerd URI');
  process.exit(2);
}

try {
  for await (const step of createInterface({ input: process.stdin })) {
    try {
      await run(step);
      console.log(`done ${step}`);
    } catch (error) {
      console.log(`failed ${step}: ${String(error?.stack ?? error).replaceAll('\n', ' | ')}`);
    }
  }
} finally {
  await stop();
}
