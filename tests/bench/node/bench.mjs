// The npm column of the benchmarks: the spec's single- and multi-document tasks with
// the npm package `anymongo` (wasm-demo/, built by wasm-demo/build.sh) and the official
// `mongodb` Node.js driver 7.x, in one Node.js process, against the same server and
// data, alternating iteration by iteration (the first of the pair alternating between
// rounds), as the Rust program does. Run by it (`--node`):
//
//   node bench.mjs URI quick|spec DATA_DIR MONGODB_DIR [ONLY]
//
// DATA_DIR holds the unpacked data sets; MONGODB_DIR a node_modules folder with the
// official driver (./run.sh bench installs it into the cache, never into the repo);
// ONLY, when given, runs only the tasks whose name contains it (any case), as --only.
// Prints one JSON line per task: {task, anymongo, official} in MB/s, with iterations.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { MongoClient as AnyClient } from '../../../wasm-demo/js/node.js';

const [uri, rules, dataDir, mongodbDir, only = ''] = process.argv.slice(2);
const { MongoClient: OfficialClient } = createRequire(join(mongodbDir, 'x.js'))('mongodb');

// The spec's iteration rules, or --quick's (see tests/bench/src/stats.rs).
const POLICY = rules === 'quick'
  ? { minMs: 0, maxIterations: 10, maxMs: 5_000 }
  : { minMs: 60_000, maxIterations: 100, maxMs: 300_000 };
const wantsMore = (t) => t.samples.length === 0
  || ((t.samples.length < POLICY.maxIterations || t.spent < POLICY.minMs) && t.spent < POLICY.maxMs);
// The most one iteration may take.
const ITERATION_TIMEOUT_MS = 300_000;

// The single- and multi-document data sets are plain JSON (no extended types).
const read = (file) => JSON.parse(readFileSync(join(dataDir, 'single_and_multi_document', file), 'utf8'));
const tweet = read('tweet.json');
const small = read('small_doc.json');
const large = read('large_doc.json');
const SCALE = 10_000;
const LARGE_SCALE = 10;

// The insert tasks' input, made before the clock starts, as the Rust program does:
// fresh copies, because both drivers add an `_id` to each document they insert (so one
// object cannot be inserted twice), and copying the large document's 94,355 keys in
// JavaScript took longer than either driver's insert of it.
const copies = (document, count) => async (client) => {
  await reset(client);
  return Array.from({ length: count }, () => ({ ...document }));
};

// name, size in MB (the spec's), setup, before (its result is the input of do), do.
const TASKS = [
  ['Run command', 0.13, null, null, async (c) => { for (let i = 0; i < SCALE; i++) await c.db('admin').command({ hello: true }); }],
  ['Find one by ID', 16.22, 'ids', null, async (c) => {
    const corpus = c.db('perftest').collection('corpus');
    for (let id = 1; id <= SCALE; id++) {
      if (!(await corpus.findOne({ _id: id }))) throw new Error(`no document with _id ${id}`);
    }
  }],
  ['Small doc insertOne', 2.75, null, copies(small, SCALE), async (c, documents) => {
    const corpus = c.db('perftest').collection('corpus');
    for (const document of documents) await corpus.insertOne(document);
  }],
  ['Large doc insertOne', 27.31089, null, copies(large, LARGE_SCALE), async (c, documents) => {
    const corpus = c.db('perftest').collection('corpus');
    for (const document of documents) await corpus.insertOne(document);
  }],
  ['Find many and empty the cursor', 16.22, 'many', null, async (c) => {
    let n = 0;
    for await (const _ of c.db('perftest').collection('corpus').find({})) n++;
    if (n !== SCALE) throw new Error(`find many read ${n} documents, not ${SCALE}`);
  }],
  ['Small doc bulk insert', 2.75, null, copies(small, SCALE), async (c, documents) => {
    await c.db('perftest').collection('corpus').insertMany(documents);
  }],
  ['Large doc bulk insert', 27.31089, null, copies(large, LARGE_SCALE), async (c, documents) => {
    await c.db('perftest').collection('corpus').insertMany(documents);
  }],
];

async function reset(client) {
  const db = client.db('perftest');
  await db.collection('corpus').drop().catch(() => {});
  await db.command({ create: 'corpus' });
}

// The read tasks' data, written once (by the official driver), read by both.
async function setup(client, kind) {
  await client.db('perftest').dropDatabase();
  if (!kind) return;
  await reset(client);
  const docs = Array.from({ length: SCALE }, (_, i) => (kind === 'ids' ? { _id: i + 1, ...tweet } : { ...tweet }));
  await client.db('perftest').collection('corpus').insertMany(docs);
}

async function iteration(client, before, run, timings) {
  const input = before ? await before(client) : undefined;
  const start = process.hrtime.bigint();
  let timer;
  await Promise.race([
    run(client, input),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('iteration timed out')), ITERATION_TIMEOUT_MS); }),
  ]).finally(() => clearTimeout(timer));
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  timings.samples.push(ms);
  timings.spent += ms;
}

// The spec's score: size over the nearest-rank median.
function score(timings, megabytes) {
  const sorted = [...timings.samples].sort((a, b) => a - b);
  const median = sorted[Math.max(0, Math.floor(sorted.length * 50 / 100) - 1)];
  return { mb_per_s: megabytes / (median / 1000), iterations: sorted.length };
}

const any = new AnyClient(uri);
await any.connect();
const official = new OfficialClient(uri);
await official.connect();
try {
  for (const [name, megabytes, kind, before, run] of TASKS) {
    if (!name.toLowerCase().includes(only.toLowerCase())) continue;
    await setup(official, kind);
    const a = { samples: [], spent: 0 };
    const o = { samples: [], spent: 0 };
    // A driver that fails a task is reported as failed there; the other one goes on.
    const failed = new Map();
    for (let round = 0; (wantsMore(a) && !failed.has(a)) || (wantsMore(o) && !failed.has(o)); round++) {
      const pair = round % 2 === 0 ? [[any, a], [official, o]] : [[official, o], [any, a]];
      for (const [client, timings] of pair) {
        if (!wantsMore(timings) || failed.has(timings)) continue;
        try {
          await iteration(client, before, run, timings);
        } catch (error) {
          failed.set(timings, String(error.message ?? error).split('\n')[0]);
        }
      }
    }
    const result = (t) => (failed.has(t) ? { error: failed.get(t) } : score(t, megabytes));
    console.log(JSON.stringify({ task: name, anymongo: result(a), official: result(o) }));
  }
  await official.db('perftest').dropDatabase();
} finally {
  await any.close();
  await official.close();
}
