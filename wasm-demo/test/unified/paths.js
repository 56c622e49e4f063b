// Where the spec test corpus is, and which of its folders run.js runs by default.
import path from 'node:path';
import { cache } from '../server.js';

/** The suites the Rust runner runs with its plain unified runner, and load_balancer. */
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
];

/** The corpus folder (pymongo's test/ folder), as tests/src/spec/mod.rs finds it: $ANYMONGO_SPEC_DIR, else the cached copy. */
export function corpusDir() {
  return process.env.ANYMONGO_SPEC_DIR || path.join(cache, 'spec', 'pymongo-4.20.0', 'test');
}
