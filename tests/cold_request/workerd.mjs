// The workerd child of the `cold_request` measurement (tests/src/bin/cold_request.rs):
// the npm package `anymongo` (wasm-demo/, built by wasm-demo/build.sh) in a Cloudflare
// Worker (worker.js, next to this file) under a fresh workerd:
//
//   node workerd.mjs WORKERD DATABASE COLLECTION URI
//
// It serves worker.js with WORKERD (its modules given as a bundler would: the package's
// workerd entry js/workers.js, its .wasm as a WebAssembly module, bson), then follows
// the protocol of anymongo_tests::cold_request over two HTTP requests to the Worker: the
// first creates the client and finds {_id: 1} (`cold MS`); after a line on stdin, the
// second finds it again on the same client (`warm MS`). The times are the Worker's own
// (see worker.js for what its clock counts); the HTTP exchanges with workerd, on
// loopback, are not in them, nor is workerd's start (it serves nothing before the
// first request, and opens no connection before it).
//
// TLS to the test CA: the package's Workers transport refuses tlsCAFile (a Worker's
// sockets trust the platform's store), so the URI's tlsCAFile is taken out of the
// Worker's connection string and trusted where workerd keeps its trust store instead:
// the `tlsOptions.trustedCertificates` of the network service that is the Worker's
// globalOutbound, through which cloudflare:sockets connect. The connection string
// still says tls=true, and the certificate is still checked, against that CA (one
// workerd does not trust fails the handshake: "invalid peer certificate: UnknownIssuer").
//
// With ATLAS_NAMESERVER (ip:port, the `--atlas` measurement's DNS relay): a Worker has no
// DNS but fetch, so a DNS-over-HTTPS gateway on loopback (wasm-demo/test/doh_gateway.js)
// asks the relay each question the Worker's transport sends it (SRV, TXT, the members'
// A and AAAA), and the Worker gets its endpoint (DOH_ENDPOINT, see worker.js): the
// fixture's relay sees, and delays, every DNS query the Worker makes. COLD_OPERATION is
// passed on as the Worker's OPERATION.
//
// Every wait is bounded (REQUEST_TIMEOUT_MS); workerd is killed on the way out (before
// the last line: the parent kills this process, not workerd, once it has it). Its
// listening socket is opened here and handed over (--socket-fd), so that the first
// request waits in its backlog instead of polling for it to listen.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Resolver } from 'node:dns/promises';
import { startDohGateway } from '../../wasm-demo/test/doh_gateway.js';
import { writeWorkerdConfig } from '../../wasm-demo/test/workerd_config.js';

const [workerd, database, collection, uri] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.join(here, '..', '..', 'wasm-demo');
// The first request includes compiling the Worker (the .wasm too). Under the parent's
// bound (CASE_TIMEOUT, 60 s), so that this process gives up, and kills workerd, first.
const REQUEST_TIMEOUT_MS = 50_000;

// The connection string without tlsCAFile, and the CA it named.
const url = new URL(uri);
const caFile = url.searchParams.get('tlsCAFile');
url.searchParams.delete('tlsCAFile');
const workerUri = url.toString();

const bindings = { URI: workerUri, DATABASE: database, COLLECTION: collection, OPERATION: process.env.COLD_OPERATION ?? 'find' };
let gateway = null;
if (process.env.ATLAS_NAMESERVER) {
  const resolver = new Resolver();
  resolver.setServers([process.env.ATLAS_NAMESERVER]);
  gateway = await startDohGateway(resolver);
  bindings.DOH_ENDPOINT = gateway.endpoint;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-cold-workerd-'));
writeWorkerdConfig(dir, path.join(here, 'worker.js'), {
  packageDir,
  bsonFile: path.join(packageDir, 'node_modules', 'bson', 'lib', 'bson.mjs'),
  bindings,
  durableObjects: { HOLDER: 'Holder' },
  trustedCertificates: caFile ? [caFile] : [],
});

const listener = net.createServer();
await new Promise((resolve, reject) => {
  listener.once('error', reject);
  listener.listen(0, '127.0.0.1', resolve);
});
const { port } = listener.address();
let done = false;
const child = spawn(workerd, ['serve', 'config.capnp', '--socket-fd', 'http=3'], {
  cwd: dir,
  // The listening socket as the child's fd 3; workerd's output goes to our stderr (our
  // stdout is the protocol's).
  stdio: ['ignore', 2, 2, listener._handle.fd],
});
// workerd has its copy: ours is closed so that only workerd accepts.
listener.close();
child.once('exit', (code, signal) => {
  if (!done) {
    console.error(`workerd exited (${code ?? signal}) before the measurement ended`);
    process.exit(1);
  }
});

/** One request to the Worker: its time in ms. */
async function request(name) {
  const response = await fetch(`http://127.0.0.1:${port}/${name}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const body = await response.text();
  if (!response.ok) throw new Error(`the ${name} request failed (${response.status}): ${body}`);
  return body;
}

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
let warm;
try {
  console.log(`cold ${await request('cold')}`);
  await lines.next();
  warm = await request('warm');
} finally {
  done = true;
  child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  await gateway?.stop();
}
// workerd is gone before the line that ends the measurement: the parent kills this
// process once it has the line, maybe before a `finally` after it would run.
console.log(`warm ${warm}`);
await lines.return();
