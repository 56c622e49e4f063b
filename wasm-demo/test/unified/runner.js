// The unified test format runner (/work/shared/specs unified-test-format.md) over the
// npm package's public API only: MongoClient, Db, Collection, cursors and, once the
// package has them, sessions, change streams, GridFS buckets and events, as the
// official Node.js driver names them.
//
// Each test counts once: passed, failed, or skipped with a reason. A test that needs
// an API the package lacks is skipped before any setup, the lack decided by looking
// for the method or class (missingApi), so that it runs as soon as the API lands.
// Nothing hangs: each test gets TEST_TIMEOUT_MS in all, fail points are turned off
// after each test however it ended, and the clients it made are closed.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { EJSON } from 'bson';
import * as api from '../../js/node.js';
import { MatchError, Matcher, exactlyEqual, isDocument, show } from './matcher.js';
import { collectSpans, matchSpans, tracingOption } from './tracing.js';
import { knownGap } from './gaps.js';
import { currentVersion } from './paths.js';
import { eventCategory, EventRecorder, matchEvents, NODE_EVENTS } from './events.js';

const { MongoClient, Collection, Db, MongoServerError, MongoOperationTimeoutError } = api;

/** The newest schema version the runner reads (spec "Schema Version"), as the Rust runner's. */
export const SCHEMA_VERSION = [1, 27];
/** How long one test may take, setup and checks included; longer fails it. */
export const TEST_TIMEOUT_MS = 30_000;
/** How long closing a test's clients may take before the runner moves on. */
const CLOSE_TIMEOUT_MS = 5_000;

/** Why a test is not run: thrown before or during it, it counts as skipped. */
export class Skip extends Error {}

/** A test's failure: thrown, it counts as failed with this message. */
export class Failure extends Error {}

/** The reason of a test whose requirements the server does not meet starts with this (as the Rust runner's UNMET). */
export const UNMET = 'runOnRequirements not met: ';
/** The reason of a test needing an API the npm package lacks. */
export const NO_API = 'the npm package has no ';
/** The reason of a test needing what this runner does not do. */
export const RUNNER = 'not supported by the runner: ';

// --- Files -------------------------------------------------------------------------

/** The JSON files under `dir`, recursively, as paths relative to it, sorted. */
export function jsonFiles(dir) {
  const found = [];
  const walk = (relative) => {
    for (const name of readdirSync(path.join(dir, relative)).sort()) {
      const file = path.join(relative, name);
      if (statSync(path.join(dir, file)).isDirectory()) walk(file);
      else if (name.endsWith('.json')) found.push(file);
    }
  };
  walk('');
  return found;
}

/** A test file as canonical Extended JSON: numbers keep their BSON types (Int32, Long, Double). */
export function readTestFile(file) {
  return EJSON.parse(readFileSync(file, 'utf8'), { relaxed: false });
}

/** `"4.9.0-alpha4"` as [4, 9, 0] (spec "Version String": anything after the numbers is dropped); null if malformed. */
export function parseVersion(text) {
  const match = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(String(text));
  return match ? match.slice(1).filter((part) => part !== undefined).map(Number) : null;
}

function compareVersions(version, bound) {
  const parsed = parseVersion(bound);
  if (!parsed) return null;
  for (let i = 0; i < 3; i++) {
    const [a, b] = [version[i] ?? 0, parsed[i] ?? 0];
    if (a !== b) return a < b ? -1 : 1;
  }
  return 0;
}

/** Whether the runner reads files of schema `version` (spec "Test Runner Support"). */
export function schemaSupported(version) {
  const parsed = parseVersion(version);
  return parsed !== null && parsed[0] === SCHEMA_VERSION[0] && (parsed[1] ?? 0) <= SCHEMA_VERSION[1];
}

// --- The deployment ----------------------------------------------------------------

/** What the server is: version, topology, parameters (spec "runOnRequirement"). */
export async function discover(internal, uri) {
  const admin = internal.db('admin');
  const build = await admin.command({ buildInfo: 1 });
  const hello = await admin.command({ hello: 1 });
  let topology = 'single';
  // A load balancer in front of mongoses answers a command's hello as a mongos: the
  // connection string says which it is.
  if (/[?&]loadBalanced=true/i.test(uri) || hello.serviceId !== undefined) topology = 'load-balanced';
  else if (hello.msg === 'isdbgrid') topology = 'sharded';
  else if (hello.setName !== undefined) topology = 'replicaset';
  const parameters = await admin.command({ getParameter: '*' }).catch(() => ({}));
  const version = Array.isArray(build.versionArray) ? build.versionArray.slice(0, 3).map(Number) : parseVersion(build.version);
  return { version, topology, parameters, auth: /^mongodb(\+srv)?:\/\/[^/]*@/.test(uri) };
}

/** Why none of `requirements` is met (spec "runOnRequirement"), or null if one is. */
export function unmetRequirements(requirements, info) {
  if (!requirements || requirements.length === 0) return null;
  const reasons = [];
  for (const requirement of requirements) {
    const why = unmetRequirement(requirement, info);
    if (why === null) return null;
    reasons.push(why);
  }
  return reasons.join('; or ');
}

function unmetRequirement(requirement, info) {
  const version = info.version.join('.');
  if (requirement.minServerVersion !== undefined && compareVersions(info.version, requirement.minServerVersion) < 0) {
    return `server ${version} < minServerVersion ${requirement.minServerVersion}`;
  }
  if (requirement.maxServerVersion !== undefined && compareVersions(info.version, requirement.maxServerVersion) > 0) {
    return `server ${version} > maxServerVersion ${requirement.maxServerVersion}`;
  }
  if (requirement.topologies) {
    // "sharded" and "sharded-replicaset" name the same thing today (every shard is a replica set).
    const names = requirement.topologies.map((name) => (name === 'sharded-replicaset' ? 'sharded' : name));
    if (!names.includes(info.topology)) {
      return `the topology ${info.topology} is none of ${JSON.stringify(requirement.topologies)}`;
    }
  }
  if (requirement.serverless === 'require') return 'needs Atlas Serverless';
  for (const [name, expected] of Object.entries(requirement.serverParameters ?? {})) {
    const actual = info.parameters[name];
    if (actual === undefined || !exactlyEqual(expected, actual)) {
      return `server parameter ${name} is ${actual === undefined ? 'unknown' : show(actual)}, not ${show(expected)}`;
    }
  }
  if (requirement.auth !== undefined && requirement.auth !== info.auth) {
    return requirement.auth ? 'needs authentication, which the test server does not use' : 'needs authentication to be disabled';
  }
  if (requirement.authMechanism !== undefined && !info.auth) return `needs authentication with ${requirement.authMechanism}`;
  if (requirement.csfle !== undefined && requirement.csfle !== false) return 'needs client-side field level encryption (csfle)';
  return null;
}

// --- What the npm package offers ---------------------------------------------------

const hasMethod = (Class, name) => typeof Class?.prototype?.[name] === 'function';

