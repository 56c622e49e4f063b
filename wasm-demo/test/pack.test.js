// What `npm pack` would publish (issue 47): the WebAssembly, its bindings, the
// JavaScript entry points, the types, README and LICENSE, and nothing else: no tests,
// no Rust sources, no build scripts. Every path the manifest names (main, types,
// exports) must be in the package, so that an entry point cannot be left out of
// `files`. Needs `build.sh` to have run (pkg/), as the other tests do.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const packageDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);
const BOUND = { timeout: 60_000 };

/** The paths `npm pack --dry-run --json` lists. */
async function packed() {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: packageDir,
    timeout: 50_000,
  });
  const [report] = JSON.parse(stdout);
  return new Set(report.files.map((file) => file.path));
}

/** Every relative path in an `exports` value, however deep its conditions go. */
function exportTargets(value) {
  if (typeof value === 'string') return [value];
  return Object.values(value).flatMap(exportTargets);
}

describe('npm pack', BOUND, () => {
  it('ships the wasm, its bindings, the entry points, the types, README and LICENSE', BOUND, async () => {
    const files = await packed();
    for (const file of [
      'package.json',
      'README.md',
      'LICENSE',
      'index.d.ts',
      'pkg/anymongo_wasm_bg.wasm',
      'pkg/anymongo_wasm.js',
      'pkg/node.cjs',
      'pkg/node.d.cts',
      'pkg/lib/bson.cjs',
      'js/node.js',
      'js/deno.js',
      'js/workers.js',
      'js/transports/workers.js',
    ]) {
      assert.ok(files.has(file), `${file} is in the package`);
    }
  });

  it('ships every path the manifest names', BOUND, async () => {
    const files = await packed();
    const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
    const named = [manifest.main, manifest.types, ...exportTargets(manifest.exports)];
    for (const target of named) {
      assert.ok(files.has(path.posix.normalize(target)), `${target} (named in package.json) is in the package`);
    }
  });

  it('ships no tests, Rust sources, build files or dependencies', BOUND, async () => {
    const files = await packed();
    const unwanted = [...files].filter(
      (file) =>
        /^(test|src|node_modules)\//.test(file) ||
        /\.(rs|tgz|ts\.map)$/.test(file) ||
        /(^|\/)(Cargo\.toml|Cargo\.lock|build\.sh|package-lock\.json|demo\.js)$/.test(file),
    );
    assert.deepEqual(unwanted, []);
  });

  it('ships the repository LICENSE unchanged', BOUND, () => {
    const license = (dir) => readFileSync(path.join(dir, 'LICENSE'), 'utf8');
    assert.equal(license(packageDir), license(path.join(packageDir, '..')));
  });
});
