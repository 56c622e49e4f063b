// Where the spec test corpus is, and which of its folders run.js runs by default.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cache } from '../server.js';

/** The suites the Rust runner runs with its plain unified runner, load_balancer, and open_telemetry (tests/data/specs). */
export const DEFAULT_DIRS = [
  'crud',
  'retryable_reads',
  'retryable_writes',
  'sessions',
  'transactions',
  'transactions-convenient-api',
  'change_streams',
  'command_monitoring',
  'gridfs',
  'run_command',
  'versioned-api',
  'load_balancer',
  'open_telemetry',
];

/** The corpus folder (pymongo's test/ folder), as tests/src/spec/mod.rs finds it: $ANYMONGO_SPEC_DIR, else the cached copy. */
export function corpusDir() {
  return process.env.ANYMONGO_SPEC_DIR || path.join(cache, 'spec', 'pymongo-4.20.0', 'test');
}

/** The spec tests the repository carries where the corpus lacks them (tests/data/specs: open_telemetry…). */
export const VENDORED_DIR = fileURLToPath(new URL('../../../tests/data/specs/', import.meta.url));

/** The folder of the suite `dir`: the corpus's, else the repository's copy (open_telemetry). */
export function suiteDir(dir) {
  const inCorpus = path.join(corpusDir(), dir);
  return existsSync(inCorpus) || !existsSync(path.join(VENDORED_DIR, dir)) ? inCorpus : path.join(VENDORED_DIR, dir);
}

/**
 * anymongo's own unified tests (tests/data/test, laid out like the corpus), for APIs
 * whose upstream tests the corpus lacks: run.js runs each folder beside the corpus
 * folder of the same name, as the Rust runner does (tests/src/spec/mod.rs, own_tests).
 */
export const OWN_DIR = fileURLToPath(new URL('../../../tests/data/test/', import.meta.url));

/** The current versions of spec test files read in place of pymongo's copies (tests/data/specs/current, as the Rust runner). */
const CURRENT_DIR = fileURLToPath(new URL('../../../tests/data/specs/current/', import.meta.url));
const CURRENT_FILES = JSON.parse(readFileSync(path.join(CURRENT_DIR, 'files.json'), 'utf8')).map((entry) => entry.corpus);

/** The file to read for the corpus file `file`: its current version when the table lists a corpus path it ends with, else `file`. */
export function currentVersion(file) {
  const corpus = CURRENT_FILES.find((listed) => file.split(path.sep).join('/').endsWith(`/${listed}`));
  return corpus ? path.join(CURRENT_DIR, corpus) : file;
}
