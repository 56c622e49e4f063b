// The entry point for Cloudflare Workers (workerd): the WebAssembly module is imported
// (wrangler bundles it), sockets come from cloudflare:sockets, and monitoring is
// single-threaded (on demand, before server selection), since a Worker keeps no task
// running between requests.
import { MongoClient } from './client.js';
import { configure } from './host.js';
import { initSync, NativeClient } from '../pkg/anymongo_wasm.js';
import { workersTransport } from './transports/workers.js';
import wasm from '../pkg/anymongo_wasm_bg.wasm';

initSync({ module: wasm });
configure({ NativeClient, transport: workersTransport, background: false, platform: 'Cloudflare Workers' });

export * from './client.js';
export default MongoClient;