/** Why entity descriptions of `kind` cannot be created today, or null. */
function missingEntityApi(kind, description) {
  switch (kind) {
    case 'client':
      if (description.autoEncryptOpts) return 'client-side encryption (autoEncryptOpts)';
      if (description.observeLogMessages) return 'logger (observeLogMessages)';
      if ((description.observeEvents?.length || description.storeEventsAsEntities?.length) && !hasMethod(MongoClient, 'on')) {
        return 'MongoClient.on (events: observeEvents)';
      }
      return null;
    case 'session':
      return hasMethod(MongoClient, 'startSession') ? null : 'MongoClient.startSession';
    case 'bucket':
      return typeof api.GridFSBucket === 'function' ? null : 'GridFSBucket';
    case 'clientEncryption':
      return typeof api.ClientEncryption === 'function' ? null : 'ClientEncryption';
    case 'database':
    case 'collection':
    case 'thread':
      return null;
    default:
      return null;
  }
}

/** The kind of an entity description: its only key (client, database, collection...). */
function entityKind(description) {
  return Object.keys(description)[0];
}

// --- Entities ----------------------------------------------------------------------

/** The entity map of one test (spec "Entity Map"). */
class Entities {
  #map = new Map();

  set(id, kind, value) {
    if (this.#map.has(id)) throw new Failure(`entity ${id} already exists`);
    this.#map.set(id, { kind, value });
  }

  get(id, kind) {
    const entity = this.#map.get(id);
    if (!entity) throw new Failure(`no entity ${id}`);
    if (kind && entity.kind !== kind) throw new Failure(`entity ${id} is a ${entity.kind}, not a ${kind}`);
    return entity.value;
  }

  kind(id) {
    return this.#map.get(id)?.kind;
  }

  has(id) {
    return this.#map.has(id);
  }

  /** For the matcher: `$$matchesEntity`. */
  value(id) {
    const entity = this.#map.get(id);
    if (!entity) throw new MatchError(`$$matchesEntity: no entity ${id}`);
    return entity.kind === 'client' ? entity.value.client : entity.value;
  }

  /**
   * For the matcher: `$$sessionLsid`, the Node driver's `session.id`, or the last one
   * seen: the package gives a session its id at its first use, and none once ended,
   * where tests match the commands of a session after ending it.
   */
  sessionLsid(id) {
    const entity = this.#map.get(id);
    if (entity?.kind !== 'session') throw new MatchError(`$$sessionLsid: no session ${id}`);
    return entity.value.id ?? this.#lsids.get(entity.value);
  }

  /** Keeps the ids of `sessions` (around each operation that uses them). */
  noteLsids(sessions) {
    for (const session of sessions) {
      const lsid = session.id;
      if (lsid !== undefined && lsid !== null) this.#lsids.set(session, lsid);
    }
  }

  #lsids = new Map();

  values() {
    return [...this.#map.values()];
  }
}

/** Options given in Extended JSON as a user would write them: BSON numbers as JS numbers, top level only. */
function plainOptions(options) {
  const plain = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    const type = value?._bsontype;
    plain[key] = type === 'Int32' || type === 'Double' || type === 'Long' ? Number(value) : value;
  }
  return plain;
}

/** Whether the test sets fail points (its clients then get a short heartbeatFrequencyMS). */
function setsFailPoints(test) {
  return test.operations.some((operation) => operation.name === 'failPoint' || operation.name === 'targetedFailPoint');
}

/** Creates the entity `description` (spec "entity") in `context`. */
async function createEntity(description, context) {
  const kind = entityKind(description);
  const spec = description[kind];
  const missing = missingEntityApi(kind, spec);
  if (missing) throw new Skip(`${NO_API}${missing}`);
  const { entities } = context;
  switch (kind) {
    case 'client': {
      const options = plainOptions(spec.uriOptions);
      // Spec "Executing a Test": a reduced heartbeatFrequencyMS speeds recovery after a
      // fail point, unless the client names its own (as the Rust runner does).
      if (context.setsFailPoints && options.heartbeatFrequencyMS === undefined) options.heartbeatFrequencyMS = 500;
      if (spec.serverApi) options.serverApi = plainOptions(spec.serverApi);
      if (spec.observeTracingMessages) options.tracing = tracingOption(spec.observeTracingMessages);
      const observed = spec.observeEvents ?? [];
      const recorder = new EventRecorder(spec);
      if (observed.some((name) => eventCategory(name) === 'command')) options.monitorCommands = true;
      let client;
      try {
        // useMultipleMongoses: every mongos (here: a load balancer of two services).
        client = new MongoClient(spec.useMultipleMongoses ? context.multiUri : context.uri, options);
      } catch (error) {
        // The package refuses options it does not have yet (an object option such as
        // serverApi): a missing API, not a failure of the test.
        if (error?.name === 'MongoInvalidArgumentError' || error?.name === 'MongoParseError') {
          const objects = Object.keys(options).filter((name) => isDocument(options[name]));
          const named = objects.length ? `MongoClient option ${objects.join(', ')}` : `MongoClient options ${show(options)}`;
          throw new Skip(`${NO_API}${named} (${error.message})`);
        }
        throw error;
      }
      context.clients.push(client);
      if (observed.length > 0 || spec.storeEventsAsEntities) {
        recorder.attach(client, NODE_EVENTS);
      }
      for (const { id, events } of spec.storeEventsAsEntities ?? []) {
        const stored = [];
        recorder.store(events, stored);
        entities.set(id, 'events', stored);
      }
      entities.set(spec.id, 'client', { client, recorder });
      // Connected, as the Node driver's runner does: monitoring starts (tests wait for
      // SDAM events right after creating a client).
      await client.connect();
      return;
    }
    case 'database': {
      const { client } = entities.get(spec.client, 'client');
      const options = plainOptions(spec.databaseOptions);
      const db = client.db(spec.databaseName, options);
      requireOptions(db, options, 'Db');
      entities.set(spec.id, 'database', db);
      return;
    }
    case 'collection': {
      const db = entities.get(spec.database, 'database');
      const options = plainOptions(spec.collectionOptions);
      const collection = db.collection(spec.collectionName, options);
      requireOptions(collection, options, 'Collection');
      entities.set(spec.id, 'collection', collection);
      return;
    }
    case 'session': {
      const { client } = entities.get(spec.client, 'client');
      const options = plainOptions(spec.sessionOptions);
      // `snapshotTime` names an entity: a saved getSnapshotTime result.
      if (typeof options.snapshotTime === 'string') options.snapshotTime = entities.get(options.snapshotTime);
      if (options.defaultTransactionOptions) options.defaultTransactionOptions = plainOptions(options.defaultTransactionOptions);
      entities.set(spec.id, 'session', client.startSession(options));
      return;
    }
    case 'bucket': {
      const db = entities.get(spec.database, 'database');
      entities.set(spec.id, 'bucket', new api.GridFSBucket(db, plainOptions(spec.bucketOptions)));
      return;
    }
    case 'thread':
      // A thread is a chain of promises: JS has one thread, and the operations of a
      // thread entity run one after another, concurrently with the test's own.
      entities.set(spec.id, 'thread', { chain: Promise.resolve(), error: null });
      return;
    default:
      throw new Skip(`${RUNNER}entities of kind ${kind}`);
  }
}

/**
 * The Node driver's Db and Collection expose their options (readConcern, writeConcern,
 * readPreference, timeoutMS) as properties: one missing means the package ignores it,
 * and the test, whose expectations rest on it, is skipped rather than run without it.
 */
function requireOptions(object, options, className) {
  for (const name of Object.keys(options)) {
    if (!(name in object)) throw new Skip(`${NO_API}${className} option ${name} (${className}.${name} is missing)`);
  }
}

// --- Operations --------------------------------------------------------------------

/** Reads `args` of an operation: `session` as the session entity, `$$hexBytes` as bytes. */
function resolveArguments(args, entities) {
  const resolved = {};
  for (const [key, value] of Object.entries(args ?? {})) {
    if (key === 'session') resolved.session = entities.get(value, 'session');
    else resolved[key] = resolveHexBytes(value);
  }
  return resolved;
}

function resolveHexBytes(value) {
  if (isDocument(value) && Object.keys(value).length === 1 && typeof value.$$hexBytes === 'string') {
    return Buffer.from(value.$$hexBytes, 'hex');
  }
  return value;
}

/** `args` without `names`, as the options object of a Node method. */
function optionsOf(args, ...names) {
  const options = { ...args };
  for (const name of names) delete options[name];
  if (typeof options.returnDocument === 'string') options.returnDocument = options.returnDocument.toLowerCase();
  // The spec's cursorType, as the Node driver's tailable/awaitData options.
  if (options.cursorType === 'tailable') options.tailable = true;
  if (options.cursorType === 'tailableAwait') Object.assign(options, { tailable: true, awaitData: true });
  delete options.cursorType;
  return plainOptions(options);
}

/** Iterable results: their documents are matched as root-level documents (spec "Evaluating Matches"). */
const ITERATED = new Set(['find', 'aggregate', 'listIndexes', 'listCollections', 'listDatabases', 'runCursorCommand']);

/**
 * The operations of entities, by `<kind>.<name>`: `needs` says which method of the
 * npm package each calls (checked before the test runs), `run` calls it as the Node
 * driver's API takes its arguments. The test runner's own operations follow.
 */
const OPERATIONS = {
  // Collection (spec "Collection Operations"; Node: Collection).
  'collection.insertOne': { needs: [Collection, 'insertOne'], run: (c, a) => c.insertOne(a.document, optionsOf(a, 'document')) },
  'collection.insertMany': { needs: [Collection, 'insertMany'], run: (c, a) => c.insertMany(a.documents, optionsOf(a, 'documents')) },
  'collection.updateOne': { needs: [Collection, 'updateOne'], run: (c, a) => c.updateOne(a.filter, a.update, optionsOf(a, 'filter', 'update')) },
  'collection.updateMany': { needs: [Collection, 'updateMany'], run: (c, a) => c.updateMany(a.filter, a.update, optionsOf(a, 'filter', 'update')) },
  'collection.replaceOne': {
    needs: [Collection, 'replaceOne'],
    run: (c, a) => c.replaceOne(a.filter, a.replacement, optionsOf(a, 'filter', 'replacement')),
  },
  'collection.deleteOne': { needs: [Collection, 'deleteOne'], run: (c, a) => c.deleteOne(a.filter, optionsOf(a, 'filter')) },
  'collection.deleteMany': { needs: [Collection, 'deleteMany'], run: (c, a) => c.deleteMany(a.filter, optionsOf(a, 'filter')) },
  'collection.findOneAndUpdate': {
    needs: [Collection, 'findOneAndUpdate'],
    run: (c, a) => c.findOneAndUpdate(a.filter, a.update, optionsOf(a, 'filter', 'update')),
  },
  'collection.findOneAndReplace': {
    needs: [Collection, 'findOneAndReplace'],
    run: (c, a) => c.findOneAndReplace(a.filter, a.replacement, optionsOf(a, 'filter', 'replacement')),
  },
  'collection.findOneAndDelete': {
    needs: [Collection, 'findOneAndDelete'],
    run: (c, a) => c.findOneAndDelete(a.filter, optionsOf(a, 'filter')),
  },
  'collection.bulkWrite': { needs: [Collection, 'bulkWrite'], run: (c, a) => c.bulkWrite(a.requests, optionsOf(a, 'requests')) },
  'collection.find': { needs: [Collection, 'find'], run: (c, a) => c.find(a.filter, optionsOf(a, 'filter')).toArray() },
  'collection.findOne': { needs: [Collection, 'findOne'], run: (c, a) => c.findOne(a.filter, optionsOf(a, 'filter')) },
  'collection.aggregate': { needs: [Collection, 'aggregate'], run: (c, a) => c.aggregate(a.pipeline, optionsOf(a, 'pipeline')).toArray() },
  'collection.countDocuments': {
    needs: [Collection, 'countDocuments'],
    run: (c, a) => c.countDocuments(a.filter, optionsOf(a, 'filter')),
  },
  'collection.count': { needs: [Collection, 'count'], run: (c, a) => c.count(a.filter, optionsOf(a, 'filter')) },
  'collection.estimatedDocumentCount': {
    needs: [Collection, 'estimatedDocumentCount'],
    run: (c, a) => c.estimatedDocumentCount(optionsOf(a)),
  },
  'collection.distinct': {
    needs: [Collection, 'distinct'],
    run: (c, a) => c.distinct(a.fieldName, a.filter, optionsOf(a, 'fieldName', 'filter')),
  },
  'collection.createFindCursor': {
    needs: [Collection, 'find'],
    // Spec "createFindCursor": the cursor is open (its first batch read) when the operation returns.
    run: async (c, a) => {
      const cursor = c.find(a.filter, optionsOf(a, 'filter'));
      await cursor.hasNext();
      return cursor;
    },
  },
  'collection.createIndex': { needs: [Collection, 'createIndex'], run: (c, a) => c.createIndex(a.keys, optionsOf(a, 'keys')) },
  'collection.dropIndex': { needs: [Collection, 'dropIndex'], run: (c, a) => c.dropIndex(a.name, optionsOf(a, 'name')) },
  'collection.dropIndexes': { needs: [Collection, 'dropIndexes'], run: (c, a) => c.dropIndexes(optionsOf(a)) },
  'collection.listIndexes': { needs: [Collection, 'listIndexes'], run: (c, a) => c.listIndexes(optionsOf(a)).toArray() },
  'collection.listIndexNames': {
    needs: [Collection, 'listIndexes'],
    run: async (c, a) => (await c.listIndexes(optionsOf(a)).toArray()).map(({ name }) => name),
  },
  'collection.rename': { needs: [Collection, 'rename'], run: (c, a) => c.rename(a.to, optionsOf(a, 'to')) },
  'collection.drop': { needs: [Collection, 'drop'], run: (c, a) => c.drop(optionsOf(a)) },
  'collection.createChangeStream': { needs: [Collection, 'watch'], run: (c, a) => openStream(c.watch(a.pipeline, optionsOf(a, 'pipeline'))) },
  'collection.createSearchIndex': {
    needs: [Collection, 'createSearchIndex'],
    run: (c, a) => c.createSearchIndex(a.model, optionsOf(a, 'model')),
  },
  'collection.createSearchIndexes': {
    needs: [Collection, 'createSearchIndexes'],
    run: (c, a) => c.createSearchIndexes(a.models, optionsOf(a, 'models')),
  },
  'collection.updateSearchIndex': {
    needs: [Collection, 'updateSearchIndex'],
    run: (c, a) => c.updateSearchIndex(a.name, a.definition),
  },
  'collection.dropSearchIndex': { needs: [Collection, 'dropSearchIndex'], run: (c, a) => c.dropSearchIndex(a.name) },
  'collection.listSearchIndexes': {
    needs: [Collection, 'listSearchIndexes'],
    run: (c, a) => c.listSearchIndexes(a.name, optionsOf(a, 'name')).toArray(),
  },
  // Database (spec "Database Operations"; Node: Db).
  'database.runCommand': { needs: [Db, 'command'], run: (d, a) => d.command(a.command, optionsOf(a, 'command', 'commandName')) },
  'database.aggregate': { needs: [Db, 'aggregate'], run: (d, a) => d.aggregate(a.pipeline, optionsOf(a, 'pipeline')).toArray() },
  'database.listCollections': {
    needs: [Db, 'listCollections'],
    run: (d, a) => d.listCollections(a.filter, optionsOf(a, 'filter')).toArray(),
  },
  'database.listCollectionNames': {
    needs: [Db, 'listCollections'],
    run: async (d, a) => (await d.listCollections(a.filter, { ...optionsOf(a, 'filter'), nameOnly: true }).toArray()).map(({ name }) => name),
  },
  // The Node driver's name for the collections as objects.
  'database.listCollectionObjects': { needs: [Db, 'collections'], run: (d, a) => d.collections(optionsOf(a, 'filter')) },
  'database.createCollection': {
    needs: [Db, 'createCollection'],
    run: (d, a) => d.createCollection(a.collection, optionsOf(a, 'collection')),
  },
  'database.dropCollection': {
    needs: [Db, 'dropCollection'],
    run: (d, a) => d.dropCollection(a.collection, optionsOf(a, 'collection')),
  },
  'database.dropDatabase': { needs: [Db, 'dropDatabase'], run: (d, a) => d.dropDatabase(optionsOf(a)) },
  'database.runCursorCommand': { needs: [Db, 'runCursorCommand'], run: (d, a) => runCursorCommand(d, a).toArray() },
  'database.createCommandCursor': {
    needs: [Db, 'runCursorCommand'],
    run: async (d, a) => {
      const cursor = runCursorCommand(d, a);
      await cursor.hasNext();
      return cursor;
    },
  },
  'database.createChangeStream': { needs: [Db, 'watch'], run: (d, a) => openStream(d.watch(a.pipeline, optionsOf(a, 'pipeline'))) },
  // Client (spec "Client Operations"; Node: MongoClient).
  'client.listDatabases': {
    needs: [api.Admin, 'listDatabases', 'Admin'],
    run: async (c, a) => (await c.client.db('admin').admin().listDatabases(optionsOf(a))).databases,
  },
  'client.listDatabaseNames': {
    needs: [api.Admin, 'listDatabases', 'Admin'],
    run: async (c, a) => (await c.client.db('admin').admin().listDatabases(optionsOf(a))).databases.map(({ name }) => name),
  },
  // The Node driver has no database objects listing: its listDatabases, each as client.db(name).
  'client.listDatabaseObjects': {
    needs: [api.Admin, 'listDatabases', 'Admin'],
    run: async (c, a) => (await c.client.db('admin').admin().listDatabases(optionsOf(a))).databases.map(({ name }) => c.client.db(name)),
  },
  'client.createChangeStream': {
    needs: [MongoClient, 'watch'],
    run: (c, a) => openStream(c.client.watch(a.pipeline, optionsOf(a, 'pipeline'))),
  },
  'client.clientBulkWrite': {
    needs: [MongoClient, 'bulkWrite'],
    // The spec's `{ insertOne: { namespace, document } }` is the Node driver's
    // `{ name: 'insertOne', namespace, document }`.
    run: async (c, a) => specClientBulkWriteResult(await c.client.bulkWrite(a.models.map(clientBulkWriteModel), optionsOf(a, 'models'))),
  },
  'client.close': { needs: [MongoClient, 'close'], run: (c) => c.client.close() },
  // Sessions (spec "Session Operations"; Node: ClientSession).
  'session.startTransaction': { run: (s, a) => s.startTransaction(optionsOf(a)) },
  'session.commitTransaction': { run: (s) => s.commitTransaction() },
  'session.abortTransaction': { run: (s) => s.abortTransaction() },
  'session.endSession': { run: (s) => s.endSession() },
  // anymongo's own tests (tests/data/test/sessions): the Node driver keeps its
  // snapshotTime internal; the package exposes it.
  'session.getSnapshotTime': { run: (s) => s.snapshotTime ?? null },
  'session.withTransaction': {
    run: (s, a, context) =>
      s.withTransaction(async () => {
        // Spec "withTransaction": the callback's errors reach withTransaction, whatever
        // their expectError or ignoreResultAndError.
        for (const operation of a.callback) await runOperation(operation, context, { propagate: true });
      }, optionsOf(a, 'callback')),
  },
  // GridFS buckets (spec "Bucket Operations"; Node: GridFSBucket, with streams).
  'bucket.upload': {
    run: (b, a) =>
      new Promise((resolve, reject) => {
        const stream = b.openUploadStream(a.filename, optionsOf(a, 'filename', 'source'));
        stream.once('error', reject);
        stream.once('finish', () => resolve(stream.id));
        stream.end(a.source);
      }),
  },
  'bucket.download': { run: (b, a) => collect(b.openDownloadStream(a.id)) },
  'bucket.downloadByName': { run: (b, a) => collect(b.openDownloadStreamByName(a.filename, optionsOf(a, 'filename'))) },
  'bucket.delete': { run: (b, a) => b.delete(a.id) },
  // Not in the Node driver's GridFSBucket (7.x): run when the package adds them.
  'bucket.deleteByName': { needs: [api.GridFSBucket, 'deleteByName', 'GridFSBucket'], run: (b, a) => b.deleteByName(a.filename) },
  'bucket.renameByName': {
    needs: [api.GridFSBucket, 'renameByName', 'GridFSBucket'],
    run: (b, a) => b.renameByName(a.filename, a.newFilename),
  },
  'bucket.drop': { run: (b) => b.drop() },
  'bucket.rename': { run: (b, a) => b.rename(a.id, a.newFilename) },
  'bucket.find': { run: (b, a) => b.find(a.filter, optionsOf(a, 'filter')).toArray() },
  // Cursors and change streams (spec "Cursor Operations", "ChangeStream").
  'cursor.iterateUntilDocumentOrError': { run: (c) => c.next() },
  'cursor.iterateOnce': {
    run: (c) => {
      if (typeof c.tryNext !== 'function') throw new Skip(`${NO_API}FindCursor.tryNext (iterateOnce)`);
      return c.tryNext();
    },
  },
  'cursor.close': { run: (c) => c.close() },
  'changeStream.iterateUntilDocumentOrError': { run: (c) => c.next() },
  'changeStream.iterateOnce': { run: (c) => c.tryNext() },
  'changeStream.close': { run: (c) => c.close() },
};

/**
 * A client bulk write result with the spec's per-operation update results
 * (`matchedCount`, `modifiedCount`, `upsertedId`): the Node driver's also carry
 * `didUpsert`, which a nested document of the test's expectations may not have.
 */
function specClientBulkWriteResult(result) {
  if (!(result?.updateResults instanceof Map)) return result;
  const updateResults = new Map();
  for (const [index, { didUpsert: _didUpsert, ...update }] of result.updateResults) updateResults.set(index, update);
  return Object.assign(Object.create(Object.getPrototypeOf(result)), result, { updateResults });
}

/**
 * `db.runCursorCommand`, whose getMore options the Node driver sets on the cursor
 * (setBatchSize, setMaxTimeMS, setComment) rather than in the options.
 */
function runCursorCommand(db, a) {
  const { batchSize, maxTimeMS, comment, ...options } = optionsOf(a, 'command', 'commandName');
  const cursor = db.runCursorCommand(a.command, options);
  for (const [setter, value] of [['setBatchSize', batchSize], ['setMaxTimeMS', maxTimeMS], ['setComment', comment]]) {
    if (value === undefined) continue;
    if (typeof cursor[setter] !== 'function') throw new Skip(`${NO_API}RunCommandCursor.${setter}`);
    cursor[setter](value);
  }
  return cursor;
}

function clientBulkWriteModel(model) {
  const [name] = Object.keys(model);
  return { name, ...model[name] };
}

/**
 * A change stream, opened as the spec's createChangeStream asks: the aggregate is sent
 * when the operation runs (its error is the operation's, and the stream sees the
 * changes made after it). The Node driver's `watch()`, as the package's, sends it at
 * the first read; the package's internal `_open()` sends only the aggregate (as the
 * Node driver's own runner calls a private cursor method). Without it, the runner
 * reads once (`tryNext`, which may also send a getMore) and keeps what it read for the
 * first iteration.
 */
class OpenedChangeStream {
  #buffered = null;

