// The Worker of the `cold_request` measurement under workerd (served by workerd.mjs,
// which documents the whole child). Each request finds {_id: 1} in env.DATABASE.
// env.COLLECTION with the npm package `anymongo` (its workerd entry, js/workers.js)
// and answers the milliseconds it took, measured here: the first request creates the
// client (cold), the second reuses it (warm).
//
// The warm-requests measurement (anymongo_tests::warm_requests, through steps.mjs)
// serves it too: a request to /abandon finds the whole collection in batches of 2, reads
// the first document and leaves the cursor unfinished; any other finds {_id: 1}.
//
// The client lives in a Durable Object, as in templates/cloudflare-worker: a Worker
// may not use a socket another request opened, a Durable Object's requests may.
//
// The time is performance.now() at the request's start and after the result. workerd
// advances that clock at I/O events only (a Spectre mitigation), so the span runs from
// the request's arrival to the result's last bytes: the round trips and the CPU time
// between them are counted, the CPU time after the last reply (parsing it) is not.
import { MongoClient } from 'anymongo';

export class Holder {
  constructor(state, env) {
    this.env = env;
    this.client = null;
  }

  async fetch(request) {
    const start = performance.now();
    try {
      this.client ??= new MongoClient(this.env.URI);
      const collection = this.client.db(this.env.DATABASE).collection(this.env.COLLECTION);
      if (new URL(request.url).pathname === '/abandon') {
        if ((await collection.find({}).batchSize(2).next()) === null) throw new Error('no document');
      } else if ((await collection.findOne({ _id: 1 })) === null) {
        throw new Error('no document with _id 1');
      }
      return new Response((performance.now() - start).toFixed(1));
    } catch (error) {
      return new Response(String(error?.stack ?? error), { status: 500 });
    }
  }
}

export default {
  async fetch(request, env) {
    return env.HOLDER.get(env.HOLDER.idFromName('client')).fetch(request);
  },
};
