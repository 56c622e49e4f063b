// The transport of Node.js (and Bun, through its Node compatibility): `net` and `tls`
// sockets, `dns` for mongodb+srv. See `Transport` in index.d.ts.
import { promises as dns } from 'node:dns';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import tls from 'node:tls';

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

export const nodeTransport = {
  async connect(host, port, request) {
    const secure = request !== null && request !== undefined;
    const socket = secure ? tls.connect({ ...(await tlsOptions(host, request)), port }) : net.connect({ host, port });
    socket.setNoDelay(true);
    return opened(socket, secure ? 'secureConnect' : 'connect', secure);
  },

  /** TLS on the socket of `duplex`, open to `host` through a SOCKS5 proxy. */
  async secure(duplex, host, request) {
    const socket = tls.connect({ ...(await tlsOptions(host, request)), socket: duplex.release() });
    return opened(socket, 'secureConnect', true);
  },

  async resolveSrv(name) {
    return (await noRecordsIsEmpty(dns.resolveSrv(name))).map(({ name, port }) => ({ name, port }));
  },

  async resolveTxt(name) {
    return (await noRecordsIsEmpty(dns.resolveTxt(name))).map((parts) => parts.join(''));
  },
};

/** A name without records of the kind asked (or no such name) is an empty answer, not a failure. */
async function noRecordsIsEmpty(lookup) {
  try {
    return await lookup;
  } catch (error) {
    if (error.code === dns.NODATA || error.code === dns.NOTFOUND) return [];
    throw error;
  }
}
