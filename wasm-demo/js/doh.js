// SRV and TXT look-ups over DNS-over-HTTPS, for hosts that have fetch() but no DNS
// module (Cloudflare Workers): the JSON form of the query that public resolvers serve
// (Cloudflare's https://cloudflare-dns.com/dns-query, Google's https://dns.google/resolve),
// GET ?name=…&type=… with `accept: application/dns-json`. The answers the driver needs are
// the SRV and TXT records of mongodb+srv:// (Initial DNS Seedlist Discovery spec); the
// hosts those records name are resolved by the host when it connects, or, with
// `addresses: true`, here too (A and AAAA), for names the host's resolver does not know.

/** The record types asked for, with their numbers in answers (RFC 1035, RFC 2782, RFC 3596). */
const TYPES = { SRV: 33, TXT: 16, A: 1, AAAA: 28 };

/** The JSON answers' Status for "no such name" (RCODE 3, NXDOMAIN). */
const NXDOMAIN = 3;

/**
 * A resolver ({ resolveSrv, resolveTxt }, as a Transport has them) asking `endpoint`
 * through `fetch`; with `addresses`, also `lookup(host)` (the addresses of a host's A
 * and AAAA records, asked at once and kept for their TTL), which a transport's connect
 * uses instead of the platform's resolver.
 */
export function dnsOverHttps({ endpoint = 'https://cloudflare-dns.com/dns-query', fetch = globalThis.fetch, addresses = false } = {}) {
  async function answers(name, type) {
    const url = new URL(endpoint);
    url.searchParams.set('name', name);
    url.searchParams.set('type', type);
    const response = await fetch(url, { headers: { accept: 'application/dns-json' } });
    if (!response.ok) {
      throw new Error(`DNS over HTTPS: ${url.origin} answered HTTP ${response.status} to the ${type} query for ${name}`);
    }
    const body = await response.json();
    // No such name, or a name without records of this type: an empty answer.
    if (body.Status === NXDOMAIN) return [];
    if (body.Status !== 0) {
      throw new Error(`DNS over HTTPS: ${url.origin} answered DNS status ${body.Status} to the ${type} query for ${name}`);
    }
    return (body.Answer ?? []).filter((answer) => answer.type === TYPES[type]);
  }

  const resolver = {
    async resolveSrv(name) {
      return (await answers(name, 'SRV')).map(({ data, TTL }) => {
        // "priority weight port target."
        const [, , port, target] = String(data).trim().split(/\s+/);
        if (target === undefined || !/^\d+$/.test(port)) {
          throw new Error(`DNS over HTTPS: an SRV answer for ${name} is not "priority weight port target": ${data}`);
        }
        return { name: target, port: Number(port), ttl: TTL };
      });
    },

    async resolveTxt(name) {
      return (await answers(name, 'TXT')).map(({ data }) => txtStrings(String(data)).join(''));
    },
  };
  if (addresses) {
    resolver.lookup = cachedLookup(async (host) => {
      const [v4, v6] = await Promise.all([answers(host, 'A'), answers(host, 'AAAA')]);
      return [...v4, ...v6].map(({ data, TTL }) => ({ address: String(data), ttl: TTL }));
    });
  }
  return resolver;
}

/**
 * The character strings of a TXT answer's presentation form: each in double quotes,
 * with `\"`, `\\` and `\DDD` (a decimal byte) escapes; unquoted data is one string.
 */
export function txtStrings(data) {
  const quoted = [...data.matchAll(/"((?:[^"\\]|\\.)*)"/g)];
  if (quoted.length === 0) return [data];
  return quoted.map(([, text]) =>
    text.replace(/\\(\d{3}|.)/g, (_, escaped) => (/^\d{3}$/.test(escaped) ? String.fromCharCode(Number(escaped)) : escaped)),
  );
}

/**
 * `lookup(host)` → its addresses (strings), over `ask(host)` → `{ address, ttl }[]` (A
 * and AAAA records): one question per host in flight, its answer kept until its
 * shortest TTL ends, so that the connections a cold client opens to one host (its
 * monitor's, then its pool's) ask once. A host without addresses fails as getaddrinfo
 * does (ENOTFOUND), and is asked again next time. Also the Node.js transport's
 * (`nameServers`).
 */
export function cachedLookup(ask) {
  const answers = new Map();
  return async function lookup(host) {
    let kept = answers.get(host);
    if (!kept || kept.expires <= Date.now()) {
      kept = { expires: Infinity, records: ask(host) };
      answers.set(host, kept);
      const entry = kept;
      const forget = () => answers.get(host) === entry && answers.delete(host);
      entry.records.then((records) => {
        if (records.length === 0) forget();
        else entry.expires = Date.now() + 1000 * Math.min(...records.map(({ ttl }) => ttl));
      }, forget);
    }
    const records = await kept.records;
    if (records.length === 0) {
      throw Object.assign(new Error(`no A or AAAA records for ${host}`), { code: 'ENOTFOUND', hostname: host });
    }
    return records.map(({ address }) => address);
  };
}
