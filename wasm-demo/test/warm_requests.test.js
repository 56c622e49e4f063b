// Warm requests of the npm package at a distance (issue 44): one client behind the latency
// proxy, under Node.js and as a Worker under workerd (its client kept in a Durable
// Object), through a cold request, a warm one, one that leaves a cursor unfinished and
// the one after it. The Rust `warm_requests` binary is the parent (the proxy and its
// flight log, anymongo_tests::warm_requests); tests/cold_request/steps.mjs is the child.
// Every request after the cold one takes 1 round trip.
//
// Without the binary (cargo build -p anymongo-tests --bin warm_requests; ./run.sh test
// builds it) or workerd (bash tests/setup.sh js-runtimes), the test is skipped, unless
// CI=true: there it fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer, workerd } from './server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const binary =
  process.env.ANYMONGO_WARM_REQUESTS ??
  path.resolve(root, process.env.CARGO_TARGET_DIR ?? 'target', 'debug', 'warm_requests');
const steps = path.join(root, 'tests', 'cold_request', 'steps.mjs');
// The parent bounds each step at 60 s (a cold Worker compiles first): four of them.
const BOUND_MS = 280_000;

/** Why the test cannot run here (false when it can); under CI=true nothing is skipped. */
function unavailable(needsWorkerd) {
  const missing = [
    !existsSync(binary) && `${binary} is missing (cargo build -p anymongo-tests --bin warm_requests)`,
    needsWorkerd && !existsSync(workerd) && 'workerd not installed (bash tests/setup.sh js-runtimes)',
  ].filter(Boolean);
  return missing.length > 0 && process.env.CI !== 'true' ? missing.join('; ') : false;
}

/** Runs the parent over the child for `runtime`; resolves to each step's round trips and the flights. */
function measure(server, runtime) {
  const args = [`127.0.0.1:${server.port}`, process.execPath, steps, runtime, '{uri}'];
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`warm_requests did not end within ${BOUND_MS} ms: ${output}`));
    }, BOUND_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      const counts = /^round trips: (.*)$/m.exec(output);
      if (code !== 0 || !counts) return reject(new Error(`warm_requests failed (${code}): ${output}`));
      resolve({ roundTrips: counts[1].split(' ').map(Number), output });
    });
  });
}

describe('warm requests at a distance', { timeout: 2 * BOUND_MS }, () => {
  let server;

  before(async () => {
    server = await startServer({ standalone: true });
  });

  after(async () => {
    await server?.stop();
  });

  for (const runtime of ['node', 'workerd']) {
    it(`under ${runtime}, a warm request, one that leaves a cursor unfinished and the next take 1 round trip each`, {
      skip: unavailable(runtime === 'workerd'),
    }, async () => {
      assert.ok(existsSync(binary), `${binary} is missing (CI=true: required)`);
      if (runtime === 'workerd') assert.ok(existsSync(workerd), `workerd is missing (CI=true: required)`);
      const { roundTrips, output } = await measure(server, runtime);
      assert.deepEqual(roundTrips.slice(1), [1, 1, 1], output);
    });
  }
});
