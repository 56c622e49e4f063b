// The transport of Deno: Deno.connect / Deno.connectTls, Deno.resolveDns for
// mongodb+srv. Needs --allow-net (and --allow-read for tlsCAFile). See `Transport`
// in index.d.ts.

function duplex(conn) {
  return {
    async read() {
      const buffer = new Uint8Array(64 * 1024);
      const n = await conn.read(buffer);
      return n === null ? null : buffer.subarray(0, n);
    },
    async write(bytes) {
      for (let offset = 0; offset < bytes.length; ) {
        offset += await conn.write(bytes.subarray(offset));
      }
    },
    close() {
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    },
    /** Hands the connection over (to start TLS on it). */
    release() {
      return conn;
    },
  };
}

/** The certificates of the core's TLS request, as Deno's TLS options take them. */
async function tlsFiles(request) {
  if (request.allowInvalidCertificates || request.allowInvalidHostnames) {
    throw Object.assign(
      new Error('Deno cannot skip certificate checks per connection: run deno with --unsafely-ignore-certificate-errors'),
      { tls: true },
    );
  }
  const caPem = request.caPem ?? (request.caFile && (await Deno.readTextFile(request.caFile)));
  const keyPem = request.certificateKeyPem ?? (request.certificateKeyFile && (await Deno.readTextFile(request.certificateKeyFile)));
  return { caCerts: caPem ? [caPem] : undefined, keyPem };
}

/** Finishes the TLS handshake of `conn`; failures other than a refused connection are TLS errors. */
async function handshaken(opening) {
  try {
    const conn = await opening;
    await conn.handshake();
    return duplex(conn);
  } catch (error) {
    error.tls = !(error instanceof Deno.errors.ConnectionRefused);
    throw error;
  }
}

export const denoTransport = {
  async connect(host, port, request) {
    if (request === null || request === undefined) {
      const conn = await Deno.connect({ hostname: host, port });
      conn.setNoDelay(true);
      return duplex(conn);
    }
    const { caCerts, keyPem } = await tlsFiles(request);
    return handshaken(Deno.connectTls({ hostname: host, port, caCerts, ...(keyPem ? { cert: keyPem, key: keyPem } : {}) }));
  },

  /** TLS on the connection of `duplex`, open to `host` through a SOCKS5 proxy. */
  async secure(duplex, host, request) {
    const { caCerts, keyPem } = await tlsFiles(request);
    if (keyPem) {
      throw Object.assign(new Error('Deno.startTls takes no client certificate: tlsCertificateKeyFile through a proxy is not supported under Deno'), {
        tls: true,
      });
    }
    return handshaken(Deno.startTls(duplex.release(), { hostname: host, caCerts }));
  },

  async resolveSrv(name) {
    return (await noRecordsIsEmpty(Deno.resolveDns(name, 'SRV'))).map(({ target, port }) => ({ name: target, port }));
  },

  async resolveTxt(name) {
    return (await noRecordsIsEmpty(Deno.resolveDns(name, 'TXT'))).map((parts) => parts.join(''));
  },
};

/** A name without records of the kind asked (or no such name) is an empty answer, not a failure. */
async function noRecordsIsEmpty(lookup) {
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}