  constructor(stream) {
    this.stream = stream;
  }

  async open() {
    if (typeof this.stream._open === 'function') {
      await this.stream._open();
    } else {
      this.#buffered = await this.stream.tryNext();
    }
    return this;
  }

  /** iterateUntilDocumentOrError. */
  async next() {
    const buffered = this.#buffered;
    this.#buffered = null;
    return buffered ?? this.stream.next();
  }

  /** iterateOnce. */
  async tryNext() {
    const buffered = this.#buffered;
    this.#buffered = null;
    return buffered ?? this.stream.tryNext();
  }

  close() {
    return this.stream.close();
  }
}

function openStream(stream) {
  return new OpenedChangeStream(stream).open();
}

/**
 * The arguments each operation requires (spec "Entity Test Operations"): a test that
 * leaves one out is malformed and fails (the valid-fail files
 * entity-findCursor-malformed and ignoreResultAndError-malformed), rather than reaching
 * the API with `undefined`.
 */
const REQUIRED = {
  insertOne: ['document'],
  insertMany: ['documents'],
  updateOne: ['filter', 'update'],
  updateMany: ['filter', 'update'],
  replaceOne: ['filter', 'replacement'],
  deleteOne: ['filter'],
  deleteMany: ['filter'],
  findOneAndUpdate: ['filter', 'update'],
  findOneAndReplace: ['filter', 'replacement'],
  findOneAndDelete: ['filter'],
  bulkWrite: ['requests'],
  find: ['filter'],
  createFindCursor: ['filter'],
  aggregate: ['pipeline'],
  distinct: ['fieldName', 'filter'],
  createIndex: ['keys'],
  dropIndex: ['name'],
  runCommand: ['command', 'commandName'],
  runCursorCommand: ['command'],
  createCommandCursor: ['command'],
  createCollection: ['collection'],
  dropCollection: ['collection'],
  rename: ['to'],
  createChangeStream: ['pipeline'],
  clientBulkWrite: ['models'],
  withTransaction: ['callback'],
};

/** Fails if `operation` lacks an argument its kind requires. */
function checkRequired(operation, kind) {
  if (kind === 'bucket' || kind === 'client') return;
  for (const name of REQUIRED[operation.name] ?? []) {
    if (operation.arguments?.[name] === undefined) throw new Failure(`${operation.name} needs the argument ${name}`);
  }
}

/** Every chunk of a readable stream, as one Buffer. */
async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The operations that make an entity of their result (cursor, change stream), closed after the test. */
const MAKES_ENTITY = { createFindCursor: 'cursor', createCommandCursor: 'cursor', createChangeStream: 'changeStream' };

/** The kind of entity `saveResultAsEntity` makes of an operation's result. */
function savedKind(name) {
  return MAKES_ENTITY[name] ?? (name === 'createCollection' ? 'collection' : 'value');
}

/** Operations the runner does not implement, with why. */
const NOT_IMPLEMENTED = {
  mapReduce: 'mapReduce: the Node driver (7.x) has no Collection.mapReduce',
  modifyCollection: 'modifyCollection: the Node driver has no such method',
  loop: 'loop: only for the Atlas workload executor (astrolabe)',
  assertTopologyType: 'assertTopologyType: the npm package has no topology description API',
  recordTopologyDescription: 'recordTopologyDescription: the npm package has no topology description API',
  waitForPrimaryChange: 'waitForPrimaryChange: the npm package has no topology description API',
  appendMetadata: 'appendMetadata: the npm package has no MongoClient.appendMetadata',
  encrypt: 'client-side encryption',
  decrypt: 'client-side encryption',
};

/**
 * Why the operations of `test` (and those of `withTransaction` callbacks) cannot run,
 * or null; `kinds` maps entity ids to their kinds.
 */
function missingOperationApi(operations, kinds) {
  for (const operation of operations) {
    const why = missingForOperation(operation, kinds);
    if (why) return why;
  }
  return null;
}

function missingForOperation(operation, kinds) {
  const { name, object } = operation;
  if (NOT_IMPLEMENTED[name]) return `${RUNNER}${NOT_IMPLEMENTED[name]}`;
  if (object === 'testRunner') {
    const special = SPECIAL[name];
    if (!special) return `${RUNNER}special operation ${name}`;
    if (name === 'createEntities') {
      for (const description of operation.arguments.entities) {
        const missing = missingEntityApi(entityKind(description), description[entityKind(description)]);
        if (missing) return `${NO_API}${missing}`;
      }
    }
    if (special.events && !hasMethod(MongoClient, 'on')) return `${NO_API}MongoClient.on (events: ${name})`;
    if (name === 'runOnThread') return missingForOperation(operation.arguments.operation, kinds);
    return null;
  }
  const kind = kinds.get(object);
  if (kind === undefined) return null; // an unknown entity fails the test when it runs
  const entry = OPERATIONS[`${kind}.${name}`];
  if (!entry) return `${RUNNER}operation ${name} on a ${kind}`;
  if (entry.needs && !hasMethod(entry.needs[0], entry.needs[1])) {
    return `${NO_API}${entry.needs[2] ?? entry.needs[0]?.name}.${entry.needs[1]} (${name})`;
  }
  if (name === 'withTransaction') return missingOperationApi(operation.arguments.callback, kinds);
  return null;
}

/** The kind of each entity a test may use: from createEntities (the file's and the test's) and saveResultAsEntity. */
function entityKinds(file, test) {
  const kinds = new Map();
  const add = (descriptions) => {
    for (const description of descriptions ?? []) {
      const kind = entityKind(description);
      kinds.set(description[kind].id, kind);
    }
  };
  add(file.createEntities);
  const visit = (operations) => {
    for (const operation of operations ?? []) {
      if (operation.name === 'createEntities') add(operation.arguments.entities);
      if (operation.saveResultAsEntity) kinds.set(operation.saveResultAsEntity, savedKind(operation.name));
      if (operation.name === 'withTransaction') visit(operation.arguments.callback);
      if (operation.name === 'runOnThread') visit([operation.arguments.operation]);
    }
  };
  visit(test.operations);
  return kinds;
}

/** The test runner's own operations (spec "Special Test Operations"); `events`: they need the package's events. */
const SPECIAL = {
  failPoint: {
    run: async (a, context) => {
      const { client } = context.entities.get(a.client, 'client');
      await client.db('admin').command(a.failPoint);
      noteFailPoint(a.failPoint, context);
    },
  },
  targetedFailPoint: {
    run: async (a, context) => {
      // Spec: set on the mongos the session is pinned to; on a replica set, on its primary.
      const session = context.entities.get(a.session, 'session');
      const client = session.client ?? [...context.clients][0];
      await client.db('admin').command(a.failPoint);
      noteFailPoint(a.failPoint, context);
    },
  },
  assertSessionTransactionState: {
    run: async (a, context) => {
      const session = context.entities.get(a.session, 'session');
      const names = {
        NO_TRANSACTION: 'none',
        STARTING_TRANSACTION: 'starting',
        TRANSACTION_IN_PROGRESS: 'in_progress',
        TRANSACTION_COMMITTED: 'committed',
        TRANSACTION_COMMITTED_EMPTY: 'committed',
        TRANSACTION_ABORTED: 'aborted',
      };
      const state = names[session.transaction?.state] ?? session.transaction?.state;
      if (state !== a.state) throw new Failure(`the session's transaction state is ${state}, expected ${a.state}`);
    },
  },
  assertSessionPinned: { run: (a, context) => assertPinned(a, context, true) },
  assertSessionUnpinned: { run: (a, context) => assertPinned(a, context, false) },
  assertSessionDirty: { run: (a, context) => assertDirty(a, context, true) },
  assertSessionNotDirty: { run: (a, context) => assertDirty(a, context, false) },
  assertSameLsidOnLastTwoCommands: { events: true, run: (a, context) => assertLsids(a, context, true) },
  assertDifferentLsidOnLastTwoCommands: { events: true, run: (a, context) => assertLsids(a, context, false) },
  assertCollectionExists: { run: (a, context) => assertCollection(a, context, true) },
  assertCollectionNotExists: { run: (a, context) => assertCollection(a, context, false) },
  assertIndexExists: { run: (a, context) => assertIndex(a, context, true) },
  assertIndexNotExists: { run: (a, context) => assertIndex(a, context, false) },
  createEntities: {
    run: async (a, context) => {
      for (const description of a.entities) await createEntity(description, context);
    },
  },
  wait: { run: (a) => delay(Number(a.ms)) },
  waitForEvent: {
    events: true,
    run: async (a, context) => {
      const { recorder } = context.entities.get(a.client, 'client');
      const count = Number(a.count);
      const deadline = Date.now() + TEST_TIMEOUT_MS;
      while (recorder.count(a.event, context.matcher) < count) {
        if (Date.now() > deadline) throw new Failure(`waitForEvent: fewer than ${count} ${show(a.event)} events`);
        await delay(10);
      }
    },
  },
  assertEventCount: {
    events: true,
    run: async (a, context) => {
      const { recorder } = context.entities.get(a.client, 'client');
      const count = recorder.count(a.event, context.matcher);
      if (count !== Number(a.count)) throw new Failure(`assertEventCount: ${count} ${show(a.event)} events, expected ${a.count}`);
    },
  },
  assertNumberConnectionsCheckedOut: {
    events: true,
    run: async (a, context) => {
      const { recorder } = context.entities.get(a.client, 'client');
      const out = recorder.checkedOut();
      if (out !== Number(a.connections)) throw new Failure(`${out} connections checked out, expected ${a.connections}`);
    },
  },
  runOnThread: {
    run: async (a, context) => {
      const thread = context.entities.get(a.thread, 'thread');
      thread.chain = thread.chain.then(async () => {
        if (thread.error) return;
        try {
          await runOperation(a.operation, context);
        } catch (error) {
          thread.error = error;
        }
      });
    },
  },
  waitForThread: {
    run: async (a, context) => {
      const thread = context.entities.get(a.thread, 'thread');
      await thread.chain;
      if (thread.error) throw thread.error;
    },
  },
};

/** Keeps a fail point's name to turn it off after the test, and how long its blockConnection holds a command. */
function noteFailPoint(failPoint, context) {
  context.failPoints.add(failPoint.configureFailPoint);
  const block = failPoint.data?.blockConnection ? Number(failPoint.data.blockTimeMS ?? 0) : 0;
  context.longestBlock = Math.max(context.longestBlock, block);
}

function assertPinned(a, context, pinned) {
  const session = context.entities.get(a.session, 'session');
  if (Boolean(session.isPinned) !== pinned) throw new Failure(`the session is ${pinned ? 'not ' : ''}pinned`);
}

function assertDirty(a, context, dirty) {
  const session = context.entities.get(a.session, 'session');
  const actual = Boolean(session.serverSession?.isDirty);
  if (actual !== dirty) throw new Failure(`the session is ${dirty ? 'not ' : ''}dirty`);
}

function assertLsids(a, context, same) {
  const { recorder } = context.entities.get(a.client, 'client');
  const started = recorder.events.filter(({ name }) => name === 'commandStartedEvent');
  if (started.length < 2) throw new Failure(`fewer than two commandStartedEvents (${started.length})`);
  const [x, y] = started.slice(-2).map(({ event }) => event.command?.lsid);
  if (exactlyEqual(x, y) !== same) throw new Failure(`the last two commands' lsids are ${same ? 'different' : 'the same'}: ${show(x)}, ${show(y)}`);
}

async function assertCollection(a, context, exists) {
  const names = (await context.internal.db(a.databaseName).listCollections({}, { nameOnly: true }).toArray()).map(({ name }) => name);
  if (names.includes(a.collectionName) !== exists) {
    throw new Failure(`collection ${a.databaseName}.${a.collectionName} ${exists ? 'does not exist' : 'exists'}`);
  }
}

async function assertIndex(a, context, exists) {
  let names = [];
  try {
    names = (await context.internal.db(a.databaseName).collection(a.collectionName).listIndexes().toArray()).map(({ name }) => name);
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === 26)) throw error;
  }
  if (names.includes(a.indexName) !== exists) {
    throw new Failure(`index ${a.indexName} of ${a.databaseName}.${a.collectionName} ${exists ? 'does not exist' : 'exists'}`);
  }
}

