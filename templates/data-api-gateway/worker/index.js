// The Data API gateway as a Cloudflare Worker (module syntax): the gateway's Rust core
// (../src, compiled by build.sh into pkg/) answers every request; this file only moves
// requests and responses between the platform and it. Sockets come from the npm
// package's Workers transport (cloudflare:sockets; mongodb+srv:// names over
// DNS-over-HTTPS), which the core drives through anymongo-wasm's seams.
//
// Configured as the wasi:http runtime is (see ../src/main.rs and ../src/config.rs):
//   MONGODB_URI      the connection string (`wrangler secret put MONGODB_URI`)
//   DATA_API_CONFIG  the JSON configuration: API keys, allow-lists, bounds (a secret
//                    too, since it holds the keys; as text, or a [vars] table)
//
// Each request goes to a Durable Object (`Gateway`) that owns the gateway and its
// client: a Worker may not use a socket opened by another request ("Cannot perform
// I/O on behalf of a different request"), but a Durable Object's requests share its
// sockets, so the first request connects and the later ones reuse the connection.
import { workersTransport } from 'anymongo/transports/workers';
import { initSync, DataApiGateway } from './pkg/data_api_gateway_worker.js';
import wasm from './pkg/data_api_gateway_worker_bg.wasm';

initSync({ module: wasm });

/** At most `most` bytes of the request's body (the gateway answers 413 past its limit). */
async function readBody(request, most) {
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks = [];
  let length = 0;
  while (length < most) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.length;
  }
  if (length >= most) await reader.cancel().catch(() => {});
  const body = new Uint8Array(Math.min(length, most));
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, body.length - offset);
    body.set(part, offset);
    offset += part.length;
  }
  return body;
}

/** The Durable Object holding the gateway and its client. */
export class Gateway {
  constructor(state, env) {
    const config = env.DATA_API_CONFIG;
    this.gateway = new DataApiGateway(
      env.MONGODB_URI,
      typeof config === 'object' && config !== null ? JSON.stringify(config) : config,
      workersTransport,
    );
  }

  async fetch(request) {
    const body = await readBody(request, this.gateway.maxBodyBytes + 1);
    const { pathname } = new URL(request.url);
    const answer = await this.gateway.handle(request.method, pathname, [...request.headers], body);
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  }
}

export default {
  // One object for the whole Worker: it runs near where it was first used. To keep one
  // per region instead, name it after the request's colo (request.cf.colo).
  async fetch(request, env) {
    return env.GATEWAY.get(env.GATEWAY.idFromName('gateway')).fetch(request);
  },
};
