// timeoutMS from the npm package against a server that accepts connections and never
// answers (issue 22), as natively (tests/tests/silent_server.rs) and as wasip2
// (tests/tests/wasi.rs): the operation rejects with MongoOperationTimeoutError once its
// 200 ms have passed; the client, closed, leaves no connection open, and a process
// that used it exits on its own (no timer left pending); and the same under workerd, in
// a Worker whose request ends with the timeout. The bound is generous
// (200 ms + 1 s) for loaded CI machines; each test reports what it measured.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BSON } from 'bson';
import { toError } from '../js/error_documents.js';
import {
  MongoClient,
  MongoError,
  MongoOperationTimeoutError,
  MongoServerSelectionError,
} from '../js/node.js';
import { runScript, serveWorker, workerd } from './server.js';

const TIMEOUT_MS = 200;
const CLOCK_SLACK_MS = 10;
const MARGIN_MS = 1000;
const packageDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A server on 127.0.0.1 that accepts connections, reads whatever comes and never
 * writes a byte. `whenAllClosed()` resolves once every connection it accepted is
 * closed (by the client); `close()` destroys those left and stops listening.
 */
function startSilentServer() {
  const sockets = new Set();
  let accepted = 0;
  let bytesRead = 0;
  let waiters = [];
  const settle = () => {
    if (sockets.size === 0) {
      waiters.forEach((resolve) => resolve());
      waiters = [];
    }
  };
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('data', (chunk) => (bytesRead += chunk.length));
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      settle();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        uri: `mongodb://127.0.0.1:${server.address().port}/`,
        seen: () => ({ accepted, open: sockets.size, bytesRead }),
        whenAllClosed: () => new Promise((resolve) => {
          waiters.push(resolve);
          settle();
        }),
        close() {
          for (const socket of sockets) socket.destroy();
          return new Promise((resolve) => server.close(resolve));
        },
      });
    });
  });
}

