// The package's TypeScript declarations (index.d.ts, and its CommonJS copy
// pkg/node.d.cts): test/types/usage.ts uses every class and method with a typed schema
// and must compile under `tsc --strict` (its `@ts-expect-error` lines must fail to, or
// tsc reports them unused); and the values the declarations export must be the
// JavaScript's exports. No server: nothing here runs the driver.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
// The pinned devDependency (package.json), run by this Node.js: no shell, no npx.
const tsc = require.resolve('typescript/bin/tsc');

/** Runs tsc over one of test/types' projects; tsc prints nothing when all is well. */
function typecheck(project) {
  const run = spawnSync(process.execPath, [tsc, '--strict', '--noEmit', '-p', `test/types/${project}`], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(run.error, undefined, `tsc did not run: ${run.error}`);
  assert.equal(`${run.stdout}${run.stderr}`, '', 'tsc reported errors');
  assert.equal(run.status, 0);
}

test('usage.ts type-checks against index.d.ts under tsc --strict', { timeout: 150_000 }, () => {
  typecheck('tsconfig.json');
});

test('usage.cts type-checks against the CommonJS types, pkg/node.d.cts', { timeout: 150_000 }, (t) => {
  const copy = `${root}pkg/node.d.cts`;
  if (!existsSync(copy)) {
    t.skip('pkg/ is not built (bash build.sh)');
    return;
  }
  assert.equal(
    readFileSync(copy, 'utf8'),
    readFileSync(`${root}index.d.ts`, 'utf8'),
    'pkg/node.d.cts is not the current index.d.ts: run build.sh (or cp index.d.ts pkg/node.d.cts)',
  );
  typecheck('tsconfig.cjs.json');
});

test('the declared values are the JavaScript exports', { timeout: 150_000 }, async () => {
  const ts = require('typescript');
  const file = `${root}index.d.ts`;
  const program = ts.createProgram([file], {
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  });
  const checker = program.getTypeChecker();
  const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)));
  const declared = exported
    .filter((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return target.flags & ts.SymbolFlags.Value;
    })
    .map((symbol) => symbol.name)
    .sort();
  // js/client.js is what each runtime's entry point re-exports, with MongoClient as default.
  const actual = Object.keys(await import('../js/client.js'))
    .concat('default')
    .sort();
  assert.deepEqual(declared, actual);
});
