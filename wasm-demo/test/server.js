// The test server: SecantusDB (a MongoDB-wire-compatible server) on loopback, from the
// venv tests/setup.sh caches, started and stopped by the tests themselves.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { MongoClient } from '../js/node.js';
import { writeWorkerdConfig } from './workerd_config.js';

export const cache = process.env.ANYMONGO_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'anymongo');

/** Where `bash tests/setup.sh js-runtimes` links Deno, Bun and workerd (from npm). */
export const runtimes = path.join(cache, 'js-runtimes', 'node_modules', '.bin');

/**
 * Where the official Node driver is installed, for the tests that compare its answers
 * with anymongo's: the libraries harness's control (test/libraries/run.js, which
 * ./run.sh test runs before these tests), else the benchmarks' (./run.sh bench); null
 * when neither is in the cache.
 */
export function officialDriverPath() {
  const libraries = path.join(cache, 'libraries');
  const installs = existsSync(libraries)
    ? readdirSync(libraries).map((key) => path.join(libraries, key, 'official'))
    : [];
  const candidates = [...installs, path.join(cache, 'bench-node')].map((dir) => path.join(dir, 'node_modules', 'mongodb'));
  return candidates.find((candidate) => existsSync(path.join(candidate, 'package.json'))) ?? null;
}
const secantusd = path.join(cache, 'venv', 'bin', 'secantusd-py');
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts SecantusDB on a free loopback port; `auth` requires authentication, `storage`
 * is a folder (users created earlier live there) or ":memory:", `tls` ({ certFile, keyFile })
 * makes it accept TLS connections only, `standalone` makes it a standalone server rather
 * than a single-node replica set.
 */
export async function startServer({ auth = false, storage = ':memory:', tls = null, standalone = false } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-server-'));
  const log = path.join(dir, 'server.log');
  const port = await freePort();
  const args = ['--host', '127.0.0.1', '--port', String(port), '--storage-path', storage, '--enable-test-commands'];
  if (auth) args.push('--auth');
  if (standalone) args.push('--standalone');
  if (tls) args.push('--tls-cert-file', tls.certFile, '--tls-key-file', tls.keyFile);
  const out = openSync(log, 'w');
  const child = spawn(secantusd, args, { cwd: dir, stdio: ['ignore', out, out] });
  let exited = null;
  const exit = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
    child.once('error', (error) => {
      exited = { error };
      resolve();
    });
  });
  const logTail = () => readFileSync(log, 'utf8').slice(-2000);
  // Polls until the port accepts, bounded, as the Rust fixture does.
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (exited) throw new Error(`SecantusDB exited while starting (${JSON.stringify(exited)}): ${logTail()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`SecantusDB did not listen on ${port} within ${START_TIMEOUT_MS} ms: ${logTail()}`);
    }
    await delay(50);
  }
  return {
    port,
    uri: `mongodb://127.0.0.1:${port}/`,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exit;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A server requiring authentication, with `user`/`password` (root, SCRAM-SHA-256):
 * the user is created on a server without --auth sharing its storage folder.
 */
export async function startAuthServer(user, password) {
  const storage = mkdtempSync(path.join(os.tmpdir(), 'anymongo-npm-data-'));
  const open = await startServer({ storage });
  const client = new MongoClient(open.uri);
  try {
    await client.db('admin').command({ createUser: user, pwd: password, roles: ['root'], mechanisms: ['SCRAM-SHA-256'] });
  } finally {
    await client.close();
    await open.stop();
  }
  const server = await startServer({ storage, auth: true });
  return {
    ...server,
    async stop() {
      await server.stop();
      rmSync(storage, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `script` with `command` (default: this node) in `cwd`; resolves to its exit code
 * and output, or fails after `bound` ms.
 */
export function runScript(cwd, script, bound, command = [process.execPath]) {
  const file = path.join(cwd, 'script.mjs');
  writeFileSync(file, script);
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], [...command.slice(1), file], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Where `bash tests/setup.sh js-runtimes` puts workerd, the Cloudflare Workers runtime. */
export const workerd = path.join(runtimes, 'workerd');
const WORKERD_START_TIMEOUT_MS = 60_000;

/**
 * Serves the Worker module `source` with workerd from `dir` (worker.js and config.capnp
 * are written there; `options` as writeWorkerdConfig takes them). Resolves once workerd
 * accepts connections, to its `url`, its output (`log()`) and `stop()`.
 */
export async function serveWorker(dir, source, options) {
  writeFileSync(path.join(dir, 'worker.js'), source);
  writeWorkerdConfig(dir, path.join(dir, 'worker.js'), options);
  const port = await freePort();
  const child = spawn(workerd, ['serve', 'config.capnp', '--socket-addr', `http=127.0.0.1:${port}`], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (chunk) => (log += chunk));
  child.stderr.on('data', (chunk) => (log += chunk));
  let exited = null;
  const exit = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
    child.once('error', (error) => {
      exited = { error: String(error) };
      resolve();
    });
  });
  const stop = async () => {
    if (!exited) {
      child.kill('SIGKILL');
      await exit;
    }
  };
  // workerd listens once it has read its configuration: poll, bounded.
  const deadline = Date.now() + WORKERD_START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (exited || Date.now() > deadline) {
      await stop();
      const why = exited ? `exited (${JSON.stringify(exited)})` : `did not listen on ${port} within ${WORKERD_START_TIMEOUT_MS} ms`;
      throw new Error(`workerd ${why}: ${log}`);
    }
    await delay(100);
  }
  return { url: `http://127.0.0.1:${port}/`, log: () => log, stop };
}
