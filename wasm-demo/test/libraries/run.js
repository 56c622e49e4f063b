// Real libraries on the npm package: Mongoose, connect-mongo and the Auth.js MongoDB
// adapter, through their public APIs, against SecantusDB (a single-node replica set).
//
//   node wasm-demo/test/libraries/run.js
//
// The same test files (*.test.js here) run twice, each time on a fresh server: once with
// the official Node driver as `mongodb` (the control), once with anymongo's packed
// tarball (`npm pack` of wasm-demo; run wasm-demo/build.sh first) installed as `mongodb`.
// Both installs come from this folder's package.json and package-lock.json and live in
// the tool cache (tests/setup.sh path), with npm's own cache, so that a second run is
// offline: the control's is keyed by the lockfile, anymongo's also by the tarball.
//
// Prints, per driver, its passed and failed counts, then every test that passes with the
// official driver and not with anymongo, with its reason. Exits with 1 when there is
// such a test, or when a test fails with the official driver (a test the control fails
// proves nothing), 2 when the package is not built.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Where tests/setup.sh caches tools (as test/server.js finds it, which needs the built package). */
const cache = process.env.ANYMONGO_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'anymongo');
const wasmDemo = path.join(here, '..', '..');
/** One driver's whole run of the test files stops by then, whatever hangs. */
const RUN_TIMEOUT_MS = 5 * 60_000;
const NPM_FLAGS = [
  '--no-audit',
  '--no-fund',
  '--loglevel=error',
  '--prefer-offline',
  // The Auth.js adapter still declares `mongodb ^6` as its peer; Mongoose 9 needs 7.9.
  // The `overrides` of package.json give every library the one `mongodb`.
  '--legacy-peer-deps',
  `--cache=${path.join(cache, 'npm-cache')}`,
];

function npm(cwd, args) {
  execFileSync('npm', [...args, ...NPM_FLAGS], { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
}

function sha256(...buffers) {
  const hash = createHash('sha256');
  for (const buffer of buffers) hash.update(buffer);
  return hash.digest('hex').slice(0, 16);
}

/**
 * Installs this folder's package.json into `dir` (once: a `.complete` stamp marks a
 * finished install), `mongodb` replaced by the tarball `tarball` when given.
 */
function install(dir, tarball) {
  if (existsSync(path.join(dir, '.complete'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(here, 'package.json'), 'utf8'));
  // The lockfile pins every other package; npm resolves only the changed `mongodb`.
  copyFileSync(path.join(here, 'package-lock.json'), path.join(dir, 'package-lock.json'));
  if (tarball) {
    copyFileSync(tarball, path.join(dir, 'anymongo.tgz'));
    manifest.dependencies.mongodb = 'file:./anymongo.tgz';
  }
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`libraries: installing into ${dir}`);
  npm(dir, tarball ? ['install'] : ['ci']);
  // A library with a `mongodb` of its own would test that one, not the driver under test.
  for (const library of Object.keys(manifest.dependencies)) {
    if (existsSync(path.join(dir, 'node_modules', library, 'node_modules', 'mongodb'))) {
      throw new Error(`${library} got a mongodb of its own in ${dir}: the overrides of package.json no longer apply`);
    }
  }
  writeFileSync(path.join(dir, '.complete'), '');
  return dir;
}

/** The packed npm package, in a temporary folder. */
function pack() {
  if (!existsSync(path.join(wasmDemo, 'pkg', 'anymongo_wasm_bg.wasm'))) {
    console.error('libraries: wasm-demo/pkg is missing: run `bash wasm-demo/build.sh` first');
    process.exit(2);
  }
  const dest = mkdtempSync(path.join(os.tmpdir(), 'anymongo-pack-'));
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: wasmDemo, encoding: 'utf8' }).trim();
  return { dest, tarball: path.join(dest, name.split('\n').pop()) };
}

/**
 * Runs the test files with the driver installed in `dir`, on a fresh server; resolves
 * to Map(test name -> null when passed, else the reason it failed).
 */
async function runTests(driver, dir, officialDir) {
  const { startServer } = await import('../server.js');
  const server = await startServer();
  const results = path.join(mkdtempSync(path.join(os.tmpdir(), 'anymongo-libs-')), 'results.jsonl');
  const files = readdirSync(here).filter((file) => file.endsWith('.test.js')).map((file) => path.join(here, file));
  let timedOut = false;
  try {
    await new Promise((resolve) => {
      const child = spawn(
        process.execPath,
        // One file at a time: the files share the server, and a machine with more cores
        // must not make the run differ from one with two.
        ['--test', '--test-concurrency=1', '--test-reporter', path.join(here, 'reporter.js'), '--test-reporter-destination', results, ...files],
        {
          stdio: ['ignore', 'inherit', 'inherit'],
          env: {
            ...process.env,
            LIBRARIES_DRIVER: driver,
            LIBRARIES_DIR: dir,
            LIBRARIES_OFFICIAL_DIR: officialDir,
            LIBRARIES_URI: server.uri,
          },
        },
      );
      // A hung run still reports what it got through (below), not only that it hung.
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, RUN_TIMEOUT_MS);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    await server.stop();
  }
  const verdicts = new Map();
  // No file: the run ended before its reporter wrote a line; every test counts as not run.
  const lines = existsSync(results) ? readFileSync(results, 'utf8').split('\n').filter(Boolean) : [];
  for (const line of lines) {
    const { name, error } = JSON.parse(line);
    verdicts.set(name, error);
  }
  rmSync(path.dirname(results), { recursive: true, force: true });
  if (timedOut) verdicts.set(`the ${driver} run`, `did not end within ${RUN_TIMEOUT_MS} ms (killed)`);
  return verdicts;
}

function counts(verdicts) {
  const failed = [...verdicts.values()].filter((error) => error !== null).length;
  return `${verdicts.size - failed} passed, ${failed} failed`;
}

async function main() {
  const key = sha256(readFileSync(path.join(here, 'package.json')), readFileSync(path.join(here, 'package-lock.json')));
  const root = path.join(cache, 'libraries', key);
  const officialDir = install(path.join(root, 'official'));
  const { dest, tarball } = pack();
  let anymongoDir;
  try {
    // Only the newest build's install is kept.
    const tarKey = sha256(readFileSync(tarball));
    for (const old of readdirSync(root).filter((name) => name.startsWith('anymongo-') && name !== `anymongo-${tarKey}`)) {
      rmSync(path.join(root, old), { recursive: true, force: true });
    }
    anymongoDir = install(path.join(root, `anymongo-${tarKey}`), tarball);
  } finally {
    rmSync(dest, { recursive: true, force: true });
  }

  const official = await runTests('official', officialDir, officialDir);
  const anymongo = await runTests('anymongo', anymongoDir, officialDir);
  console.log(`libraries official driver: ${counts(official)}`);
  console.log(`libraries anymongo: ${counts(anymongo)}`);
  let failed = false;
  for (const [name, error] of official) {
    if (error !== null) {
      failed = true;
      console.log(`  FAILED with the official driver (the control): ${name}: ${error}`);
    } else if (!anymongo.has(name)) {
      failed = true;
      console.log(`  FAILED with anymongo: ${name}: did not run`);
    } else if (anymongo.get(name) !== null) {
      failed = true;
      console.log(`  FAILED with anymongo: ${name}: ${anymongo.get(name)}`);
    }
  }
  // A failed hook or file fails under a name of its own: the reason for what did not run.
  for (const [name, error] of anymongo) {
    if (error !== null && !official.has(name)) {
      failed = true;
      console.log(`  FAILED with anymongo: ${name}: ${error}`);
    }
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();
