// The Worker's entry module: the Rust crate (src/, compiled by build.sh into pkg/) does
// all the work; this file only instantiates its WebAssembly and exports what Workers
// look for, as workers-rs' worker-build writes it: the fetch handler, and the Durable
// Object class, which must be a JavaScript class of the entry module.
import { initSync, fetch as handle, Items as RustItems } from './pkg/cloudflare_worker_rust.js';
import wasm from './pkg/cloudflare_worker_rust_bg.wasm';

initSync({ module: wasm });

/** The Durable Object holding the client: `Items` of src/items.rs. */
export class Items {
  constructor(state, env) {
    this.items = new RustItems(state, env);
  }

  fetch(request) {
    return this.items.fetch(request);
  }
}

export default {
  fetch(request, env, context) {
    return handle(request, env, context);
  },
};
