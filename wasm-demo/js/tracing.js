// OpenTelemetry (open-telemetry.md): the core's operation, command and transaction
// spans, made spans of `@opentelemetry/api`, the application's optional peer
// dependency. The core decides the names, the attributes and the nesting
// (wasm-demo/src/spans.rs forwards them); this file only maps them onto the API.
//
// A client traces when its `tracing.enabled` says so or, left unset, when the
// environment variable OTEL_NODE_INSTRUMENTATION_MONGODB_ENABLED is 1, true or yes
// (spec, "Enabling, Disabling, and Configuring OpenTelemetry"); the API is loaded
// then, and only then. Without it installed, the client does not trace: no error,
// no cost.

const ENABLED_VAR = 'OTEL_NODE_INSTRUMENTATION_MONGODB_ENABLED';
const QUERY_TEXT_MAX_LENGTH_VAR = 'OTEL_NODE_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH';
// The tracer's name (spec, "Tracer Attributes"): the handshake's driver name; its
// version is the core's (`tracingOptions`).
const TRACER_NAME = 'anymongo';
// Held in a variable so that bundlers leave the import to run time: an application
// without the package must still bundle this one.
const API = '@opentelemetry/api';

let api; // the loaded module; null when it is not installed
let tracerVersion;
const spans = new Map(); // the core's span id → the open API span

/** The environment variable `name`, where the runtime has an environment. */
function environment(name) {
  try {
    return globalThis.process?.env?.[name] ?? globalThis.Deno?.env.get(name);
  } catch {
    return undefined; // Deno without --allow-env
  }
}

/**
 * The client's `tracing` options with what it leaves unset taken from the
 * environment, `enabled` false when `@opentelemetry/api` cannot be loaded; `version`
 * is the driver's.
 */
export async function tracingOptions(tracing, version) {
  tracerVersion = version;
  let enabled = tracing?.enabled;
  if (enabled === undefined || enabled === null) {
    enabled = ['1', 'true', 'yes'].includes(environment(ENABLED_VAR)?.trim().toLowerCase());
  }
  let queryTextMaxLength = tracing?.queryTextMaxLength;
  if (queryTextMaxLength === undefined || queryTextMaxLength === null) {
    const text = environment(QUERY_TEXT_MAX_LENGTH_VAR)?.trim();
    queryTextMaxLength = /^\d+$/.test(text ?? '') ? Number(text) : undefined;
  }
  if (enabled === true && api === undefined) {
    try {
      api = await import(API);
    } catch {
      api = null;
    }
  }
  return { enabled: enabled === true && Boolean(api), queryTextMaxLength };
}

/**
 * The sink of the core's spans: `start` opens an API span in its parent's (the
 * enclosing driver span, else the application's active context), `record` adds
 * attributes (an error sets the span's status), `end` ends it.
 */
export function spanSink(kind, id, parent, fields) {
  if (kind === 'end') {
    spans.get(id)?.end();
    spans.delete(id);
    return;
  }
  const { 'otel.name': name, 'otel.kind': _kind, 'otel.status_code': status, ...attributes } = fields;
  let span = spans.get(id);
  if (kind === 'start') {
    const enclosing = parent === undefined ? undefined : spans.get(parent);
    const active = api.context.active();
    const context = enclosing ? api.trace.setSpan(active, enclosing) : active;
    const tracer = api.trace.getTracer(TRACER_NAME, tracerVersion);
    span = tracer.startSpan(name, { kind: api.SpanKind.CLIENT, attributes }, context);
    spans.set(id, span);
  } else {
    span?.setAttributes(attributes);
  }
  if (status === 'error') {
    span?.setStatus({ code: api.SpanStatusCode.ERROR, message: attributes['exception.message'] });
  }
}