/**
 * Runs one operation and checks what it returned (spec "Executing an Operation");
 * with `propagate` (a withTransaction callback's), its error is thrown on after the
 * checks.
 */
export async function runOperation(operation, context, { propagate = false } = {}) {
  const { entities } = context;
  if (operation.object === 'testRunner') {
    const special = SPECIAL[operation.name];
    if (!special) throw new Skip(`${RUNNER}special operation ${operation.name}`);
    // Special operations name their entities (session, client) by id.
    await special.run(operation.arguments ?? {}, context);
    return;
  }
  const args = resolveArguments(operation.arguments, entities);
  let result;
  let error = null;
  const kind = entities.kind(operation.object);
  if (kind === undefined) throw new Failure(`no entity ${operation.object}`);
  const entry = OPERATIONS[`${kind}.${operation.name}`];
  if (!entry) throw new Skip(`${RUNNER}operation ${operation.name} on a ${kind}`);
  checkRequired(operation, kind);
  const target = entities.get(operation.object);
  const sessions = [args.session, kind === 'session' ? target : null].filter(Boolean);
  entities.noteLsids(sessions);
  try {
    result = await entry.run(target, args, context);
  } catch (thrown) {
    if (thrown instanceof Skip || thrown instanceof Failure) throw thrown;
    error = thrown;
  } finally {
    entities.noteLsids(sessions);
  }
  if (operation.ignoreResultAndError) {
    if (error && propagate) throw error;
    return;
  }
  const { matcher } = context;
  if (error) {
    if (!operation.expectError) {
      if (propagate) throw error;
      throw new Failure(`unexpected error: ${describeError(error)}`);
    }
    checkError(operation.expectError, error, matcher);
    if (propagate) throw error;
    return;
  }
  if (operation.expectError) throw new Failure(`expected an error, got ${show(result)}`);
  if (operation.expectResult !== undefined) {
    wrapMatch(() => {
      if (ITERATED.has(operation.name)) matcher.iterated(operation.expectResult, result);
      else matcher.root(operation.expectResult, result);
    }, 'expectResult');
  }
  // Cursors and change streams are closed after the test, saved or not.
  if (MAKES_ENTITY[operation.name]) context.iterables.push(result);
  if (operation.saveResultAsEntity) {
    entities.set(operation.saveResultAsEntity, savedKind(operation.name), result);
  }
}

