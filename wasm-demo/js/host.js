// What the runtime's entry point (node.js, deno.js, workers.js) sets up for the API:
// { NativeClient, transport, background, platform, streams? }. Internal: applications
// import the entry point, which has called `configure` already.

let settings = null;

/** Called once by the runtime's entry point. */
export function configure(given) {
  settings = given;
}

/** The entry point's settings, or null when the API was imported without one. */
export function host() {
  return settings;
}
