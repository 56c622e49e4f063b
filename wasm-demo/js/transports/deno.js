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
  };
}

export const denoTransport = {
  async connect(host, port, request) {
    if (request === null || request === undefined) {
      const conn = await Deno.connect({ hostname: host, port });
      conn.setNoDelay(true);
      return duplex(conn);
    }
    if (request.allowInvalidCertificates || request.allowInvalidHostnames) {
      throw Object.assign(
        new Error('Deno.connectTls cannot skip certificate checks: run deno with --unsafely-ignore-certificate-errors'),
        { tls: true },
      );
    }
    const caPem = request.caPem ?? (request.caFile && (await Deno.readTextFile(request.caFile)));
    const keyPem = request.certificateKeyPem ?? (request.certificateKeyFile && (await Deno.readTextFile(request.certificateKeyFile)));
    try {
      const conn = await Deno.connectTls({
        hostname: host,
        port,
        caCerts: caPem ? [caPem] : undefined,
        ...(keyPem ? { cert: keyPem, key: keyPem } : {}),
      });
      await conn.handshake();
      return duplex(conn);
    } catch (error) {
      error.tls = !(error instanceof Deno.errors.ConnectionRefused);
      throw error;
    }
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