function wrapMatch(match, place) {
  try {
    match();
  } catch (error) {
    if (error instanceof MatchError) throw new Failure(`${place}: ${error.message}`);
    throw error;
  }
}

export function describeError(error) {
  const code = error?.code !== undefined ? ` (code ${error.code}${error.codeName ? ` ${error.codeName}` : ''})` : '';
  return `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}${code}`;
}

/** Checks `error` against `expectError` (spec "expectedError"). */
export function checkError(expected, error, matcher) {
  const fail = (why) => {
    throw new Failure(`expectError: ${why}; the error: ${describeError(error)}`);
  };
  // Spec: a server error comes from the server's reply; every other error (validation,
  // network) is the client's.
  const fromServer = error instanceof MongoServerError;
  if (expected.isClientError !== undefined && expected.isClientError === fromServer) {
    fail(expected.isClientError ? 'expected a client error' : 'expected a server error');
  }
  if (expected.isTimeoutError !== undefined && expected.isTimeoutError !== error instanceof MongoOperationTimeoutError) {
    fail(expected.isTimeoutError ? 'expected a timeout error' : 'expected no timeout error');
  }
  if (expected.errorContains !== undefined && !String(error?.message).toLowerCase().includes(expected.errorContains.toLowerCase())) {
    fail(`the message does not contain ${JSON.stringify(expected.errorContains)}`);
  }
  if (expected.errorCode !== undefined) {
    if (!fromServer) fail(`expected a server error with code ${expected.errorCode}`);
    if (Number(error.code) !== Number(expected.errorCode)) fail(`expected the code ${expected.errorCode}`);
  }
  if (expected.errorCodeName !== undefined) {
    if (!fromServer) fail(`expected a server error named ${expected.errorCodeName}`);
    if (error.codeName !== expected.errorCodeName) fail(`expected the code name ${expected.errorCodeName}`);
  }
  const labels = Array.isArray(error?.errorLabels) ? error.errorLabels : [];
  for (const label of expected.errorLabelsContain ?? []) {
    if (!labels.includes(label)) fail(`expected the label ${label} (labels: ${JSON.stringify(labels)})`);
  }
  for (const label of expected.errorLabelsOmit ?? []) {
    if (labels.includes(label)) fail(`expected no label ${label}`);
  }
  if (expected.errorResponse !== undefined) {
    wrapMatch(() => matcher.root(expected.errorResponse, error.errorResponse), 'expectError.errorResponse');
  }
  // Spec "expectedError": writeErrors at the same indexes, writeConcernErrors as many,
  // each matched as a root-level document.
  if (expected.writeErrors !== undefined) {
    const actual = error.writeErrors instanceof Map ? Object.fromEntries(error.writeErrors) : (error.writeErrors ?? {});
    const indexes = (errors) => Object.keys(errors).sort().join(', ');
    if (indexes(expected.writeErrors) !== indexes(actual)) {
      fail(`expected write errors at [${indexes(expected.writeErrors)}], got [${indexes(actual)}]`);
    }
    for (const [index, writeError] of Object.entries(expected.writeErrors)) {
      wrapMatch(() => matcher.root(writeError, actual[index]), `expectError.writeErrors.${index}`);
    }
  }
  if (expected.writeConcernErrors !== undefined) {
    const actual = error.writeConcernErrors ?? [];
    if (actual.length !== expected.writeConcernErrors.length) {
      fail(`expected ${expected.writeConcernErrors.length} write concern errors, got ${actual.length}`);
    }
    expected.writeConcernErrors.forEach((writeConcernError, i) => {
      wrapMatch(() => matcher.root(writeConcernError, actual[i]), `expectError.writeConcernErrors.${i}`);
    });
  }
  // Spec: the result the error carries (a bulk write's partial result); absent is
  // accepted only by $$unsetOrMatches.
  if (expected.expectResult !== undefined) {
    const partial = error.result ?? specClientBulkWriteResult(error.partialResult);
    wrapMatch(() => matcher.root(expected.expectResult, partial), 'expectError.expectResult');
  }
}

