// A node:test reporter for run.js: one JSON line per test that ended,
// { name: "<file>: <test>", error: null | "<why it failed>" } (a failed suite, i.e. a
// failed hook, counts as a test of its own). run.js compares these lines between drivers.
import path from 'node:path';

export default async function* reporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    const suite = data.details?.type === 'suite';
    if (suite && event.type === 'test:pass') continue;
    const name = `${path.basename(data.file ?? '?')}: ${data.name}`;
    let error = null;
    if (event.type === 'test:fail') {
      const cause = data.details.error?.cause ?? data.details.error;
      error = String(cause?.message ?? cause).split('\n')[0].slice(0, 300);
    }
    yield `${JSON.stringify({ name, error })}\n`;
  }
}
