// TLS session resumption in the Node.js transport (js/transports/node.js): a client's
// connections after its first resume a TLS session of an earlier one to the same host
// (RFC 8446 §2.2: no certificate chain, no signature), asserted on a TLS front that
// issues tickets (node:tls's server, OpenSSL's two tickets per connection) in front of
// SecantusDB; and the client's handshake CPU per connection with and without it,
// measured in a child process (so that the server's share is not in it) and reported
// as a diagnostic.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MongoClient } from '../js/node.js';
import { startServer } from './server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };
/** The connections of the CPU measurement, per mode. */
const MEASURED_CONNECTIONS = 100;

/**
 * A TLS server on 127.0.0.1 with `certFile`/`keyFile`, each connection handed to
 * `serve(socket)`; `resumed` lists, per accepted connection, whether its handshake
 * resumed a session.
 */
function startTlsServer({ certFile, keyFile }, serve) {
  const sockets = new Set();
  const server = tls.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (socket) => {
    front.resumed.push(socket.isSessionReused());
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    serve(socket);
  });
  const front = { resumed: [] };
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      front.port = server.address().port;
      front.stop = () => {
        for (const socket of sockets) socket.destroy();
        return new Promise((done) => server.close(done));
      };
      resolve(front);
    });
  });
}

/** Relays each connection to `port` on 127.0.0.1 (plain). */
function relayTo(port) {
  return (socket) => {
    const upstream = net.connect({ host: '127.0.0.1', port });
    socket.pipe(upstream).pipe(socket);
    upstream.on('error', () => socket.destroy());
    socket.once('close', () => upstream.destroy());
  };
}

/**
 * The child of the measurement: `count` TLS connections through the transport, one
 * after the other, each writing a byte and reading its echo (by then the server's
 * tickets have arrived, as on a connection that is used), and prints the CPU time and
 * wall time per connection. `resume` false gives each connection settings of its own
 * (an extra field in its TLS request, which the transport keys sessions by), so that
 * none resumes.
 */
const MEASURE = `
import { nodeTransport } from ${JSON.stringify(path.join(here, '..', 'js', 'transports', 'node.js'))};
const [port, caFile, count, resume] = process.argv.slice(1);
const request = (i) => ({ servername: 'localhost', caFile, allowInvalidCertificates: false, allowInvalidHostnames: false, ...(resume === 'true' ? {} : { fresh: i }) });
async function once(i) {
  const duplex = await nodeTransport.connect('localhost', Number(port), request(i));
  await duplex.write(new Uint8Array([1]));
  await duplex.read();
  duplex.close();
}
// A first connection (not measured): the JIT, the CA file's read, the first tickets.
await once(-1);
const cpu = process.cpuUsage();
const start = performance.now();
for (let i = 0; i < Number(count); i++) await once(i);
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ cpuUs: (used.user + used.system) / count, wallMs: (performance.now() - start) / count }));
`;

/** Runs the measurement's child; resolves to its `{ cpuUs, wallMs }`. */
function measure(port, caFile, resume) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', MEASURE, String(port), caFile, String(MEASURED_CONNECTIONS), String(resume)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(output));
      else reject(new Error(`the measurement exited with ${code}: ${output}`));
    });
  });
}

describe('TLS session resumption in the Node.js transport', { timeout: 180_000 }, () => {
  let dir;
  let server;
  let front;
  let certs;

  before(async () => {
    // A self-signed RSA certificate for localhost, made for this test.
    dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-resumption-'));
    certs = { certFile: path.join(dir, 'server.pem'), keyFile: path.join(dir, 'server.key') };
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:FALSE',
      '-keyout', certs.keyFile, '-out', certs.certFile,
    ], { timeout: 30_000 });
    server = await startServer();
    front = await startTlsServer(certs, relayTo(server.port));
  });

  after(async () => {
    await front?.stop();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("resumes a session of the client's first connection on its later ones", { timeout: 60_000 }, async () => {
    const uri = `mongodb://localhost:${front.port}/?directConnection=true&tls=true&tlsCAFile=${encodeURIComponent(certs.certFile)}`;
    const client = new MongoClient(uri, OPTIONS);
    try {
      // The monitor's connection and the pool's, then more: four operations at once.
      await client.connect();
      const items = client.db('resumption').collection('items');
      await Promise.all([1, 2, 3, 4].map((i) => items.insertOne({ i })));
      assert.equal(await items.countDocuments(), 4);
    } finally {
      await client.close();
    }
    // The monitor's connection and the pool's first open at once, before any ticket:
    // both handshakes are full (the second at least may be); the later ones resume.
    assert.equal(front.resumed[0], false, 'the first handshake is full');
    const later = front.resumed.slice(2);
    assert.ok(later.length >= 1, `${front.resumed.length} connections`);
    assert.deepEqual(later, later.map(() => true), 'the handshakes after the first two resume');

    // Other TLS settings never resume those sessions (the key holds every setting).
    const before = front.resumed.length;
    const other = new MongoClient(`${uri}&tlsAllowInvalidHostnames=true`, OPTIONS);
    try {
      await other.db('admin').command({ ping: 1 });
    } finally {
      await other.close();
    }
    assert.equal(front.resumed[before], false, "another client's settings: a full handshake first");
  });

  it('takes less handshake CPU per connection when resuming (measured, reported)', { timeout: 120_000 }, async (t) => {
    const echo = await startTlsServer(certs, (socket) => socket.pipe(socket));
    try {
      const full = await measure(echo.port, certs.certFile, false);
      const resumed = await measure(echo.port, certs.certFile, true);
      // The child's first connection is full in both runs; every later one resumes in
      // the second, none in the first.
      const [first, second] = [echo.resumed.slice(0, MEASURED_CONNECTIONS + 1), echo.resumed.slice(MEASURED_CONNECTIONS + 1)];
      assert.ok(first.every((reused) => !reused), 'the first run never resumes');
      assert.deepEqual(second.slice(1), second.slice(1).map(() => true), 'the second run resumes');
      t.diagnostic(
        `client CPU per TLS connection (RSA 2048, ${MEASURED_CONNECTIONS} connections): full handshake ${full.cpuUs.toFixed(0)} µs ` +
          `(${full.wallMs.toFixed(2)} ms wall), resumed ${resumed.cpuUs.toFixed(0)} µs (${resumed.wallMs.toFixed(2)} ms wall)`,
      );
    } finally {
      await echo.stop();
    }
  });
});