// --- Collections -------------------------------------------------------------------

/** `initialData` (spec "Executing a Test"): each collection dropped, created, filled, with a majority write concern. */
async function setUpCollections(internal, collections) {
  for (const data of collections ?? []) {
    const db = internal.db(data.databaseName);
    await db.command({ drop: data.collectionName, writeConcern: { w: 'majority' } }).catch((error) => {
      if (!(error instanceof MongoServerError && error.code === 26)) throw error;
    });
    if (data.createOptions || data.documents.length === 0) {
      await db.command({ create: data.collectionName, ...data.createOptions, writeConcern: { w: 'majority' } });
    }
    if (data.documents.length > 0) {
      await db.command({ insert: data.collectionName, documents: data.documents, writeConcern: { w: 'majority' } });
    }
  }
}

/** `outcome`: each collection holds exactly the expected documents, read by `_id` from the primary. */
async function checkOutcome(internal, collections) {
  for (const data of collections) {
    const namespace = `${data.databaseName}.${data.collectionName}`;
    const actual = await internal
      .db(data.databaseName)
      .collection(data.collectionName)
      .find({}, { sort: { _id: 1 } })
      .toArray();
    if (actual.length !== data.documents.length) {
      throw new Failure(`outcome: ${namespace} holds ${actual.length} documents, expected ${data.documents.length}: ${show(actual)}`);
    }
    data.documents.forEach((expected, i) => {
      if (!exactlyEqual(expected, actual[i])) throw new Failure(`outcome: ${namespace}: expected ${show(expected)}, found ${show(actual[i])}`);
    });
  }
}

