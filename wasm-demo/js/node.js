// The entry point for Node.js and Bun: loads the WebAssembly module from the package
// and uses node:net / node:tls sockets, with monitoring in the background.
import { readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { MongoClient } from './client.js';
import { configure } from './host.js';
import { initSync, NativeClient } from '../pkg/anymongo_wasm.js';
import { nodeTransport } from './transports/node.js';

initSync({ module: readFileSync(new URL('../pkg/anymongo_wasm_bg.wasm', import.meta.url)) });
configure({
  NativeClient,
  transport: nodeTransport,
  background: true,
  platform: typeof Bun === 'undefined' ? `Node.js ${process.version}` : `Bun ${Bun.version}`,
  // GridFS streams as Node.js streams, as the Node driver's.
  streams: { readable: (web) => Readable.fromWeb(web), writable: (web) => Writable.fromWeb(web) },
});

export * from './client.js';
export default MongoClient;
