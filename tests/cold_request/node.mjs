// The Node.js child of the `cold_request` measurement (tests/src/bin/cold_request.rs),
// for the npm package `anymongo` (wasm-demo/, its Node.js entry js/node.js, built by
// wasm-demo/build.sh) and for the official `mongodb` Node.js driver:
//
//   node node.mjs anymongo DATABASE COLLECTION URI
//   node node.mjs MONGODB_DIR DATABASE COLLECTION URI
//
// MONGODB_DIR is a folder whose node_modules holds the official driver (./run.sh bench
// installs mongodb@7 into the cache's bench-node, never into the repository).
//
// The protocol of anymongo_tests::cold_request: a new client finds {_id: 1} in
// DATABASE.COLLECTION and prints `cold MS`; then, after a line on stdin, the same client
// finds it again and prints `warm MS`. Both clients connect on their first operation
// (no connect() call), as the other children's do. The time starts after the driver's
// module is imported (for the npm package that includes compiling and instantiating its
// WebAssembly), as pymongo's child starts after `import pymongo`: it is the client's
// cold request, not the runtime's start.
//
// The connection string's tlsCAFile (the test CA) reaches each driver as a user would
// pass it: the npm package's Node transport reads it into tls.connect's `ca`
// (js/transports/node.js), the official driver reads it itself.
//
// With ATLAS_NAMESERVER (ip:port, the `--atlas` measurement's DNS relay), every name is
// asked of it only. The npm package: its Node.js transport with `nameServers` (SRV,
// TXT, and the members' A and AAAA records). The official driver: its SRV and TXT
// look-ups through node:dns, whose servers are set, and the members' names through a
// `lookup` socket option asking it for A records.
//
// COLD_OPERATION picks the request (both times): `find` (the default, a primary read),
// `insert` (a write) or `nearest` (a read with readPreference nearest).
import dns from 'node:dns';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const [driver, database, collection, uri] = process.argv.slice(2);
const { MongoClient } =
  driver === 'anymongo'
    ? await import('../../wasm-demo/js/node.js')
    : createRequire(join(driver, 'x.js'))('mongodb');

// The lines of stdin, one at a time: the parent's go for the warm request.
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const operation = process.env.COLD_OPERATION ?? 'find';
async function request(client) {
  const items = client.db(database).collection(collection);
  if (operation === 'insert') {
    await items.insertOne({ text: 'written' });
    return;
  }
  const options = operation === 'nearest' ? { readPreference: 'nearest' } : {};
  if (!(await items.findOne({ _id: 1 }, options))) {
    throw new Error('no document with _id 1');
  }
}

// Without the variable, no options (as before the Atlas rows).
const nameserver = process.env.ATLAS_NAMESERVER;
let options;
if (nameserver && driver === 'anymongo') {
  const { nodeTransport, nameServers } = await import('../../wasm-demo/js/transports/node.js');
  options = { transport: { ...nodeTransport, ...nameServers([nameserver]) } };
} else if (nameserver) {
  // The official driver passes `lookup` on to net.connect.
  dns.setServers([nameserver]);
  options = {
    lookup: (hostname, lookupOptions, callback) =>
      dns.resolve4(hostname, (error, addresses) => {
        if (error) return callback(error);
        if (lookupOptions.all) {
          return callback(null, addresses.map((address) => ({ address, family: 4 })));
        }
        callback(null, addresses[0], 4);
      }),
  };
}

let start = performance.now();
const client = options ? new MongoClient(uri, options) : new MongoClient(uri);
await request(client);
console.log(`cold ${(performance.now() - start).toFixed(1)}`);
await lines.next();
start = performance.now();
await request(client);
console.log(`warm ${(performance.now() - start).toFixed(1)}`);
// Lets the process exit (the monitors and the stdin reader keep it alive otherwise);
// the parent has its two lines, and reaps the child anyway.
await lines.return();
await client.close();
