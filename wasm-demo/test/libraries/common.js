// What the test files of run.js share: the driver under test (LIBRARIES_DRIVER:
// "official" or "anymongo"), its install (LIBRARIES_DIR, where `mongodb` is that
// driver and Mongoose, connect-mongo and the Auth.js adapter resolve it), the control's
// install (LIBRARIES_OFFICIAL_DIR) and the server (LIBRARIES_URI), all set by run.js.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.LIBRARIES_DIR;
const officialDir = process.env.LIBRARIES_OFFICIAL_DIR;
if (!dir || !officialDir || !process.env.LIBRARIES_URI) {
  throw new Error('these tests run under wasm-demo/test/libraries/run.js, which installs the libraries and starts the server');
}

/** "official" or "anymongo". */
export const driver = process.env.LIBRARIES_DRIVER;
export const uri = process.env.LIBRARIES_URI;
/** Every test is bounded. */
export const BOUND = { timeout: 30_000 };
/** Client options of every test: a missing server fails fast. */
export const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

/** `require` as a module of the install under test (CommonJS: Mongoose, connect-mongo, `mongodb`). */
export const requireLib = createRequire(path.join(dir, 'package.json'));
/** `require` from the control's install: the official driver, whatever the driver under test. */
export const requireOfficial = createRequire(path.join(officialDir, 'package.json'));

/** Imports the ES module `entry` of the installed package `name` (the Auth.js adapter has no CommonJS entry). */
export function importLib(name, entry) {
  return import(pathToFileURL(path.join(dir, 'node_modules', name, entry)).href);
}

/** A database name of one test file and driver, so that runs never see each other's data. */
export function dbName(file) {
  return `libs_${driver}_${file}`;
}