/** `promise`, or a rejection saying `what` did not happen within `ms`. */
function within(ms, what, promise) {
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** Runs `operation`, which must reject; resolves to its error and how long it took (ms). */
async function failed(operation) {
  const started = performance.now();
  try {
    await operation();
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
  assert.fail('a silent server cannot answer');
}

/** Checks the error is the operation's timeout and came in time; reports the figure. */
function check(t, { error, ms }) {
  t.diagnostic(`elapsed ${ms.toFixed(1)} ms: ${error?.name}: ${error?.message}`);
  assert.ok(error instanceof MongoOperationTimeoutError, `${error?.stack ?? error}`);
  assert.ok(error instanceof MongoError);
  assert.equal(error.name, 'MongoOperationTimeoutError');
  assert.match(error.message, /timeoutMS 200 ms/);
  assert.ok(ms >= TIMEOUT_MS - CLOCK_SLACK_MS, `too soon: ${ms} ms`);
  assert.ok(ms < TIMEOUT_MS + MARGIN_MS, `too late: ${ms} ms`);
}

describe('timeoutMS against a server that never answers', { timeout: 60_000 }, () => {
  let server;

  before(async () => {
    server = await startSilentServer();
  });

  after(async () => {
    await server?.close();
  });

  /** Runs `op` on a client of the silent server with `options`, checks its error, closes the client. */
  async function timesOut(t, query, op, options = {}) {
    const client = new MongoClient(`${server.uri}?${query}`, options);
    try {
      check(t, await failed(() => op(client.db('app').collection('items'))));
    } finally {
      await client.close();
    }
    assert.ok(server.seen().bytesRead > 0, 'the client never reached the server');
    // Nothing the client started goes on holding a connection.
    await within(10_000, `connections left open (${JSON.stringify(server.seen())})`, server.whenAllClosed());
  }

  it('findOne rejects with MongoOperationTimeoutError at timeoutMS', async (t) => {
    await timesOut(t, 'timeoutMS=200&directConnection=true', (items) => items.findOne({ _id: 1 }));
  });

  it('insertOne rejects at timeoutMS, long before serverSelectionTimeoutMS and connectTimeoutMS', async (t) => {
    await timesOut(t, 'timeoutMS=200&serverSelectionTimeoutMS=30000&connectTimeoutMS=30000', (items) =>
      items.insertOne({ _id: 1 }),
    );
  });

  it('timeoutMS given as a client option works the same', async (t) => {
    await timesOut(t, 'serverSelectionTimeoutMS=30000', (items) => items.findOne({}), { timeoutMS: 200 });
  });

  it('an operation\'s own timeoutMS bounds it, the connection it opens included', async (t) => {
    const query = 'serverSelectionTimeoutMS=30000&connectTimeoutMS=30000';
    await timesOut(t, query, (items) => items.findOne({}, { timeoutMS: 200 }));
    await timesOut(t, query, (items) => items.find({}, { timeoutMS: 200 }).toArray());
  });

  it('a process whose operation timed out exits on its own after close()', async (t) => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-timeout-'));
    try {
      const entry = new URL('../js/node.js', import.meta.url).href;
      // connectTimeoutMS and serverSelectionTimeoutMS of 30 s: a timer or socket of
      // theirs left behind would keep the process alive well past the bound.
      const uri = `${server.uri}?timeoutMS=200&serverSelectionTimeoutMS=30000&connectTimeoutMS=30000`;
      const script = `
        import { MongoClient, MongoOperationTimeoutError } from ${JSON.stringify(entry)};
        const client = new MongoClient(${JSON.stringify(uri)});
        const started = performance.now();
        try {
          await client.db('app').collection('items').findOne({});
          console.log('unexpected: answered');
        } catch (error) {
          const ms = (performance.now() - started).toFixed(1);
          console.log(error instanceof MongoOperationTimeoutError ? 'timed out' : 'other error: ' + error, ms);
        }
        await client.close();
      `;
      const started = performance.now();
      const { code, output } = await runScript(work, script, 10_000);
      t.diagnostic(`child: ${output.trim()}; exited after ${(performance.now() - started).toFixed(0)} ms`);
      assert.equal(code, 0, output);
      assert.match(output, /^timed out /m);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  // A Worker connects to the silent server through cloudflare:sockets, with monitoring
  // on demand (no task between requests). workerd's clock (Date.now, performance.now)
  // only moves at I/O and timer events, so the Worker's own figure is what its timers
  // saw; the Node side times the whole request, after a first request that waited for
  // the Worker to start.
  it('under workerd: findOne rejects with MongoOperationTimeoutError at timeoutMS, and the request ends', {
    timeout: 90_000,
    skip: !existsSync(workerd) && 'workerd not installed (bash tests/setup.sh js-runtimes)',
  }, async (t) => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-workerd-'));
    let worker;
    try {
      worker = await serveWorker(
        work,
        `
        import { MongoClient, MongoError, MongoOperationTimeoutError } from 'anymongo/js/workers.js';
        export default {
          async fetch(request) {
            const uri = new URL(request.url).searchParams.get('uri');
            if (!uri) return new Response('ready');
            const client = new MongoClient(uri);
            const started = { date: Date.now(), performance: performance.now() };
            const result = {};
            try {
              await client.db('app').collection('items').findOne({ _id: 1 });
              result.answered = true;
            } catch (error) {
              result.date = Date.now() - started.date;
              result.performance = performance.now() - started.performance;
              result.name = error?.name;
              result.message = error?.message;
              result.isTimeoutError = error instanceof MongoOperationTimeoutError;
              result.isMongoError = error instanceof MongoError;
            } finally {
              await client.close();
              result.closed = Date.now() - started.date;
            }
            return Response.json(result);
          },
        };
        `,
        { packageDir, bsonFile: path.join(packageDir, 'node_modules', 'bson', 'lib', 'bson.mjs') },
      );
      /** One request to the Worker, bounded: resolves to its body and how long it took (ms). */
      const request = async (query) => {
        const started = performance.now();
        const response = await within(
          60_000,
          `a request to the Worker (${worker.log()})`,
          fetch(`${worker.url}${query}`, { signal: AbortSignal.timeout(60_000) }).then((response) => response.text()),
        );
        return { body: response, ms: performance.now() - started };
      };
      const ready = await request('');
      assert.equal(ready.body, 'ready', worker.log());
      t.diagnostic(`workerd: first request (the Worker starting) ${ready.ms.toFixed(1)} ms`);
      const uri = `${server.uri}?timeoutMS=200&directConnection=true`;
      for (let run = 1; run <= 2; run++) {
        const { body, ms } = await request(`?uri=${encodeURIComponent(uri)}`);
        t.diagnostic(`workerd: request ${run}: ${ms.toFixed(1)} ms from Node, in the Worker ${body}`);
        const result = JSON.parse(body);
        assert.equal(result.name, 'MongoOperationTimeoutError', body);
        assert.equal(result.isTimeoutError, true, body);
        assert.equal(result.isMongoError, true, body);
        assert.match(result.message, /timeoutMS 200 ms/);
        // The Worker's clock moved with the timer that ended the operation.
        assert.ok(result.performance >= TIMEOUT_MS - CLOCK_SLACK_MS, `too soon in the Worker: ${body}`);
        assert.ok(result.performance < TIMEOUT_MS + MARGIN_MS, `too late in the Worker: ${body}`);
        assert.ok(ms >= TIMEOUT_MS - CLOCK_SLACK_MS, `too soon: ${ms} ms`);
        assert.ok(ms < TIMEOUT_MS + MARGIN_MS, `too late: ${ms} ms`);
      }
      assert.ok(server.seen().bytesRead > 0, 'the Worker never reached the server');
      // No connection outlives its request. (workerd closes a request's sockets when the
      // request ends, so this holds even if client.close() closed none.)
      await within(10_000, `connections left open (${JSON.stringify(server.seen())})`, server.whenAllClosed());
    } finally {
      await worker?.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});

it('the error of a timeout keeps what the deadline cut as its cause', () => {
  const error = toError(
    BSON.serialize({
      name: 'MongoOperationTimeoutError',
      message: 'operation timed out (timeoutMS 200 ms) during server selection: no server',
      errorLabels: [],
      cause: { name: 'MongoServerSelectionError', message: 'no server', errorLabels: [] },
    }),
  );
  assert.ok(error instanceof MongoOperationTimeoutError);
  assert.ok(error.cause instanceof MongoServerSelectionError);
  assert.equal(error.cause.message, 'no server');
});
