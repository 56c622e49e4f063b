// The Cloudflare Worker template (templates/cloudflare-worker/src/index.js) served by
// workerd against SecantusDB, behind a loopback proxy that counts the connections the
// Worker opens: the first request connects, the later ones reuse the connections of the
// client its Durable Object keeps.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { serveWorker, startServer, workerd } from './server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.join(here, '..');
const template = path.join(packageDir, '..', 'templates', 'cloudflare-worker', 'src', 'index.js');

/** A TCP proxy on loopback in front of `port` that counts the connections it accepts. */
function countingProxy(port) {
  const sockets = new Set();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted += 1;
    const upstream = net.connect({ host: '127.0.0.1', port });
    for (const [from, to] of [[client, upstream], [upstream, client]]) {
      sockets.add(from);
      from.pipe(to);
      from.once('error', () => to.destroy());
      from.once('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: server.address().port,
        accepted: () => accepted,
        close() {
          for (const socket of sockets) socket.destroy();
          return new Promise((done) => server.close(done));
        },
      });
    });
  });
}

describe('the Cloudflare Worker template under workerd', {
  timeout: 180_000,
  skip: !existsSync(workerd) && 'workerd not installed (bash tests/setup.sh js-runtimes)',
}, () => {
  let server;
  let proxy;
  let work;
  let worker;

  before(async () => {
    server = await startServer();
    proxy = await countingProxy(server.port);
    work = mkdtempSync(path.join(os.tmpdir(), 'anymongo-worker-template-'));
    worker = await serveWorker(work, readFileSync(template, 'utf8'), {
      packageDir,
      bsonFile: path.join(packageDir, 'node_modules', 'bson', 'lib', 'bson.mjs'),
      bindings: { MONGODB_URI: `mongodb://127.0.0.1:${proxy.port}/edge_worker?serverSelectionTimeoutMS=5000` },
      durableObjects: { ITEMS: 'Items' },
    });
  });

  after(async () => {
    await worker?.stop();
    await proxy?.close();
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** One request to the Worker: its status, its JSON body and its headers. */
  async function request(method, pathname, body) {
    // The first request may wait for workerd to compile the Worker.
    const response = await fetch(new URL(pathname, worker.url), { method, body, signal: AbortSignal.timeout(60_000) });
    assert.equal(response.headers.get('content-type'), 'application/json', worker.log());
    return { status: response.status, body: await response.json(), headers: response.headers };
  }

  it('connects on the first request and reuses the connection for the next ones', async (t) => {
    assert.equal(proxy.accepted(), 0, 'nothing connects before the first request');
    const created = await request('POST', '/items', JSON.stringify({ name: 'tea', qty: 2 }));
    assert.equal(created.status, 201, `${JSON.stringify(created.body)} ${worker.log()}`);
    const id = created.body.insertedId.$oid;
    assert.match(id, /^[0-9a-f]{24}$/);
    assert.equal(created.headers.get('location'), `/items/${id}`);
    const first = proxy.accepted();
    assert.ok(first >= 1, 'the first request connected');
    t.diagnostic(`connections opened by the first request: ${first}`);

    for (let i = 0; i < 3; i += 1) {
      const found = await request('GET', `/items/${id}`);
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.deepEqual(found.body, { _id: { $oid: id }, name: 'tea', qty: 2 });
    }
    const again = await request('POST', '/items', JSON.stringify({ _id: 'sku-1', name: 'cup' }));
    assert.equal(again.status, 201, JSON.stringify(again.body));
    assert.deepEqual(again.body, { insertedId: 'sku-1' });
    assert.equal(proxy.accepted(), first, 'later requests opened no connection');

    const duplicate = await request('POST', '/items', JSON.stringify({ _id: 'sku-1' }));
    assert.equal(duplicate.status, 409, JSON.stringify(duplicate.body));
    assert.equal(proxy.accepted(), first, 'a failed write keeps the connection');

    // An _id with a space and a slash: its Location is percent-encoded, and leads to it.
    const odd = await request('POST', '/items', JSON.stringify({ _id: 'a b/c' }));
    assert.equal(odd.headers.get('location'), '/items/a%20b%2Fc');
    const found = await request('GET', odd.headers.get('location'));
    assert.deepEqual([found.status, found.body], [200, { _id: 'a b/c' }]);
  });

  it('answers missing items, unknown routes and bad input with JSON errors', async () => {
    const missing = await request('GET', '/items/000000000000000000000000');
    assert.deepEqual([missing.status, missing.body], [404, { error: 'no item with _id 000000000000000000000000' }]);
    assert.equal((await request('GET', '/elsewhere')).status, 404);
    assert.equal((await request('DELETE', '/items/1')).status, 405);
    assert.equal((await request('GET', '/items/%FF')).status, 400);
    for (const [input, says] of [
      ['{not json', /^the body is not JSON/],
      ['[1, 2]', /^the body must be a JSON object$/],
    ]) {
      const { status, body } = await request('POST', '/items', input);
      assert.equal(status, 400, JSON.stringify(body));
      assert.match(body.error, says);
    }
  });
});