// --- Tests -------------------------------------------------------------------------

/** Why `test` of `file` is not run, decided without touching the server; null to run it. */
export function whySkipped(file, test, { suite, name, info }) {
  if (test.skipReason) return `skipReason: ${test.skipReason}`;
  const unmet = unmetRequirements(file.runOnRequirements, info) ?? unmetRequirements(test.runOnRequirements, info);
  if (unmet) return `${UNMET}${unmet}`;
  const gap = knownGap(suite, name, test.description);
  if (gap) return gap;
  for (const description of file.createEntities ?? []) {
    const kind = entityKind(description);
    const missing = missingEntityApi(kind, description[kind]);
    if (missing) return `${NO_API}${missing}`;
  }
  if (test.expectEvents && !hasMethod(MongoClient, 'on')) return `${NO_API}MongoClient.on (events: expectEvents)`;
  if (test.expectLogMessages) return `${NO_API}logger (expectLogMessages)`;
  return missingOperationApi(test.operations, entityKinds(file, test));
}

/** Runs `promise` but fails with `why` after `ms`. */
async function bounded(promise, ms, why) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(why)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs one test (spec "Executing a Test"): resolves to { verdict: 'passed' | 'failed' | 'skipped', why }. */
export async function runTest(file, test, deployment, { timeoutMS = TEST_TIMEOUT_MS } = {}) {
  const entities = new Entities();
  const context = {
    entities,
    matcher: new Matcher(entities),
    uri: deployment.uri,
    multiUri: deployment.multiUri ?? deployment.uri,
    internal: deployment.internal,
    clients: [],
    iterables: [],
    failPoints: new Set(),
    longestBlock: 0,
    setsFailPoints: setsFailPoints(test),
  };
  let outcome;
  try {
    await bounded(runBody(file, test, context, deployment), timeoutMS, `the test did not finish within ${timeoutMS} ms`);
    outcome = { verdict: 'passed' };
  } catch (error) {
    if (error instanceof Skip) outcome = { verdict: 'skipped', why: error.message };
    else if (error instanceof Failure) outcome = { verdict: 'failed', why: error.message };
    else outcome = { verdict: 'failed', why: `unexpected error: ${describeError(error)}` };
  }
  // Spec "Disabling Fail Points", through the internal client, however the test ended.
  for (const name of context.failPoints) {
    try {
      await bounded(deployment.internal.db('admin').command({ configureFailPoint: name, mode: 'off' }), 10_000, 'timed out');
    } catch (error) {
      if (outcome.verdict !== 'failed') outcome = { verdict: 'failed', why: `turning the fail point ${name} off: ${describeError(error)}` };
    }
  }
  // A command a blockConnection fail point held goes on after the driver gave up on it:
  // waited out (at most a second, as the Rust runner does) so that its writes land
  // before the next test's initial data.
  if (context.longestBlock > 0) await delay(Math.min(context.longestBlock, 1000));
  await closeAll(context);
  return outcome;
}

