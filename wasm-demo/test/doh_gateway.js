// A DNS-over-HTTPS gateway in the JSON form (`application/dns-json`, what Cloudflare's
// and Google's /dns-query serve and js/doh.js asks), on loopback, answering from a
// node:dns Resolver: srv.test.js's gateway to the tests' DNS server, and the Workers'
// DNS to the Atlas-shaped fixture's relay (atlas.test.js, through the cold-request
// measurement's tests/cold_request/workerd.mjs). Each query asks the resolver once.
import http from 'node:http';

/** The record types answered, with their numbers in answers (RFC 1035, 2782, 3596). */
const TYPES = { SRV: 33, TXT: 16, A: 1, AAAA: 28 };

/** The answers of `type` for `name`, in the JSON form's `Answer` entries. */
async function answers(resolver, name, type) {
  switch (type) {
    case 'SRV':
      return (await resolver.resolveSrv(name)).map(({ priority, weight, port, name: target }) => ({
        name,
        type: TYPES.SRV,
        TTL: 300,
        data: `${priority} ${weight} ${port} ${target}.`,
      }));
    case 'TXT':
      return (await resolver.resolveTxt(name)).map((strings) => ({
        name,
        type: TYPES.TXT,
        TTL: 300,
        data: strings.map((text) => `"${text.replace(/["\\]/g, '\\$&')}"`).join(' '),
      }));
    case 'A':
    case 'AAAA':
      return (await (type === 'A' ? resolver.resolve4 : resolver.resolve6).call(resolver, name, { ttl: true })).map(({ address, ttl }) => ({
        name,
        type: TYPES[type],
        TTL: ttl,
        data: address,
      }));
    default:
      throw Object.assign(new Error(`no ${type} answers here`), { code: 'ENOTIMP' });
  }
}

/**
 * Starts the gateway; resolves to `{ endpoint, queries, stop() }` (`queries`: how many
 * it answered so far).
 */
export function startDohGateway(resolver) {
  const gateway = { queries: 0 };
  const server = http.createServer(async (request, response) => {
    gateway.queries++;
    const query = new URL(request.url, 'http://gateway').searchParams;
    let body;
    try {
      body = { Status: 0, Answer: await answers(resolver, query.get('name'), query.get('type')) };
    } catch (error) {
      body = { Status: error.code === 'ENOTFOUND' ? 3 : error.code === 'ENODATA' ? 0 : 2 };
    }
    response.writeHead(200, { 'content-type': 'application/dns-json' });
    response.end(JSON.stringify(body));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      gateway.endpoint = `http://127.0.0.1:${server.address().port}/dns-query`;
      gateway.stop = () => new Promise((done) => server.close(done));
      resolve(gateway);
    }),
  );
}
