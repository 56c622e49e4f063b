// The entry point for Deno: loads the WebAssembly module from the package and uses
// Deno.connect / Deno.connectTls, with monitoring in the background.
import { MongoClient } from './client.js';
import { configure } from './host.js';
import { initSync, NativeClient } from '../pkg/anymongo_wasm.js';
import { denoTransport } from './transports/deno.js';

initSync({ module: Deno.readFileSync(new URL('../pkg/anymongo_wasm_bg.wasm', import.meta.url)) });
configure({ NativeClient, transport: denoTransport, background: true, platform: `Deno ${Deno.version.deno}` });

export * from './client.js';
export default MongoClient;
