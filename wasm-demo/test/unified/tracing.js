// Schema 1.27's tracing (spec "entity", client `observeTracingMessages`; "test",
// `expectTracingMessages`) over `@opentelemetry/api`, as an application sees the
// package's spans: a tracer provider whose span processor files each span as it
// starts under the test whose span it descends from. A test's operations run in a
// span of the runner's own, the application's active span; a span's parent among
// the collected ones is its parent span (as the Rust runner, tests/src/unified/spans.rs).
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { EJSON } from 'bson';
import { Failure } from './runner.js';

/** The spans started in each observed trace (the trace id of a test's span), in start order. */
const traces = new Map();
let installed = false;

/** Registers the runner's tracer provider and context manager, once. */
export function installTracing() {
  if (installed) return;
  installed = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const collector = {
    onStart: (span) => traces.get(span.spanContext().traceId)?.push(span),
    onEnd() {},
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [collector] }));
}

/** The client option of an entity with `observeTracingMessages`: tracing on, query text long enough for any test with `enableCommandPayload`. */
export function tracingOption(observe) {
  return { enabled: true, queryTextMaxLength: observe.enableCommandPayload === true ? 1 << 20 : 0 };
}

/**
 * Runs `body` in a span of the test's own; resolves to the spans the driver started
 * under it: `{ name, attributes, parent }` (`parent`: the index of its parent among
 * them), `db.mongodb.lsid` read back from its Extended JSON for `$$sessionLsid`.
 */
export async function collectSpans(body) {
  installTracing();
  const test = trace.getTracer('anymongo unified runner').startSpan('unified test');
  const started = [];
  traces.set(test.spanContext().traceId, started);
  try {
    await context.with(trace.setSpan(context.active(), test), body);
  } finally {
    test.end();
    traces.delete(test.spanContext().traceId);
  }
  return spansOf(started);
}

function spansOf(started) {
  const ids = started.map((span) => span.spanContext().spanId);
  return started.map((span) => {
    const attributes = { ...span.attributes };
    if (typeof attributes['db.mongodb.lsid'] === 'string') {
      try {
        attributes['db.mongodb.lsid'] = EJSON.parse(attributes['db.mongodb.lsid'], { relaxed: false });
      } catch {
        // left as text: the match then fails and shows it
      }
    }
    const parent = ids.indexOf(span.parentSpanContext?.spanId);
    return { name: span.name, attributes, parent: parent < 0 ? null : parent };
  });
}

/** Checks one `expectTracingMessages` entry (spec "expectedTracingMessages") against `spans`. */
export function matchSpans(expected, spans, matcher) {
  const children = (parent) => spans.map((_, index) => index).filter((index) => spans[index].parent === parent);
  const ignoreExtra = expected.ignoreExtraSpans === true;
  const matchSpan = (want, index, path) => {
    const span = spans[index];
    if (span.name !== want.name) throw new Failure(`${path}: expected the span ${JSON.stringify(want.name)}, got ${JSON.stringify(span.name)}`);
    // Attributes match as a root document: a span may have attributes the test does not list.
    try {
      matcher.root(want.attributes ?? {}, span.attributes);
    } catch (error) {
      throw new Failure(`${path} (${want.name}): ${error.message}`);
    }
    matchList(want.nested ?? [], children(index), `${path}.nested`);
  };
  const matchList = (wanted, actual, path) => {
    if (!ignoreExtra) {
      if (wanted.length !== actual.length) throw new Failure(`${path}: expected ${wanted.length} spans, got ${actual.length}`);
      wanted.forEach((want, position) => matchSpan(want, actual[position], `${path}[${position}]`));
      return;
    }
    // ignoreExtraSpans: the expected spans are a subsequence of the actual ones, at every level.
    let next = 0;
    wanted.forEach((want, position) => {
      const here = `${path}[${position}]`;
      let last;
      for (; next < actual.length; next += 1) {
        try {
          matchSpan(want, actual[next], here);
          next += 1;
          return;
        } catch (error) {
          last = error;
        }
      }
      throw new Failure(`${here}: no span ${JSON.stringify(want.name)} in order${last ? ` (last mismatch: ${last.message})` : ''}`);
    });
  };
  try {
    matchList(expected.spans ?? [], children(null), 'spans');
  } catch (error) {
    throw new Failure(`client ${expected.client}: ${error.message}\nspans:\n${render(spans, null, 1)}`);
  }
}

function render(spans, parent, depth) {
  return spans
    .map((span, index) => ({ span, index }))
    .filter(({ span }) => span.parent === parent)
    .map(({ span, index }) => [`${'  '.repeat(depth)}${span.name} ${JSON.stringify(span.attributes)}`, render(spans, index, depth + 1)].filter(Boolean).join('\n'))
    .join('\n');
}
