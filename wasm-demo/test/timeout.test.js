// timeoutMS from the npm package against a server that accepts connections and never
// answers (issue 22), as natively (tests/tests/silent_server.rs) and as wasip2
// (tests/tests/wasi.rs): the operation rejects with MongoOperationTimeoutError once its
// 200 ms have passed; the client, closed, leaves no connection open, and a process
// that used it exits on its own (no timer left pending). The bound is generous
// (200 ms + 1 s) for loaded CI machines; each test reports what it measured.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BSON } from 'bson';
import { toError } from '../js/errors.js';
import {
  MongoClient,
  MongoError,
  MongoOperationTimeoutError,
  MongoServerSelectionError,
} from '../js/node.js';
import { runScript } from './server.js';

const TIMEOUT_MS = 200;
const CLOCK_SLACK_MS = 10;
const MARGIN_MS = 1000;

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