async function runBody(file, test, context, deployment) {
  // Spec "Terminating Open Transactions": a transaction a previous test left open could
  // block this one. Interrupted (11601) and Unauthorized (13) may be ignored; any
  // failure is, since a server without the command has no transactions to kill.
  await deployment.internal
    .db('admin')
    .command({ killAllSessions: [] })
    .catch(() => {});
  await setUpCollections(deployment.internal, file.initialData);
  for (const description of file.createEntities ?? []) await createEntity(description, context);
  const operations = async () => {
    for (const [i, operation] of test.operations.entries()) {
      try {
        await runOperation(operation, context);
      } catch (error) {
        if (error instanceof Skip) throw error;
        const why = error instanceof Failure ? error.message : `unexpected error: ${describeError(error)}`;
        throw new Failure(`operation ${i} (${operation.name}): ${why}`);
      }
    }
  };
  // A test that expects spans runs its operations in a span of its own (tracing.js).
  const spans = test.expectTracingMessages ? await collectSpans(operations) : await operations();
  // Spec "Disabling Fail Points" comes after the outcome is read in the spec's order
  // too, but a fail point on find would break reading it: turned off first.
  for (const name of context.failPoints) {
    await deployment.internal.db('admin').command({ configureFailPoint: name, mode: 'off' });
  }
  context.failPoints.clear();
  for (const expected of test.expectEvents ?? []) {
    const { recorder } = context.entities.get(expected.client, 'client');
    wrapMatch(() => matchEvents(expected, recorder, context.matcher), `expectEvents (${expected.client})`);
  }
  for (const expected of test.expectTracingMessages ?? []) matchSpans(expected, spans, context.matcher);
  if (test.outcome) await checkOutcome(deployment.internal, test.outcome);
}

/** Closes the cursors, change streams, sessions and clients of a test, each bounded. */
async function closeAll(context) {
  const closing = [
    ...context.iterables.map((iterable) => () => iterable.close?.()),
    ...context.entities
      .values()
      .filter(({ kind }) => kind === 'session')
      .map(({ value }) => () => value.endSession?.()),
    ...context.clients.map((client) => () => client.close()),
  ];
  for (const close of closing) {
    try {
      await bounded(Promise.resolve().then(close), CLOSE_TIMEOUT_MS, 'close timed out');
    } catch {
      // Closing is best effort: a client that does not close in time is left to the
      // process's end, which run.js bounds.
    }
  }
}

/**
 * Runs every test of the unified files under `dir`; `suite` names the folder for the
 * gap table. Resolves to { passed, failed: [{ file, test, why }], skipped: [...] }.
 * With `expectFailure` (the spec's valid-fail files), a test passes when the runner
 * fails or refuses it, and fails when the runner passes it.
 */
export async function runDirectory(dir, suite, deployments, { expectFailure = false, onTest = () => {}, timeoutMS } = {}) {
  // Each test runs against the first deployment that meets its requirements (a suite
  // may have tests for a load balancer and tests for a standalone server).
  deployments = [deployments].flat();
  const result = { passed: 0, failed: [], skipped: [] };
  let files;
  try {
    files = jsonFiles(dir);
  } catch (error) {
    result.failed.push({ file: dir, test: '', why: `cannot list the folder: ${error.message}` });
    return result;
  }
  for (const name of files) {
    let file;
    try {
      file = readTestFile(currentVersion(path.join(dir, name)));
      if (typeof file.schemaVersion !== 'string' || !Array.isArray(file.tests)) throw new Error('not a unified test file');
    } catch (error) {
      if (expectFailure) result.passed += 1;
      else result.failed.push({ file: name, test: '', why: `cannot read the file: ${error.message}` });
      continue;
    }
    for (const test of file.tests) {
      let outcome;
      if (!schemaSupported(file.schemaVersion)) {
        // Spec "Executing a Test File": an incompatible file is not processed.
        outcome = { verdict: 'skipped', why: `schemaVersion ${file.schemaVersion} is newer than the runner's ${SCHEMA_VERSION.join('.')}`, refused: true };
      } else {
        const reasons = deployments.map((deployment) => whySkipped(file, test, { suite, name, info: deployment.info }));
        const deployment = deployments[reasons.indexOf(null)];
        outcome = deployment ? await runTest(file, test, deployment, { timeoutMS }) : { verdict: 'skipped', why: reasons[0] };
      }
      if (expectFailure) outcome = asExpectingFailure(outcome);
      const record = { file: name, test: test.description, why: outcome.why };
      if (outcome.verdict === 'passed') result.passed += 1;
      else if (outcome.verdict === 'failed') result.failed.push(record);
      else result.skipped.push(record);
      onTest(record, outcome.verdict);
    }
  }
  return result;
}

/**
 * What a verdict counts as for a file written to fail (spec "Test Runner Support": a
 * runner MUST fail each valid-fail test): its failure or a refusal passes; passing
 * fails; a test whose requirements are unmet stays skipped.
 */
function asExpectingFailure(outcome) {
  if (outcome.verdict === 'failed') return { verdict: 'passed' };
  if (outcome.verdict === 'passed') return { verdict: 'failed', why: 'the runner passed a test written to fail' };
  return outcome;
}
