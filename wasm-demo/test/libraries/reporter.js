// A node:test reporter for run.js: one JSON line per test that ended,
// { name: "<file>: <test>", error: null | "<why it failed>" }. A suite that failed by
// itself (a hook, or a file that did not load) counts as a test of its own; one that
// failed only because its tests did is left out. run.js compares these lines between drivers.
import path from 'node:path';
import { inspect } from 'node:util';

const MAX_REASON = 600;

function reason(error) {
  const cause = error?.cause ?? error;
  let text = String(cause?.message ?? cause).split('\n')[0];
  // An assertion's first line says only that values differ: show them.
  if (typeof cause === 'object' && cause !== null && 'actual' in cause && 'expected' in cause) {
    const show = (value) => inspect(value, { depth: 6, breakLength: Infinity });
    text += ` actual ${show(cause.actual)}, expected ${show(cause.expected)}`;
  }
  return text.slice(0, MAX_REASON);
}

export default async function* reporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    if (data.details?.type === 'suite' && (event.type === 'test:pass' || data.details.error?.failureType === 'subtestsFailed')) continue;
    const name = `${path.basename(data.file ?? '?')}: ${data.name}`;
    const error = event.type === 'test:fail' ? reason(data.details.error) : null;
    yield `${JSON.stringify({ name, error })}\n`;
  }
}
