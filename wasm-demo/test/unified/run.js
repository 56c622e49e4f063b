// Runs the unified-format spec tests over the npm package's public API, against a
// SecantusDB single-node replica set on loopback (test/server.js):
//
//   node test/unified/run.js [--verbose] [--progress] [DIR ...]
//
// DIR is a suite folder of the corpus (pymongo's test/ folder: $ANYMONGO_SPEC_DIR, else
// the copy tests/setup.sh caches) or of the spec tests the repository carries
// (tests/data/specs, e.g. open_telemetry), e.g. `crud` or `transactions-convenient-api`; by
// default every suite below. Prints one line per folder,
//   spec npm/<dir>: N passed, N failed, N skipped
// then a line per failed test (and, with --verbose, per skipped test) with its reason.
// With --progress, each test's verdict goes to stderr as it ends. load_balancer runs
// behind the harness's load balancer (target/debug/lb_proxy, or $ANYMONGO_LB_PROXY).
// A folder of anymongo's own tests of the same name (tests/data/test) runs after the
// corpus folder, as `spec npm/<dir> (anymongo's tests)`.
// The tests of a valid-fail folder (unified-test-format/valid-fail) pass when the
// runner fails them. Exits with 1 if a test failed, 2 if the corpus or the server is missing. Each test is
// bounded (runner.js TEST_TIMEOUT_MS), and so is the whole run (RUN_TIMEOUT_MS).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../server.js';
import { MongoClient } from '../../js/node.js';
import { corpusDir, DEFAULT_DIRS, OWN_DIR, suiteDir } from './paths.js';
import { discover, runDirectory } from './runner.js';

/** The whole run stops by then, whatever hangs. */
const RUN_TIMEOUT_MS = 30 * 60_000;

async function main(argv) {
  const verbose = argv.includes('--verbose');
  const progress = argv.includes('--progress');
  const dirs = argv.filter((arg) => !arg.startsWith('--'));
  const corpus = corpusDir();
  const missing = (dirs.length ? dirs : DEFAULT_DIRS).filter((dir) => !existsSync(suiteDir(dir)));
  if (missing.length) {
    console.error(`no suite folder ${missing.join(', ')} in ${corpus} (tests/setup.sh corpus caches it; ANYMONGO_SPEC_DIR overrides)`);
    return 2;
  }
  const server = await startServer();
  // Interrupted, the run stops its server first (test/server.js spawns it as a child
  // that would outlive the process).
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      server.stop().finally(() => process.exit(130));
    });
  }
  const internal = new MongoClient(server.uri);
  const balancers = [];
  let failed = false;
  try {
    const direct = { uri: server.uri, internal, info: await discover(internal, server.uri) };
    for (const dir of dirs.length ? dirs : DEFAULT_DIRS) {
      // The load_balancer suite runs behind the harness's load balancers (one service,
      // and two for useMultipleMongoses), and its other tests on a standalone server,
      // as the Rust runner runs it.
      const deployment = dir === 'load_balancer' ? await behindLoadBalancers(server, balancers) : direct;
      const onTest = progress ? ({ file, test }, verdict) => process.stderr.write(`${dir}/${file}: ${test}: ${verdict}\n`) : undefined;
      // Spec "Test Runner Support": a runner MUST fail each test of valid-fail.
      const expectFailure = dir.includes('valid-fail');
      const folders = [[suiteDir(dir), `spec npm/${dir}`]];
      if (existsSync(path.join(OWN_DIR, dir))) folders.push([path.join(OWN_DIR, dir), `spec npm/${dir} (anymongo's tests)`]);
      for (const [folder, label] of folders) {
        const result = await runDirectory(folder, dir.split('/')[0], deployment, { onTest, expectFailure });
        console.log(`${label}: ${result.passed} passed, ${result.failed.length} failed, ${result.skipped.length} skipped`);
        for (const { file, test, why } of result.failed) console.log(`  FAILED ${file}: ${test}: ${why}`);
        if (verbose) {
          for (const { file, test, why } of result.skipped) console.log(`  skipped ${file}: ${test}: ${why}`);
        }
        failed ||= result.failed.length > 0;
      }
    }
  } finally {
    await internal.close().catch(() => {});
    for (const each of balancers.reverse()) await each.stop();
    await server.stop();
  }
  return failed ? 1 : 0;
}

/** Where `cargo build -p anymongo-tests --bin lb_proxy` puts the load balancer. */
const LB_PROXY = process.env.ANYMONGO_LB_PROXY ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'target', 'debug', 'lb_proxy');
const LB_START_TIMEOUT_MS = 30_000;

/** Starts `lb_proxy` in front of `address` with `services` serviceIds; resolves to { uri, stop }. */
function startLoadBalancer(address, services) {
  const child = spawn(LB_PROXY, [address, String(services)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`lb_proxy did not start within ${LB_START_TIMEOUT_MS} ms`));
    }, LB_START_TIMEOUT_MS);
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /^(mongodb:\/\/\S+)$/m.exec(output);
      if (!match) return;
      clearTimeout(timer);
      // Closing its standard input stops it.
      const stop = () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.stdin.end())));
      resolve({ uri: match[1], stop });
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${LB_PROXY} (cargo build -p anymongo-tests --bin lb_proxy): ${error.message}`));
    });
  });
}

/**
 * The deployments of the load_balancer suite (what it needs stopped goes to `stops`):
 * two load balancers in front of `server`, and a standalone server for its tests of
 * `loadBalanced=true` against a deployment that is not balanced (as the Rust runner).
 */
async function behindLoadBalancers(server, stops) {
  const address = new URL(server.uri.replace(/^mongodb:/, 'http:')).host;
  const single = await startLoadBalancer(address, 1);
  stops.push(single);
  const multi = await startLoadBalancer(address, 2);
  stops.push(multi);
  const internal = new MongoClient(single.uri);
  stops.push({ stop: () => internal.close().catch(() => {}) });
  const standalone = await startServer({ standalone: true });
  stops.push(standalone);
  const standaloneInternal = new MongoClient(standalone.uri);
  stops.push({ stop: () => standaloneInternal.close().catch(() => {}) });
  return [
    { uri: single.uri, multiUri: multi.uri, internal, info: await discover(internal, single.uri) },
    { uri: standalone.uri, internal: standaloneInternal, info: await discover(standaloneInternal, standalone.uri) },
  ];
}

const watchdog = setTimeout(() => {
  console.error(`the unified runner did not finish within ${RUN_TIMEOUT_MS / 60_000} minutes`);
  process.exit(1);
}, RUN_TIMEOUT_MS);
watchdog.unref();

main(process.argv.slice(2)).then(
  (code) => {
    // Background monitors of clients a test could not close must not keep the process.
    process.exit(code);
  },
  (error) => {
    console.error(error);
    process.exit(2);
  },
);
