// mongodb+srv:// through the JavaScript resolvers: Node.js's node:dns (the transport's
// resolveSrv / resolveTxt) and DNS-over-HTTPS (js/doh.js, what Workers use), both
// against the Rust test DNS server (`dns_server`, the records of the Initial DNS
// Seedlist Discovery spec's tests README) on loopback.
//
// The SRV records name localhost.test.build.10gen.cc, which the system's resolver does
// not know: the tests' transports connect every host to the local SecantusDB, as an
// /etc/hosts entry would.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as dns } from 'node:dns';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MongoClient, MongoParseError, dnsOverHttps } from '../js/node.js';
import { txtStrings } from '../js/doh.js';
import { nameServers, nodeTransport } from '../js/transports/node.js';
import { startDohGateway } from './doh_gateway.js';
import { startServer } from './server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const dnsServerBinary =
  process.env.ANYMONGO_DNS_SERVER ?? path.join(here, '..', '..', 'target', 'debug', 'dns_server');
const START_TIMEOUT_MS = 30_000;
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

/** Starts `dns_server`; resolves to { address, stop } once it says where it listens. */
function startDnsServer() {
  const child = spawn(dnsServerBinary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`dns_server did not start within ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /listening on (\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        address: match[1],
        // Closing its standard input stops it.
        stop: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.stdin.end()))),
      });
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** `transport` with every host it connects to mapped to 127.0.0.1:`port`. */
function toLocalServer(transport, port) {
  return { ...transport, connect: (_host, _port, tls) => nodeTransport.connect('127.0.0.1', port, tls) };
}

/** Connects through `transport` to `uri`, inserts and reads back one document. */
async function roundTrip(uri, transport) {
  const client = new MongoClient(uri, { ...OPTIONS, transport });
  try {
    await client.connect();
    const coll = client.db('srv').collection('js');
    const { insertedId } = await coll.insertOne({ via: uri });
    return (await coll.findOne({ _id: insertedId })).via;
  } finally {
    await client.close();
  }
}

/** The error of connecting to `uri` through `transport`. */
async function connectError(uri, transport) {
  const client = new MongoClient(uri, { ...OPTIONS, transport });
  try {
    await client.connect();
  } catch (error) {
    return error;
  } finally {
    await client.close();
  }
  assert.fail(`connecting to ${uri} succeeded`);
}

const missing = !existsSync(dnsServerBinary) && `${dnsServerBinary} is missing (cargo build -p anymongo-tests --bin dns_server; ./run.sh test does)`;

describe('mongodb+srv through JavaScript resolvers', { timeout: 120_000, skip: missing }, () => {
  let server;
  let dnsServer;
  let serversBefore;

  before(async () => {
    server = await startServer();
    dnsServer = await startDnsServer();
    // The host's own facility, as a user would point it at a resolver.
    serversBefore = dns.getServers();
    dns.setServers([dnsServer.address]);
  });

  after(async () => {
    if (serversBefore) dns.setServers(serversBefore);
    await dnsServer?.stop();
    await server?.stop();
  });

  it('connects through node:dns SRV and TXT look-ups (test3: one host, no TXT record)', { timeout: 30_000 }, async () => {
    const uri = 'mongodb+srv://test3.test.build.10gen.cc/?tls=false';
    assert.equal(await roundTrip(uri, toLocalServer(nodeTransport, server.port)), uri);
  });

  it('refuses SRV hosts outside the parent domain, found through node:dns (test14)', { timeout: 30_000 }, async () => {
    const error = await connectError('mongodb+srv://test14.test.build.10gen.cc/?tls=false', toLocalServer(nodeTransport, server.port));
    assert.ok(error instanceof MongoParseError, `${error.name}: ${error.message}`);
    assert.match(error.message, /localhost\.not-test\.build\.10gen\.cc.*not allowed/);
  });

  it('refuses two TXT records, found through node:dns (test6)', { timeout: 30_000 }, async () => {
    const error = await connectError('mongodb+srv://test6.test.build.10gen.cc/?tls=false', toLocalServer(nodeTransport, server.port));
    assert.ok(error instanceof MongoParseError, `${error.name}: ${error.message}`);
    assert.match(error.message, /TXT/);
  });

  it("asks nameServers' servers for SRV, TXT and the hosts' addresses, which the transport connects to", { timeout: 30_000 }, async () => {
    const resolver = nameServers([dnsServer.address]);
    assert.deepEqual(await resolver.resolveSrv('_mongodb._tcp.test3.test.build.10gen.cc'), [{ name: 'localhost.test.build.10gen.cc', port: 27017 }]);
    assert.deepEqual(await resolver.resolveTxt('test5.test.build.10gen.cc'), ['replicaSet=repl0&authSource=thisDB']);
    // The host's name resolves through those servers only (the system does not know
    // it), and the transport's socket connects to its address.
    const transport = { ...nodeTransport, ...resolver };
    const duplex = await transport.connect('localhost.test.build.10gen.cc', server.port, null);
    duplex.close();
    assert.deepEqual(await resolver.lookup('localhost.test.build.10gen.cc'), ['127.0.0.1']);
    await assert.rejects(resolver.lookup('nonexistent.test.build.10gen.cc'), { code: 'ENOTFOUND' });
  });

  it('reports a name without SRV records clearly (test4 has none)', { timeout: 30_000 }, async () => {
    const error = await connectError('mongodb+srv://test4.test.build.10gen.cc/?tls=false', toLocalServer(nodeTransport, server.port));
    assert.match(error.message, /no SRV records found for _mongodb\._tcp\.test4\.test\.build\.10gen\.cc/);
  });

  describe('over DNS-over-HTTPS (as on Workers)', () => {
    let gateway;

    before(async () => {
      const resolver = new dns.Resolver();
      resolver.setServers([dnsServer.address]);
      gateway = await startDohGateway(resolver);
    });

    after(async () => {
      await gateway?.stop();
    });

    it('connects with SRV and TXT answers in the JSON form (test5 sets authSource through TXT)', { timeout: 30_000 }, async () => {
      const before = gateway.queries;
      const doh = dnsOverHttps({ endpoint: gateway.endpoint });
      // test5's TXT record also sets replicaSet=repl0, which SecantusDB is not: the
      // resolved seed list and TXT options are checked on the resolver directly, and a
      // connection is made through test3.
      assert.deepEqual(await doh.resolveSrv('_mongodb._tcp.test5.test.build.10gen.cc'), [
        { name: 'localhost.test.build.10gen.cc.', port: 27017, ttl: 300 },
      ]);
      assert.deepEqual(await doh.resolveTxt('test5.test.build.10gen.cc'), ['replicaSet=repl0&authSource=thisDB']);
      assert.deepEqual(await doh.resolveTxt('test11.test.build.10gen.cc'), ['replicaSet=repl0']);
      assert.deepEqual(await doh.resolveTxt('test3.test.build.10gen.cc'), []);
      assert.deepEqual(await doh.resolveSrv('_mongodb._tcp.nonexistent.test.build.10gen.cc'), []);
      const uri = 'mongodb+srv://test3.test.build.10gen.cc/?tls=false';
      assert.equal(await roundTrip(uri, toLocalServer(doh, server.port)), uri);
      assert.ok(gateway.queries - before >= 7, `the gateway answered ${gateway.queries - before} queries`);
    });

    it("resolves hosts' A and AAAA records with addresses: true, at once and once within their TTL", { timeout: 30_000 }, async () => {
      assert.equal(dnsOverHttps({ endpoint: gateway.endpoint }).lookup, undefined, 'hosts are the platform\'s to resolve by default');
      const doh = dnsOverHttps({ endpoint: gateway.endpoint, addresses: true });
      const before = gateway.queries;
      const [first, second] = await Promise.all([doh.lookup('localhost.test.build.10gen.cc'), doh.lookup('localhost.test.build.10gen.cc')]);
      assert.deepEqual(first, ['127.0.0.1']);
      assert.deepEqual(second, ['127.0.0.1']);
      assert.deepEqual(await doh.lookup('localhost.test.build.10gen.cc'), ['127.0.0.1']);
      assert.equal(gateway.queries - before, 2, 'one A and one AAAA query for three look-ups');
      await assert.rejects(doh.lookup('nonexistent.test.build.10gen.cc'), { code: 'ENOTFOUND' });
    });

    it('refuses two TXT records, found over DNS-over-HTTPS (test6)', { timeout: 30_000 }, async () => {
      const doh = dnsOverHttps({ endpoint: gateway.endpoint });
      const error = await connectError('mongodb+srv://test6.test.build.10gen.cc/?tls=false', toLocalServer(doh, server.port));
      assert.ok(error instanceof MongoParseError, `${error.name}: ${error.message}`);
      assert.match(error.message, /TXT/);
    });

    it('fails clearly when the endpoint answers with an HTTP error', { timeout: 30_000 }, async () => {
      const doh = dnsOverHttps({ endpoint: gateway.endpoint, fetch: async () => new Response('no', { status: 503 }) });
      await assert.rejects(doh.resolveSrv('_mongodb._tcp.test3.test.build.10gen.cc'), /answered HTTP 503 to the SRV query/);
    });
  });
});

describe('TXT answers in presentation form', () => {
  it('reads quoted strings and their escapes', () => {
    assert.deepEqual(txtStrings('"replicaS" "et=rep" "l0"'), ['replicaS', 'et=rep', 'l0']);
    assert.deepEqual(txtStrings('"a\\"b" "c\\\\d" "\\065"'), ['a"b', 'c\\d', 'A']);
    assert.deepEqual(txtStrings('authSource=admin'), ['authSource=admin']);
  });
});
