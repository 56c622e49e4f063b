// The transport of Node.js (and Bun, through its Node compatibility): `net` and `tls`
// sockets, `dns` for mongodb+srv, and `nameServers(servers)` for names asked of given
// name servers instead of the system's. See `Transport` in index.d.ts.
import { promises as dns } from 'node:dns';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import tls from 'node:tls';
import { cachedLookup } from '../doh.js';

/** A socket as the core's duplex: read() resolves to the next chunk, null at the end. */
class SocketDuplex {
  #socket;
  #chunks = [];
  #ended = false;
  #error = null;
  #waiting = null;

  constructor(socket) {
    this.#socket = socket;
    socket.on('data', (chunk) => {
      this.#chunks.push(chunk);
      // Backpressure: stop reading until the core takes what is buffered.
      if (this.#chunks.length > 16) {
        socket.pause();
      }
      this.#wake();
    });
    socket.on('end', () => this.#finish(null));
    socket.on('close', () => this.#finish(null));
    socket.on('error', (error) => this.#finish(error));
  }

  #finish(error) {
    this.#error ??= error;
    this.#ended = true;
    this.#wake();
  }

  #wake() {
    const waiting = this.#waiting;
    this.#waiting = null;
    if (waiting) {
      this.read().then(waiting.resolve, waiting.reject);
    }
  }

  read() {
    if (this.#chunks.length > 0) {
      const chunk = this.#chunks.shift();
      if (this.#chunks.length === 0) {
        this.#socket.resume();
      }
      return Promise.resolve(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
    if (this.#error) {
      return Promise.reject(this.#error);
    }
    if (this.#ended) {
      return Promise.resolve(null);
    }
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  write(bytes) {
    return new Promise((resolve, reject) => {
      this.#socket.write(bytes, (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Whether the socket is still open with nothing unread: asked of idle connections. */
  isOpenAndIdle() {
    return !this.#ended && this.#chunks.length === 0;
  }

  close() {
    this.#socket.destroy();
    this.#finish(null);
  }

  /** Hands the socket over (to start TLS on it): this duplex lets go of it. */
  release() {
    if (this.#chunks.length > 0) throw new Error('bytes arrived before the TLS handshake');
    for (const event of ['data', 'end', 'close', 'error']) this.#socket.removeAllListeners(event);
    this.#socket.resume();
    return this.#socket;
  }
}

/** Resolves once `socket` is connected (`event`), or rejects with its error. */
async function opened(socket, event, secure) {
  await new Promise((resolve, reject) => {
    socket.once(event, resolve);
    socket.once('error', (error) => {
      // System errors (ECONNREFUSED...) are network errors; the rest, on a TLS
      // socket, are certificate or handshake failures.
      error.tls = secure && !/^E[A-Z]+$/.test(error.code ?? '');
      socket.destroy();
      reject(error);
    });
  });
  socket.removeAllListeners('error');
  return new SocketDuplex(socket);
}

/** The options of tls.connect for the core's TLS request. */
async function tlsOptions(host, request) {
  const options = {
    host,
    servername: net.isIP(host) ? undefined : request.servername,
    rejectUnauthorized: !request.allowInvalidCertificates,
  };
  if (request.allowInvalidHostnames) {
    options.checkServerIdentity = () => undefined;
  }
  if (request.caFile) options.ca = await readFile(request.caFile);
  if (request.caPem) options.ca = request.caPem;
  const keyPem = request.certificateKeyPem ?? (request.certificateKeyFile && (await readFile(request.certificateKeyFile, 'utf8')));
  if (keyPem) {
    options.cert = keyPem;
    options.key = keyPem;
    options.passphrase = request.certificateKeyPassword;
  }
  return options;
}

/**
 * TLS sessions to resume (RFC 8446 §2.2), per host and TLS settings: a resumed
 * handshake skips the server's certificate chain and its checks, and the key exchange's
 * signature. The key holds every TLS setting, so that one set of settings (say, another
 * CA) never resumes a session another one checked.
 *
 * Servers differ in what they allow: OpenSSL's accept a ticket again and send none
 * after a resumed handshake; rustls's stateful cache accepts each ticket once (RFC 8446
 * §8.1) and sends two after every handshake. So a connection takes the newest ticket
 * no other connection is handshaking with, and gives it back when the server resumed
 * it, behind the newer tickets its own handshake brings; a ticket the server refused
 * is dropped. The newest few are kept.
 */
const sessions = new Map();
/** How many tickets are kept per key: enough for a pool's burst of new connections. */
const TICKETS_KEPT = 8;

function sessionKey(host, port, request) {
  return JSON.stringify([host, port, request]);
}

/** The newest kept ticket for `key`, taken out while a handshake uses it, or undefined. */
function takeSession(key) {
  const tickets = sessions.get(key);
  const ticket = tickets?.pop();
  if (tickets?.length === 0) sessions.delete(key);
  return ticket;
}

/** Keeps `ticket` for `key`: as the newest, or (`older`) behind every kept one. */
function keepSession(key, ticket, older = false) {
  const tickets = sessions.get(key) ?? [];
  if (older) tickets.unshift(ticket);
  else tickets.push(ticket);
  if (tickets.length > TICKETS_KEPT) tickets.shift();
  sessions.set(key, tickets);
}

/**
 * The `lookup` option of net.connect/tls.connect over `resolve(host)` (addresses as
 * strings): the socket connects to what it gives, and TLS still checks the
 * certificate against the host's name.
 */
function lookupWith(resolve) {
  return (hostname, options, callback) => {
    resolve(hostname).then((addresses) => {
      const entries = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
      if (options.all) return callback(null, entries);
      callback(null, entries[0].address, entries[0].family);
    }, callback);
  };
}

export const nodeTransport = {
  /**
   * A socket to `host`; its name resolved by the transport's `lookup(host)` when it has
   * one (`nameServers`), else by the system (dns.lookup). A TLS socket resumes a
   * session of an earlier connection to the same host with the same settings.
   */
  async connect(host, port, request) {
    const secure = request !== null && request !== undefined;
    const lookup = typeof this?.lookup === 'function' && !net.isIP(host) ? { lookup: lookupWith((name) => this.lookup(name)) } : {};
    if (!secure) {
      const socket = net.connect({ host, port, ...lookup });
      socket.setNoDelay(true);
      return opened(socket, 'connect', false);
    }
    const key = sessionKey(host, port, request);
    const options = { ...(await tlsOptions(host, request)), port, ...lookup };
    const session = takeSession(key);
    const socket = tls.connect({ ...options, session });
    socket.on('session', (ticket) => keepSession(key, ticket));
    socket.once('secureConnect', () => {
      if (session && socket.isSessionReused()) keepSession(key, session, true);
    });
    socket.setNoDelay(true);
    return opened(socket, 'secureConnect', true);
  },

  /** TLS on the socket of `duplex`, open to `host` through a SOCKS5 proxy. */
  async secure(duplex, host, request) {
    const socket = tls.connect({ ...(await tlsOptions(host, request)), socket: duplex.release() });
    return opened(socket, 'secureConnect', true);
  },

  async resolveSrv(name) {
    return srvRecords(dns, name);
  },

  async resolveTxt(name) {
    return txtRecords(dns, name);
  },
};

async function srvRecords(resolver, name) {
  return (await noRecordsIsEmpty(resolver.resolveSrv(name))).map(({ name, port }) => ({ name, port }));
}

async function txtRecords(resolver, name) {
  return (await noRecordsIsEmpty(resolver.resolveTxt(name))).map((parts) => parts.join(''));
}

/**
 * SRV, TXT and host look-ups asked of `servers` (`'ip'` or `'ip:port'`, as
 * dns.Resolver#setServers takes them) instead of the system's resolver: spread over a
 * transport, `{ ...nodeTransport, ...nameServers(['10.0.0.2']) }`, whose sockets then
 * connect to the addresses they give (TLS still checks the host's name). A host's A
 * and AAAA records are asked at once, and its addresses kept for their TTL, so that the
 * monitor's connection and the pool's to one host ask once.
 */
export function nameServers(servers) {
  const resolver = new dns.Resolver();
  resolver.setServers(servers);
  const lookup = cachedLookup(async (host) => {
    const [v4, v6] = await Promise.all([resolver.resolve4(host, { ttl: true }), resolver.resolve6(host, { ttl: true })].map(noRecordsIsEmpty));
    return [...v4, ...v6].map(({ address, ttl }) => ({ address, ttl }));
  });
  return {
    resolveSrv: (name) => srvRecords(resolver, name),
    resolveTxt: (name) => txtRecords(resolver, name),
    lookup,
  };
}

/** A name without records of the kind asked (or no such name) is an empty answer, not a failure. */
async function noRecordsIsEmpty(lookup) {
  try {
    return await lookup;
  } catch (error) {
    if (error.code === dns.NODATA || error.code === dns.NOTFOUND) return [];
    throw error;
  }
}
