// The Worker of the `cold_request` measurement under workerd (served by workerd.mjs,
// which documents the whole child). Each request finds {_id: 1} in env.DATABASE.
// env.COLLECTION (or does env.OPERATION, below) with the npm package `anymongo` (its
// workerd entry, js/workers.js) and answers the milliseconds it took, measured here:
// the first request creates the client (cold), the second reuses it (warm).
//
// The warm-requests measurement (anymongo_tests::warm_requests, through steps.mjs)
// serves it too: a request to /abandon finds the whole collection in batches of 2, reads
// the first document and leaves the cursor unfinished.
//
// The client lives in a Durable Object, as in templates/cloudflare-worker: a Worker
// may not use a socket another request opened, a Durable Object's requests may.
//
// The time is performance.now() at the request's start and after the result. workerd
// advances that clock at I/O events only (a Spectre mitigation), so the span runs from
// the request's arrival to the result's last bytes: the round trips and the CPU time
// between them are counted, the CPU time after the last reply (parsing it) is not.
//
// With env.DOH_ENDPOINT (the `--atlas` measurement), the client's transport is the
// package's Workers transport with DNS over HTTPS to that endpoint for every name, the
// members' too (see workerd.mjs). env.OPERATION picks the request, as node.mjs's
// COLD_OPERATION does: `find` (a primary read), `insert` or `nearest`.
import { MongoClient, dnsOverHttps } from 'anymongo';
import { workersTransport } from 'anymongo/transports/workers';

/** The client's options: its transport, when DNS goes to the endpoint. */
function options(env) {
  if (!env.DOH_ENDPOINT) return {};
  return { transport: { ...workersTransport, ...dnsOverHttps({ endpoint: env.DOH_ENDPOINT, addresses: true }) } };
}

/** The request to `path` (/abandon), or the one env.OPERATION names. */
async function request(client, env, path) {
  const items = client.db(env.DATABASE).collection(env.COLLECTION);
  if (path === '/abandon') {
    if ((await items.find({}).batchSize(2).next()) === null) throw new Error('no document');
    return;
  }
  if (env.OPERATION === 'insert') {
    await items.insertOne({ text: 'written' });
    return;
  }
  const found = await items.findOne({ _id: 1 }, env.OPERATION === 'nearest' ? { readPreference: 'nearest' } : {});
  if (found === null) throw new Error('no document with _id 1');
}

export class Holder {
  constructor(state, env) {
    this.env = env;
    this.client = null;
  }

  async fetch(incoming) {
    const start = performance.now();
    try {
      this.client ??= new MongoClient(this.env.URI, options(this.env));
      await request(this.client, this.env, new URL(incoming.url).pathname);
      return new Response((performance.now() - start).toFixed(1));
    } catch (error) {
      return new Response(String(error?.stack ?? error), { status: 500 });
    }
  }
}

export default {
  async fetch(incoming, env) {
    return env.HOLDER.get(env.HOLDER.idFromName('client')).fetch(incoming);
  },
};
