// The transport of Cloudflare Workers: connect() from cloudflare:sockets, with
// `secureTransport: "on"` for TLS (the platform's certificate checks). Workers have no
// DNS API: mongodb+srv:// look-ups go over DNS-over-HTTPS to Cloudflare's resolver
// (js/doh.js); the hosts' names are the platform's to resolve, unless the transport is
// given a `lookup` (`{ ...workersTransport, ...dnsOverHttps({ endpoint, addresses: true }) }`),
// for names the platform does not know: it then connects to the first address, and TLS
// checks the certificate against that address. See `Transport` in index.d.ts.
import { connect } from 'cloudflare:sockets';
import { dnsOverHttps } from '../doh.js';

export const workersTransport = {
  ...dnsOverHttps(),

  async connect(host, port, request) {
    const secure = request !== null && request !== undefined;
    if (secure && (request.caFile || request.caPem || request.certificateKeyFile || request.certificateKeyPem)) {
      throw Object.assign(new Error('Workers sockets use the platform trust store: tlsCAFile and client certificates are not supported'), {
        tls: true,
      });
    }
    if (secure && (request.allowInvalidCertificates || request.allowInvalidHostnames)) {
      throw Object.assign(new Error('Workers sockets always check certificates'), { tls: true });
    }
    const hostname = typeof this?.lookup === 'function' ? (await this.lookup(host))[0] : host;
    const socket = connect({ hostname, port }, { secureTransport: secure ? 'on' : 'off', allowHalfOpen: false });
    try {
      await socket.opened;
    } catch (error) {
      error.tls = secure;
      throw error;
    }
    const reader = socket.readable.getReader();
    const writer = socket.writable.getWriter();
    return {
      async read() {
        const { value, done } = await reader.read();
        return done ? null : value;
      },
      write(bytes) {
        return writer.write(bytes);
      },
      close() {
        socket.close().catch(() => {});
      },
    };
  },
};
