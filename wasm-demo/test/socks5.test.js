// A SOCKS5 proxy from JavaScript: the core's SOCKS5 handshake runs on the byte stream
// the Node.js transport supplies, to pproxy (PyPI, in the test venv) on loopback, which
// carries the connection to SecantusDB; with TLS, the transport's secure() starts TLS
// on the tunnelled socket (tls.connect({ socket })).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { MongoClient } from '../js/node.js';
import { cache, freePort, runtimes, startServer } from './server.js';

const pproxy = path.join(cache, 'venv', 'bin', 'pproxy');
const START_TIMEOUT_MS = 30_000;
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

/** Starts pproxy as a SOCKS5 server requiring `user`/`password`; resolves once it listens. */
async function startProxy(user, password) {
  const port = await freePort();
  // `--auth 0`: every connection must authenticate (pproxy otherwise remembers an address).
  const child = spawn(pproxy, ['-l', `socks5://127.0.0.1:${port}#${user}:${password}`, '--auth', '0', '-v'], {
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proxy = { port, log: '' };
  const serving = `127.0.0.1:${port} by socks5`;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pproxy did not listen within ${START_TIMEOUT_MS} ms: ${proxy.log}`)), START_TIMEOUT_MS);
    const collect = (chunk) => {
      proxy.log += chunk;
      if (proxy.log.includes(serving)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`pproxy exited (${code}): ${proxy.log}`));
    });
  });
  proxy.stop = () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGKILL'))));
  return proxy;
}

describe('through a SOCKS5 proxy', { timeout: 120_000, skip: !existsSync(pproxy) && `${pproxy} is missing (bash tests/setup.sh venv)` }, () => {
  let server;
  let proxy;

  before(async () => {
    server = await startServer();
    proxy = await startProxy('edge', 's3cret');
  });

  after(async () => {
    await proxy?.stop();
    await server?.stop();
  });

  /** The server's URI by host name (the proxy resolves it) with `proxy` options. */
  const viaProxy = (username, password) =>
    `mongodb://localhost:${server.port}/?proxyHost=127.0.0.1&proxyPort=${proxy.port}` +
    `&proxyUsername=${username}&proxyPassword=${password}`;

  it('carries CRUD with username/password, the host name resolved by the proxy', { timeout: 30_000 }, async () => {
    const client = new MongoClient(viaProxy('edge', 's3cret'), OPTIONS);
    try {
      await client.connect();
      const coll = client.db('socks5').collection('js');
      const { insertedId } = await coll.insertOne({ via: 'proxy' });
      assert.equal((await coll.findOne({ _id: insertedId })).via, 'proxy');
    } finally {
      await client.close();
    }
    assert.match(proxy.log, new RegExp(`-> localhost:${server.port}`), proxy.log);
  });

  it('fails clearly with the wrong credentials', { timeout: 30_000 }, async () => {
    const client = new MongoClient(viaProxy('edge', 'n0t-th3-p4ss'), OPTIONS);
    try {
      await assert.rejects(client.connect(), (error) => {
        assert.match(error.message, new RegExp(`SOCKS5 proxy 127\\.0\\.0\\.1:${proxy.port}`));
        assert.match(error.message, /username\/password authentication/);
        assert.doesNotMatch(error.message, /n0t-th3-p4ss/);
        return true;
      });
    } finally {
      await client.close();
    }
  });
});

describe('TLS through a SOCKS5 proxy', { timeout: 120_000, skip: !existsSync(pproxy) && `${pproxy} is missing (bash tests/setup.sh venv)` }, () => {
  let dir;
  let server;
  let proxy;

  before(async () => {
    // A self-signed certificate for localhost and 127.0.0.1 (the replica set's member
    // name), made for this test; not a CA's (Deno's rustls refuses a CA as a server).
    dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-tls-'));
    const certFile = path.join(dir, 'server.pem');
    const keyFile = path.join(dir, 'server.key');
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:FALSE',
      '-keyout', keyFile, '-out', certFile,
    ], { timeout: 30_000 });
    server = await startServer({ tls: { certFile, keyFile } });
    server.caFile = certFile;
    proxy = await startProxy('edge', 's3cret');
  });

  after(async () => {
    await proxy?.stop();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('carries CRUD over TLS to the server, its certificate checked, through the tunnel', { timeout: 30_000 }, async () => {
    const uri =
      `mongodb://localhost:${server.port}/?tls=true&tlsCAFile=${encodeURIComponent(server.caFile)}` +
      `&proxyHost=127.0.0.1&proxyPort=${proxy.port}&proxyUsername=edge&proxyPassword=s3cret`;
    const client = new MongoClient(uri, OPTIONS);
    try {
      await client.connect();
      const coll = client.db('socks5').collection('tls');
      const { insertedId } = await coll.insertOne({ via: 'proxy+tls' });
      assert.equal((await coll.findOne({ _id: insertedId })).via, 'proxy+tls');
    } finally {
      await client.close();
    }
    assert.match(proxy.log, new RegExp(`-> localhost:${server.port}`), proxy.log);
  });

  const deno = path.join(runtimes, 'deno');
  it('carries CRUD over TLS through the tunnel under Deno (Deno.startTls)', {
    timeout: 60_000,
    skip: !existsSync(deno) && 'deno not installed (bash tests/setup.sh js-runtimes)',
  }, async () => {
    const uri =
      `mongodb://localhost:${server.port}/?tls=true&tlsCAFile=${encodeURIComponent(server.caFile)}` +
      `&proxyHost=127.0.0.1&proxyPort=${proxy.port}&proxyUsername=edge&proxyPassword=s3cret`;
    const script = path.join(dir, 'deno.mjs');
    writeFileSync(
      script,
      `
      import { MongoClient } from ${JSON.stringify(new URL('../js/deno.js', import.meta.url).href)};
      const client = new MongoClient(${JSON.stringify(uri)}, ${JSON.stringify(OPTIONS)});
      await client.connect();
      const coll = client.db('socks5').collection('deno');
      const { insertedId } = await coll.insertOne({ via: 'deno' });
      console.log((await coll.findOne({ _id: insertedId })).via);
      await client.close();
      `,
    );
    // From the package's folder, with its node_modules as they are (bson).
    const args = ['run', '--node-modules-dir=manual', '--allow-net', '--allow-read', '--allow-env', script];
    const { stdout } = await promisify(execFile)(deno, args, { cwd: new URL('..', import.meta.url), timeout: 45_000 });
    assert.equal(stdout.trim(), 'deno');
  });

  it('still checks the certificate through the tunnel (no CA given: untrusted)', { timeout: 30_000 }, async () => {
    const uri = `mongodb://localhost:${server.port}/?tls=true&proxyHost=127.0.0.1&proxyPort=${proxy.port}&proxyUsername=edge&proxyPassword=s3cret`;
    const client = new MongoClient(uri, OPTIONS);
    try {
      await assert.rejects(client.connect(), /certificate/i);
    } finally {
      await client.close();
    }
  });
});
