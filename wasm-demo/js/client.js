// The public API, shaped like the official Node.js driver's (MongoClient, Db,
// Collection, cursors), over the WebAssembly core. Runtime-agnostic: the entry point
// of each runtime (node.js, deno.js, workers.js) loads the module and names the
// transport, then re-exports this file.
//
// Documents cross the boundary as BSON, serialized and parsed by the `bson` package,
// so values map exactly as with the Node.js driver (ObjectId, Long, Decimal128,
// Binary, Date, Timestamp...).
import { BSON, ObjectId } from 'bson';
import {
  MongoAPIError,
  MongoBatchReExecutionError,
  MongoBulkWriteError,
  MongoCompatibilityError,
  MongoCursorInUseError,
  MongoInvalidArgumentError,
  MongoParseError,
  MongoServerError,
} from './errors.js';
import { BSON_OPTION_NAMES, deserializeOptions, resolveBSONOptions, serializeOptions } from './bson_options.js';
import { Topology } from './topology.js';
import { toError } from './error_documents.js';
import { EventEmitter } from './events.js';
import { host as entryPoint } from './host.js';
import { eventSink } from './monitoring.js';
import { BulkWriteResult, bulkResult, ClientBulkWriteResult } from './results.js';
import {
  concernParameters,
  concernsOf,
  ReadConcern,
  readConcernDocument,
  ReadPreference,
  readPreferenceDocument,
  WriteConcern,
  writeConcernDocument,
} from './concerns.js';
import { GridFSBucket } from './gridfs.js';
import { spanSink, tracingOptions } from './tracing.js';
import { ChangeStream, ClientSession } from './session.js';

export {
  Binary,
  BSON,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
} from 'bson';
export * from './errors.js';
export * from './events.js';
export { ChangeStream, ClientSession } from './session.js';
export { GridFSBucket } from './gridfs.js';
export { ReadConcern, ReadPreference, WriteConcern } from './concerns.js';
export { BulkWriteResult, ClientBulkWriteResult, WriteConcernError } from './results.js';
export { ServerDescription, Topology, TopologyDescription } from './topology.js';
export { dnsOverHttps } from './doh.js';

// Options of MongoClient that are not connection string options: this package's own
// (`transport`, `backgroundMonitoring`), those the glue or the core take in code
// (`codeOptions`), and the Node driver's object-only options.
const CLIENT_ONLY = new Set([
  'transport',
  'backgroundMonitoring',
  'auth',
  'monitorCommands',
  'serverApi',
  'driverInfo',
  'tracing',
  'pkFactory',
  'dbName',
  'checkKeys',
  'forceServerObjectId',
  ...BSON_OPTION_NAMES,
]);
// The Node driver's options that configure what this package has no counterpart of
// (its Node.js sockets and TLS contexts, its logger, its internals): accepted, as
// there, with no effect here. The TLS ones fail closed: a deployment that needs the
// certificate they name is refused, not reached without it.
const NO_EFFECT = new Set([
  'family',
  'autoSelectFamily',
  'autoSelectFamilyAttemptTimeout',
  'noDelay',
  'keepAliveInitialDelay',
  'localAddress',
  'localPort',
  'hints',
  'lookup',
  'ca',
  'cert',
  'key',
  'crl',
  'pfx',
  'passphrase',
  'ciphers',
  'ecdhCurve',
  'secureContext',
  'secureProtocol',
  'servername',
  'minDHSize',
  'pskCallback',
  'enableTrace',
  'requestCert',
  'rejectUnauthorized',
  'checkServerIdentity',
  'ALPNProtocols',
  'SNICallback',
  'requestOCSP',
  'allowPartialTrustChain',
  'session',
  'index',
  'name',
  'mongodbLogPath',
  'mongodbLogComponentSeverities',
  'mongodbLogMaxDocumentLength',
  'connectionType',
  'srvPoller',
  'srvHostValidator',
  'runtimeAdapters',
  'minInternalBufferSize',
  '__skipPingOnConnect',
]);
// Options given as objects, merged into the connection string's (concernParameters).
const CONCERNS = new Set(['readPreference', 'readConcern', 'writeConcern']);
// The connection string options of the Node driver 7.x and of the core
// (case-insensitive, as there): with the ones above, every name the Node driver
// accepts; any other is refused, as there.
const URI_OPTIONS = new Set(
  [
    'enableOverloadRetargeting',
    'maxAdaptiveRetries',
    'serverSelectionTryOnce',
    'srvAllowedHostsSuffix',
    'tlsDisableCertificateRevocationCheck',
    'tlsDisableOCSPEndpointCheck',
    'appName',
    'authMechanism',
    'authMechanismProperties',
    'authSource',
    'compressors',
    'connectTimeoutMS',
    'directConnection',
    'fsync',
    'heartbeatFrequencyMS',
    'j',
    'journal',
    'loadBalanced',
    'localThresholdMS',
    'maxConnecting',
    'maxIdleTimeMS',
    'maxPoolSize',
    'maxStalenessSeconds',
    'minPoolSize',
    'minHeartbeatFrequencyMS',
    'proxyHost',
    'proxyPassword',
    'proxyPort',
    'proxyUsername',
    'readConcernLevel',
    'readPreferenceTags',
    'replicaSet',
    'retryReads',
    'retryWrites',
    'serverMonitoringMode',
    'serverSelectionTimeoutMS',
    'socketTimeoutMS',
    'srvMaxHosts',
    'srvServiceName',
    'ssl',
    'timeoutMS',
    'tls',
    'tlsAllowInvalidCertificates',
    'tlsAllowInvalidHostnames',
    'tlsCAFile',
    'tlsCRLFile',
    'tlsCertificateKeyFile',
    'tlsCertificateKeyFilePassword',
    'tlsInsecure',
    'w',
    'waitQueueTimeoutMS',
    'wtimeout',
    'wtimeoutMS',
    'zlibCompressionLevel',
  ].map((name) => name.toLowerCase()),
);

// Every option name that is not a connection string option, in lower case.
const KNOWN_OPTIONS = new Set([...CLIENT_ONLY, ...NO_EFFECT, ...CONCERNS].map((name) => name.toLowerCase()));

/** Refuses options the Node driver does not know (MongoParseError, as it does) and `autoEncryption`. */
function checkOptionNames(options) {
  if (options.autoEncryption !== undefined && options.autoEncryption !== null) {
    throw new MongoCompatibilityError(
      'autoEncryption (client-side field level encryption) is not supported by anymongo: it needs the mongodb-client-encryption native library',
    );
  }
  // Named in lower case, as the Node driver names them.
  const unknown = Object.keys(options).map((name) => name.toLowerCase()).filter(
    (name) =>
      name !== 'autoencryption' && !KNOWN_OPTIONS.has(name) && !URI_OPTIONS.has(name),
  );
  if (unknown.length === 1) throw new MongoParseError(`option ${unknown[0]} is not supported`);
  if (unknown.length > 1) throw new MongoParseError(`options ${unknown.join(', ')} are not supported`);
}

/** `{ a: 'x', b: 'y' }` as a connection string spells it: `a:x,b:y`. */
function keyValuePairs(object) {
  return Object.entries(object)
    .map(([key, value]) => `${key}:${value}`)
    .join(',');
}

/** A connection string option's value given as an object, as the connection string spells it. */
function uriValue(name, value) {
  if (Array.isArray(value) && name === 'compressors') return value.join(',');
  if (name === 'authMechanismProperties' && typeof value === 'object') return keyValuePairs(value);
  if (typeof value === 'object') {
    throw new MongoInvalidArgumentError(`option ${name}: an object is not a value of this connection string option`);
  }
  return String(value);
}

/** The connection string with the options given in code added (as the Node driver merges them). */
function connectionString(uri, options) {
  if (typeof uri !== 'string') {
    throw new MongoInvalidArgumentError('the connection string must be a string');
  }
  const match = /^(mongodb(?:\+srv)?:\/\/)([^/?]*)(\/[^?]*)?(\?.*)?$/.exec(uri);
  if (!match) {
    return uri; // the core explains what is wrong with it
  }
  let [, scheme, authority, path = '/', query = ''] = match;
  if (options.auth?.username !== undefined) {
    const hosts = authority.includes('@') ? authority.slice(authority.lastIndexOf('@') + 1) : authority;
    const password = options.auth.password === undefined ? '' : `:${encodeURIComponent(options.auth.password)}`;
    authority = `${encodeURIComponent(options.auth.username)}${password}@${hosts}`;
  }
  const params = new URLSearchParams(query.slice(1));
  for (const [name, value] of Object.entries(options)) {
    if (CLIENT_ONLY.has(name) || NO_EFFECT.has(name) || CONCERNS.has(name) || value === undefined || value === null) {
      continue;
    }
    if (name === 'readPreferenceTags' && Array.isArray(value)) {
      for (const tags of value) params.append(name, keyValuePairs(tags));
      continue;
    }
    params.set(name, uriValue(name, value));
  }
  for (const [name, value] of concernParameters(options)) {
    if (name === 'readPreferenceTags') params.append(name, value);
    else params.set(name, value);
  }
  const text = params.toString();
  return `${scheme}${authority}${path}${text ? `?${text}` : ''}`;
}

/** The database named in the connection string's path, if any. */
function defaultDatabase(uri) {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]+)/.exec(uri);
  return match ? decodeURIComponent(match[1]) : 'test';
}

/** A host of the seed list, as the Node driver's `HostAddress` (`host`, `port`, `toString()`). */
class HostAddress {
  constructor(text) {
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
    const [host, port] = bracketed ? [bracketed[1], bracketed[2]] : text.split(':');
    this.host = decodeURIComponent(host);
    this.port = port === undefined ? 27017 : Number(port);
    this.isIPv6 = Boolean(bracketed);
  }

  toString() {
    return this.isIPv6 ? `[${this.host}]:${this.port}` : `${this.host}:${this.port}`;
  }
}

/** The seed list of a connection string, as HostAddresses (for mongodb+srv, the name looked up). */
function seedList(uri) {
  const match = /^mongodb(?:\+srv)?:\/\/([^/?]*)/.exec(uri);
  if (!match) return [];
  const authority = match[1].slice(match[1].lastIndexOf('@') + 1);
  return authority ? authority.split(',').map((host) => new HostAddress(host)) : [];
}

/** The value of the connection string option `name` (case-insensitive), if given. */
function uriOption(uri, name) {
  const query = uri.includes('?') ? uri.slice(uri.indexOf('?') + 1) : '';
  for (const [key, value] of new URLSearchParams(query)) {
    if (key.toLowerCase() === name.toLowerCase()) return value;
  }
  return undefined;
}

/** The size of the `bson` package's internal buffer, as far as this module set it. */
let serializeBufferSize = 0;

/**
 * `document` as BSON; `options` the `bson` package's (`ignoreUndefined`: by default,
 * as the Node driver's, an undefined value is written as null, so a filter
 * `{ _id: undefined }` matches what has a null `_id` rather than everything).
 */
function serialize(document, options = undefined) {
  try {
    return BSON.serialize(document, options);
  } catch (error) {
    // One call's arguments (insertMany's documents) may outgrow bson's internal buffer
    // (17 MB by default); the driver splits them into messages the server accepts.
    const size = BSON.calculateObjectSize(document, options);
    if (!(error instanceof RangeError) || size <= serializeBufferSize) throw error;
    serializeBufferSize = size;
    BSON.setInternalBufferSize(size);
    return BSON.serialize(document, options);
  }
}

function deserialize(bytes, options = undefined) {
  return BSON.deserialize(bytes, options);
}

/** `object` without its undefined fields (at every depth: only for what the driver builds). */
function defined(object) {
  if (object === null || typeof object !== 'object' || Object.getPrototypeOf(object) !== Object.prototype) {
    return object;
  }
  const out = {};
  for (const [name, value] of Object.entries(object)) {
    if (value !== undefined) out[name] = defined(value);
  }
  return out;
}

/** `object`'s own fields but its undefined ones (one level: the values are the caller's). */
function setFields(object) {
  if (object === null || typeof object !== 'object' || Array.isArray(object)) return object;
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

/** The arguments that are the caller's documents, serialized as given. */
const DOCUMENTS = new Set(['filter', 'document', 'documents', 'update', 'replacement', 'pipeline', 'command']);

/**
 * An operation's arguments ready for `serialize`. The caller's documents (filter,
 * update, pipeline, command...) keep their undefined values for the serializer; an
 * option or a write model's field left undefined is not given (as with the Node
 * driver, which builds its commands from what is set); the BSON options, which this
 * glue applies, are not sent; what the glue builds itself loses its undefined fields.
 */
function operationArguments(args) {
  const out = {};
  for (const [name, value] of Object.entries(args ?? {})) {
    if (value === undefined) continue;
    if (DOCUMENTS.has(name)) {
      out[name] = value;
    } else if (name === 'options') {
      const options = {};
      for (const [option, each] of Object.entries(value)) {
        if (each === undefined || BSON_OPTION_NAMES.includes(option)) continue;
        options[option] = CONCERNS.has(option) ? defined(each) : each;
      }
      out.options = options;
    } else if (name === 'operations' && Array.isArray(value)) {
      // bulkWrite's `[{ updateOne: { filter, update, upsert } }...]`.
      out.operations = value.map((operation) =>
        Object.fromEntries(Object.entries(setFields(operation) ?? {}).map(([kind, model]) => [kind, setFields(model)])),
      );
    } else if (name === 'models' && Array.isArray(value)) {
      out.models = value.map(setFields);
    } else {
      out[name] = defined(value);
    }
  }
  return out;
}

// The largest document the server takes (its `maxBsonObjectSize`), and the room an
// OP_MSG command has over it for its own fields (the server's own allowance).
const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;
const COMMAND_OVERHEAD = 16 * 1024;

/**
 * Refuses, before sending, a single document (filter, update, replacement, document,
 * command) larger than the server takes, with a RangeError as the Node driver (whose
 * serializer overflows its buffer); insertMany's and bulkWrite's documents are split
 * into batches by the core and each checked there.
 */
function checkSize(args, options) {
  for (const name of ['filter', 'update', 'replacement', 'document', 'command']) {
    const value = args[name];
    if (value === null || typeof value !== 'object') continue;
    const size = BSON.calculateObjectSize(value, options);
    if (size > MAX_BSON_OBJECT_SIZE + COMMAND_OVERHEAD) {
      throw new RangeError(`the ${name} is ${size} bytes of BSON: out of range of the ${MAX_BSON_OBJECT_SIZE} bytes a server takes`);
    }
  }
}

/**
 * A client of a MongoDB deployment: `new MongoClient(uri, options)`, then `connect()`
 * (operations also connect on first use), and `close()` when done.
 */
export class MongoClient extends EventEmitter {
  #uri;
  #options;
  #native = null;
  #connecting = null;
  #topology = null;
  #state;
  /** @internal The `_id` maker of inserts (`pkFactory`: `{ createPk() }`), if one was given. */
  _pkFactory;

  constructor(uri, options = {}) {
    super();
    checkOptionNames(options);
    this.#uri = connectionString(uri, options);
    this.#options = options;
    this._pkFactory = options.pkFactory;
    const bsonOptions = resolveBSONOptions(options);
    const dbName = options.dbName ?? defaultDatabase(this.#uri);
    // What libraries read of the Node driver's MongoClient state (Mongoose: `s.url`,
    // `s.options.hosts`, `s.options.dbName`).
    this.#state = {
      url: uri,
      bsonOptions,
      options: { ...options, ...bsonOptions, hosts: seedList(this.#uri), dbName },
    };
  }

  /** The options given to the constructor. */
  get options() {
    return { ...this.#options };
  }

  /** The Node driver's client state, as far as libraries read it: `url`, `options` (`hosts`, `dbName`...), `bsonOptions`. */
  get s() {
    return this.#state;
  }

  /** The BSON options of the client (`promoteLongs`, `useBigInt64`, `ignoreUndefined`...), which its databases inherit. */
  get bsonOptions() {
    return this.#state.bsonOptions;
  }

  /**
   * The deployment as monitoring last described it (`topology.description.type`:
   * 'Single', 'ReplicaSetWithPrimary'...), from `connect()` until `close()`; undefined
   * when not connected, as with the Node driver.
   */
  get topology() {
    return this.#native ? this.#topology : undefined;
  }

  /**
   * Connects and authenticates: selects a server and checks out a connection, whose
   * handshake authenticates, without a command of its own (the connection serves the
   * first operation).
   */
  async connect() {
    return this.#connect(undefined);
  }

  /**
   * `connect()`; when an operation connects, its `timeoutMS` (if it has one) bounds the
   * check instead of the client's. Concurrent callers share the first one's attempt.
   */
  async #connect(timeoutMS) {
    const host = entryPoint();
    if (!host) {
      throw new MongoInvalidArgumentError('import anymongo through its package entry point');
    }
    this.#connecting ??= (async () => {
      const transport = this.#options.transport ?? host.transport;
      const background = this.#options.backgroundMonitoring ?? host.background;
      const heartbeat = Number(uriOption(this.#uri, 'heartbeatFrequencyMS') ?? 10000);
      const topology = new Topology(this.#state.options.hosts.map(String), heartbeat);
      try {
        const tracing = await tracingOptions(this.#options.tracing, host.NativeClient.version());
        this.#native = await host.NativeClient.open(
          this.#uri,
          transport,
          background,
          host.platform,
          timeoutMS,
          eventSink(this, topology),
          serialize({ ...codeOptions(this.#options), tracing }),
          tracing.enabled ? spanSink : undefined,
        );
        this.#topology = topology;
      } catch (error) {
        this.#connecting = null;
        throw toError(error);
      }
    })();
    await this.#connecting;
    return this;
  }

  /** `new MongoClient(uri, options).connect()`. */
  static async connect(uri, options = {}) {
    return new MongoClient(uri, options).connect();
  }

  /** The database `name` (default: the connection string's, or `test`), with `options`' concerns. */
  db(name, options = {}) {
    return new Db(this, name ?? this.#state.options.dbName, options);
  }

  /** A session for operations to run in (`{ session }`): transactions, causal consistency. */
  startSession(options = {}) {
    return new ClientSession(this, options);
  }

  /** Runs `fn(session)` with a new session, ended when `fn` settles. */
  async withSession(options, fn) {
    if (typeof options === 'function') [options, fn] = [{}, options];
    const session = this.startSession(options);
    try {
      return await fn(session);
    } finally {
      await session.endSession();
    }
  }

  /**
   * Writes to any namespaces in one command (MongoDB 8.0+): models such as
   * `{ namespace: 'db.coll', name: 'insertOne', document }` or `{ namespace, name:
   * 'updateMany', filter, update }`; `options.verboseResults` for each write's result.
   */
  async bulkWrite(models, options = {}) {
    if (!Array.isArray(models)) {
      throw new MongoInvalidArgumentError('client.bulkWrite takes an array of models');
    }
    for (const model of models) {
      if (model?.name === 'insertOne' && model.document) withId(model.document, this._pkFactory);
    }
    return new ClientBulkWriteResult(await this._run('clientBulkWrite', 'admin', '', { models, options }));
  }

  /** The changes to every database of the deployment. */
  watch(pipeline = [], options = {}) {
    return new ChangeStream(this, '', '', pipeline, options);
  }

  async [Symbol.asyncDispose]() {
    await this.close();
  }

  /** Kills open cursors and closes every connection; the client can connect again. */
  async close() {
    const connecting = this.#connecting;
    this.#connecting = null;
    if (connecting) {
      await connecting.catch(() => {});
    }
    const native = this.#native;
    this.#native = null;
    if (native) {
      await native.close();
      native.free();
    }
  }

  async #handle(args) {
    if (!this.#native) {
      const timeoutMS = args?.options?.timeoutMS;
      await this.#connect(typeof timeoutMS === 'number' ? timeoutMS : undefined);
    }
    return this.#native;
  }

  /** @internal The module client if connected, else null. */
  _nativeIfConnected() {
    return this.#native;
  }

  /** @internal The connected module client (connecting first if need be). */
  async _connected() {
    return this.#handle(undefined);
  }

  /**
   * The arguments as the module takes them, and the session of `args.options.session`
   * (a handle moved into the call), if any: the module takes the read preference as
   * a document. `bsonOptions`: the operation's resolved BSON options.
   */
  #prepare(native, args, bsonOptions) {
    const options = args?.options;
    if (!options || !PREPARED.some((name) => options[name] !== undefined)) {
      return [serializeArguments(args, bsonOptions), undefined];
    }
    const { session, readPreference, readConcern, writeConcern, ...rest } = options;
    const prepared = { ...args, options: rest };
    if (readPreference !== undefined && readPreference !== null) {
      prepared.options.readPreference = readPreferenceDocument(readPreference);
    }
    if (readConcern !== undefined && readConcern !== null) {
      prepared.options.readConcern = readConcernDocument(readConcern);
    }
    if (writeConcern !== undefined && writeConcern !== null) {
      prepared.options.writeConcern = writeConcernDocument(writeConcern);
    }
    if (session === undefined || session === null) {
      return [serializeArguments(prepared, bsonOptions), undefined];
    }
    if (!(session instanceof ClientSession)) {
      throw new MongoInvalidArgumentError('the session option must be a ClientSession');
    }
    if (session.client !== this) {
      throw new MongoInvalidArgumentError('ClientSession must be from the same MongoClient');
    }
    const bytes = serializeArguments(prepared, bsonOptions);
    return [bytes, session._handle(native)];
  }

  /**
   * @internal Runs one operation of the module; resolves to its result document.
   * `bsonOptions` (default: the client's) serialize its arguments and, for the
   * operations that answer with documents (DOCUMENT_RESULTS), read its result.
   */
  async _run(op, db, collection, args, bsonOptions = this.bsonOptions) {
    const native = await this.#handle(args);
    const [bytes, session] = this.#prepare(native, args, bsonOptions);
    let result;
    try {
      result = await native.run(op, db, collection, bytes, session);
    } catch (error) {
      throw toError(error);
    }
    return deserialize(result, DOCUMENT_RESULTS.has(op) ? deserializeOptions(bsonOptions) : undefined);
  }

  /** @internal Opens a cursor of the module. */
  async _cursor(op, db, collection, args, bsonOptions = this.bsonOptions) {
    const native = await this.#handle(args);
    const [bytes, session] = this.#prepare(native, args, bsonOptions);
    try {
      return await native.cursor(op, db, collection, bytes, session);
    } catch (error) {
      throw toError(error);
    }
  }

  /** @internal Opens a change stream of the module. */
  async _watch(db, collection, args) {
    const native = await this.#handle(args);
    const [bytes, session] = this.#prepare(native, args, this.bsonOptions);
    try {
      return await native.watch(db, collection, bytes, session);
    } catch (error) {
      throw toError(error);
    }
  }
}

/** Options of an operation whose values the module takes in another form, or apart. */
const PREPARED = ['session', 'readPreference', 'readConcern', 'writeConcern'];

/** The operations whose result carries the server's documents, read with the BSON options. */
const DOCUMENT_RESULTS = new Set(['findOne', 'findOneAndUpdate', 'findOneAndReplace', 'findOneAndDelete', 'command', 'distinct']);

/** An operation's arguments as BSON, with its BSON options; refuses one document over the server's limit. */
function serializeArguments(args, bsonOptions) {
  const prepared = operationArguments(args);
  const options = serializeOptions(bsonOptions);
  const bytes = serialize(prepared, options);
  if (bytes.length > MAX_BSON_OBJECT_SIZE + COMMAND_OVERHEAD) checkSize(prepared, options);
  return bytes;
}

/**
 * What the client options given in code set that a connection string cannot:
 * `serverApi`, `monitorCommands`, `driverInfo` (appended to the handshake's metadata).
 */
function codeOptions(options) {
  const { serverApi, monitorCommands, driverInfo } = options;
  const code = { monitorCommands: monitorCommands === true };
  if (serverApi !== undefined && serverApi !== null) {
    code.serverApi = typeof serverApi === 'string' ? { version: serverApi } : serverApi;
  }
  if (driverInfo !== undefined && driverInfo !== null) {
    const { name, version, platform } = driverInfo;
    code.driverInfo = defined({ name, version, platform });
  }
  return code;
}

/** The read preference, read concern and write concern of a Db or Collection (Node's getters). */
function concernGetters(Class) {
  Object.defineProperties(Class.prototype, {
    readPreference: {
      get() {
        const preference = this._concerns?.readPreference;
        return preference ? ReadPreference.fromOptions({ readPreference: { ...preference, tags: preference.tagSets } }) : undefined;
      },
    },
    readConcern: {
      get() {
        return this._concerns?.readConcern ? new ReadConcern(this._concerns.readConcern.level) : undefined;
      },
    },
    writeConcern: {
      get() {
        return WriteConcern.fromOptions(this._concerns?.writeConcern);
      },
    },
  });
}

/** A database. */
export class Db {
  #client;
  #name;
  #bsonOptions;
  /** @internal The concerns of its operations, as the module takes them. */
  _concerns;
  /** @internal The `_id` maker of its collections' inserts, if one was given (here or to the client). */
  _pkFactory;

  constructor(client, name, options = {}) {
    this.#client = client;
    this.#name = name;
    this._concerns = concernsOf(options, undefined);
    this.#bsonOptions = resolveBSONOptions(options, client);
    this._pkFactory = options.pkFactory ?? client._pkFactory;
  }

  /** The BSON options of the database (its own over the client's), which its collections inherit. */
  get bsonOptions() {
    return this.#bsonOptions;
  }

  get databaseName() {
    return this.#name;
  }

  /** The client the database belongs to. */
  get client() {
    return this.#client;
  }

  /** The collection `name`, with `options`' concerns over the database's. */
  collection(name, options = {}) {
    const settings = { bsonOptions: resolveBSONOptions(options, this), pkFactory: options.pkFactory ?? this._pkFactory };
    return new Collection(this.#client, this.#name, name, concernsOf(options, this._concerns), settings);
  }

  /** Runs a command and returns the server's reply; `options.timeoutMS` bounds it. */
  async command(command, options = {}) {
    return this.#client._run('command', this.#name, '', { command, options }, resolveBSONOptions(options, this));
  }

  /** A cursor over the reply of a command that opens one (Run Command spec, "runCursorCommand"). */
  runCursorCommand(command, options = {}) {
    return new RunCommandCursor(this.#client, this.#name, command, options);
  }

  /** A database aggregation (`$documents`, `$currentOp`...). */
  aggregate(pipeline = [], options = {}) {
    const bsonOptions = resolveBSONOptions(options, this);
    return new AggregationCursor(this.#client, this.#name, '', { pipeline, options }, this._concerns, bsonOptions);
  }

  /** Drops the database. */
  async dropDatabase(options = {}) {
    const { value } = await this.#client._run('dropDatabase', this.#name, '', { options: commandOptions(options) });
    return value;
  }

  /** The changes to the database's collections. */
  watch(pipeline = [], options = {}) {
    return new ChangeStream(this.#client, this.#name, '', pipeline, options, this._concerns);
  }

  /** The collections and views of the database, as a cursor of their descriptions. */
  listCollections(filter = {}, options = {}) {
    return new ListCollectionsCursor(this.#client, this.#name, '', 'listCollections', { ...options, filter });
  }

  /** The collections of the database (not its `system.` ones). */
  async collections(options = {}) {
    const found = await this.listCollections({}, { ...options, nameOnly: true }).toArray();
    return found.filter(({ name }) => !name.includes('system.')).map(({ name }) => this.collection(name));
  }

  /** Creates the collection `name` (`options`: the `create` command's fields); returns it. */
  async createCollection(name, options = {}) {
    const command = { create: name };
    for (const [option, value] of Object.entries(options)) {
      if (!DRIVER_OPTIONS.has(option) && value !== undefined) command[option] = value;
    }
    await this.command(command, commandOptions(options));
    return this.collection(name);
  }

  /** Drops the collection `name`: true, or false when there was none. */
  async dropCollection(name, options = {}) {
    return dropNamespace(this, name, options);
  }

  /** Renames the collection `from` to `to` (`options.dropTarget`); returns the renamed one. */
  async renameCollection(from, to, options = {}) {
    return this.collection(from).rename(to, options);
  }

  /** The `admin` database's commands: `listDatabases`, `ping`, `command`... */
  admin() {
    return new Admin(this.#client);
  }
}

// Options of createCollection that are the driver's, not the `create` command's.
const DRIVER_OPTIONS = new Set(['timeoutMS', 'session', 'readPreference', 'readConcern', 'pkFactory', 'raw']);

/** What of an operation's options `db.command` takes too: `timeoutMS`, `session`, `readPreference`. */
function commandOptions(options) {
  const out = {};
  for (const name of ['timeoutMS', 'session', 'readPreference']) {
    if (options[name] !== undefined) out[name] = options[name];
  }
  return out;
}

/** The length of the BSON document at `start` of `bytes` (its first int32, little-endian). */
function documentLength(bytes, start) {
  return bytes[start] | (bytes[start + 1] << 8) | (bytes[start + 2] << 16) | (bytes[start + 3] << 24);
}

/** `drop` of `name` in `db`: true, false when it did not exist (NamespaceNotFound). */
async function dropNamespace(db, name, options) {
  try {
    await db.command({ drop: name }, commandOptions(options));
    return true;
  } catch (error) {
    if (error instanceof MongoServerError && error.code === 26) return false;
    throw error;
  }
}

/** The commands of the `admin` database, as the Node driver's `db.admin()`. */
export class Admin {
  #db;

  constructor(client) {
    this.#db = new Db(client, 'admin');
  }

  /** Runs `command` on the `admin` database. */
  async command(command, options = {}) {
    return this.#db.command(command, options);
  }

  async ping(options = {}) {
    return this.command({ ping: 1 }, options);
  }

  async buildInfo(options = {}) {
    return this.command({ buildinfo: 1 }, options);
  }

  async serverStatus(options = {}) {
    return this.command({ serverStatus: 1 }, options);
  }

  /** `{ databases: [{ name, sizeOnDisk, empty }], totalSize, ok }`, the server's reply. */
  async listDatabases(options = {}) {
    return this.#db.client._run('listDatabases', 'admin', '', { options });
  }
}

/**
 * Gives `document` an `_id` when it has none, as the Node driver does: the
 * `pkFactory`'s `createPk()` when there is one, else a new ObjectId.
 */
function withId(document, pkFactory) {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new MongoInvalidArgumentError('a document must be an object');
  }
  if (document._id === undefined) {
    document._id = pkFactory ? pkFactory.createPk() : new ObjectId();
  }
  return document;
}

concernGetters(Db);

/** `args` with the concerns of the Db or Collection that runs the operation. */
function withConcerns(args, concerns) {
  return concerns ? { ...args, concerns } : args;
}

/** A collection. */
export class Collection {
  #client;
  #db;
  #name;
  #settings;
  /** @internal The concerns of its operations, as the module takes them. */
  _concerns;

  /** `settings`: `{ bsonOptions, pkFactory }`, resolved by its Db. */
  constructor(client, db, name, concerns, settings = { bsonOptions: client.bsonOptions }) {
    this.#client = client;
    this.#db = db;
    this.#name = name;
    this._concerns = concerns;
    this.#settings = settings;
  }

  /** The BSON options of the collection (its own over its database's), which its operations inherit. */
  get bsonOptions() {
    return this.#settings.bsonOptions;
  }

  /** The operation's BSON options: its own over the collection's. */
  #bson(options) {
    return resolveBSONOptions(options, this);
  }

  #withId(document) {
    return withId(document, this.#settings.pkFactory);
  }

  get collectionName() {
    return this.#name;
  }

  get dbName() {
    return this.#db;
  }

  get namespace() {
    return `${this.#db}.${this.#name}`;
  }

  #run(op, args) {
    return this.#client._run(op, this.#db, this.#name, withConcerns(args, this._concerns), this.#bson(args.options));
  }

  async insertOne(document, options = {}) {
    return this.#run('insertOne', { document: this.#withId(document), options });
  }

  async insertMany(documents, options = {}) {
    if (!Array.isArray(documents)) {
      throw new MongoInvalidArgumentError('insertMany takes an array of documents');
    }
    const inserted = documents.map((document) => this.#withId(document));
    let result;
    try {
      result = await this.#run('insertMany', { documents: inserted, options });
    } catch (error) {
      throw withOperations(error, () => inserted.map((document) => ({ op: document, insert: true })), options.ordered ?? true);
    }
    // Every document was inserted (a failure throws), each with its `_id` from withId.
    result.insertedIds = Object.fromEntries(inserted.map((document, index) => [index, document._id]));
    return result;
  }

  async updateOne(filter, update, options = {}) {
    return this.#run('updateOne', { filter, update, options });
  }

  async updateMany(filter, update, options = {}) {
    return this.#run('updateMany', { filter, update, options });
  }

  async replaceOne(filter, replacement, options = {}) {
    return this.#run('replaceOne', { filter, replacement, options });
  }

  async deleteOne(filter = {}, options = {}) {
    return this.#run('deleteOne', { filter, options });
  }

  async deleteMany(filter = {}, options = {}) {
    return this.#run('deleteMany', { filter, options });
  }

  /** The first matching document, or null; with `options.explain`, the server's plan for the query. */
  async findOne(filter = {}, options = {}) {
    if (options.explain !== undefined && options.explain !== false) {
      const { explain, ...rest } = options;
      return this.find(filter, rest).limit(1).explain(explain);
    }
    return (await this.#run('findOne', { filter, options })).value;
  }

  /**
   * A cursor over the matching documents (nothing is sent before it is read); with
   * `options.explain` (a verbosity, or true), over the server's plan for the query.
   */
  find(filter = {}, options = {}) {
    return new FindCursor(this.#client, this.#db, this.#name, filter, options, this._concerns, this.#bson(options));
  }

  /** The document before (or with `returnDocument: 'after'`, after) the update; `includeResultMetadata`: the server's reply. */
  async findOneAndUpdate(filter, update, options = {}) {
    return this.#findAndModify('findOneAndUpdate', { filter, update, options });
  }

  async findOneAndReplace(filter, replacement, options = {}) {
    return this.#findAndModify('findOneAndReplace', { filter, replacement, options });
  }

  async findOneAndDelete(filter, options = {}) {
    return this.#findAndModify('findOneAndDelete', { filter, options });
  }

  /**
   * The document, or with `includeResultMetadata` the server's reply (`value`,
   * `lastErrorObject`, `ok`), as the Node driver gives it. Either way the core runs it:
   * retried as a retryable write, with the client's write concern.
   */
  async #findAndModify(op, args) {
    const { includeResultMetadata, ...options } = args.options;
    const reply = await this.#run(op, { ...args, options });
    if (!includeResultMetadata) return reply.value;
    return { lastErrorObject: reply.lastErrorObject, value: reply.value, ok: 1 };
  }

  /** A builder of an ordered bulk write: `find(filter).updateOne(update)`, `insert(document)`..., then `execute()`. */
  initializeOrderedBulkOp(options = {}) {
    return new BulkOperation(this, { ...options, ordered: true });
  }

  /** `initializeOrderedBulkOp` whose writes go on after a failure. */
  initializeUnorderedBulkOp(options = {}) {
    return new BulkOperation(this, { ...options, ordered: false });
  }

  aggregate(pipeline = [], options = {}) {
    const bsonOptions = this.#bson(options);
    return new AggregationCursor(this.#client, this.#db, this.#name, { pipeline, options }, this._concerns, bsonOptions);
  }

  /** The deprecated `count` command: fast, but inexact on sharded clusters and after unclean shutdowns. */
  async count(filter = {}, options = {}) {
    return (await this.#run('count', { filter, options })).n;
  }

  async countDocuments(filter = {}, options = {}) {
    return (await this.#run('countDocuments', { filter, options })).n;
  }

  async estimatedDocumentCount(options = {}) {
    return (await this.#run('estimatedDocumentCount', { options })).n;
  }

  async distinct(key, filter = {}, options = {}) {
    return (await this.#run('distinct', { key, filter, options })).values;
  }

  /** Creates an index; `keys` as `{ field: 1 }`; returns its name. */
  async createIndex(keys, options = {}) {
    if (typeof keys === 'string') {
      keys = { [keys]: 1 };
    }
    return (await this.#run('createIndex', { keys, options })).name;
  }

  /** Creates several indexes (`[{ key, name?, unique?... }]`) with one command; returns their names. */
  async createIndexes(specs, options = {}) {
    if (!Array.isArray(specs)) {
      throw new MongoInvalidArgumentError('createIndexes takes an array of index descriptions');
    }
    return (await this.#run('createIndexes', { specs, options })).names;
  }

  /** The collection's indexes, as a cursor of their descriptions (`v`, `key`, `name`...). */
  listIndexes(options = {}) {
    return new ListIndexesCursor(this.#client, this.#db, this.#name, 'listIndexes', options);
  }

  /** The index descriptions; with `full: false`, `{ name: [[field, direction]...] }`. */
  async indexes(options = {}) {
    const indexes = await this.listIndexes(options).toArray();
    if (options.full ?? true) {
      return indexes;
    }
    return Object.fromEntries(indexes.map(({ name, key }) => [name, Object.entries(key)]));
  }

  /** `indexes` with `full: false` unless told otherwise. */
  async indexInformation(options = {}) {
    return this.indexes({ ...options, full: options.full ?? false });
  }

  /** Whether the index `names` (a name or an array of them: all of them) exist. */
  async indexExists(names, options = {}) {
    const wanted = Array.isArray(names) ? names : [names];
    const existing = new Set(await this.listIndexes(options).map(({ name }) => name).toArray());
    return wanted.every((name) => existing.has(name));
  }

  /**
   * Drops the index `name` (`'*'`: all but `_id`'s); resolves to `{ ok: 1 }`. Through the
   * core's dropIndex: its span is the spec's `dropIndexes` operation, and `rawData`
   * goes to MongoDB 8.2+ only.
   */
  async dropIndex(name, options = {}) {
    return this.#run('dropIndex', { name, options });
  }

  /** Drops every index but `_id`'s: true, or false when that failed. */
  async dropIndexes(options = {}) {
    try {
      await this.dropIndex('*', options);
      return true;
    } catch (error) {
      if (error?.name === 'MongoOperationTimeoutError') throw error;
      return false;
    }
  }

  /** Renames the collection (`options.dropTarget` drops an existing `newName`); returns the renamed one. */
  async rename(newName, options = {}) {
    if (typeof newName !== 'string' || newName === '') {
      throw new MongoInvalidArgumentError('the new name of a collection must be a non-empty string');
    }
    const command = {
      renameCollection: this.namespace,
      to: `${this.#db}.${newName}`,
      dropTarget: typeof options.dropTarget === 'boolean' ? options.dropTarget : false,
    };
    await this.#client._run('command', 'admin', '', { command, options: commandOptions(options) });
    return new Collection(this.#client, this.#db, newName, this._concerns, this.#settings);
  }

  /**
   * Several writes, `[{ insertOne: { document } }, { updateOne: { filter, update } }...]`,
   * in as few commands as possible; `options.ordered` (default true) stops at the first
   * failure. Failed writes throw a MongoBulkWriteError (`writeErrors`, `result`).
   */
  async bulkWrite(operations, options = {}) {
    if (!Array.isArray(operations)) {
      throw new MongoInvalidArgumentError('Argument "operations" must be an array of documents');
    }
    for (const operation of operations) {
      if (operation?.insertOne?.document) this.#withId(operation.insertOne.document);
    }
    try {
      return new BulkWriteResult(bulkResult(await this.#run('bulkWrite', { operations, options })), options.ordered ?? true);
    } catch (error) {
      throw withOperations(error, () => operations.map(write), options.ordered ?? true);
    }
  }

  /** The collection's options (those it was created with), from `listCollections`. */
  async options(options = {}) {
    const [found] = await new Db(this.#client, this.#db, {})
      .listCollections({ name: this.#name }, { ...options, nameOnly: false })
      .toArray();
    if (!found?.options) {
      throw new MongoAPIError(`collection ${this.namespace} not found`);
    }
    return found.options;
  }

  /** Whether the collection is capped. */
  async isCapped(options = {}) {
    return Boolean((await this.options(options)).capped);
  }

  #command(command, options) {
    return this.#client._run('command', this.#db, '', { command, options: commandOptions(options) }, this.#bson(options));
  }

  async drop(options = {}) {
    return (await this.#run('drop', { options: commandOptions(options) })).value;
  }

  /** The changes to the collection. */
  watch(pipeline = [], options = {}) {
    return new ChangeStream(this.#client, this.#db, this.#name, pipeline, options, this._concerns);
  }
}

concernGetters(Collection);

/**
 * The write a model of `bulkWrite` makes: `op`, as the command carries it (a
 * WriteError's `getOperation()`), and whether it is an insert.
 */
function write(model) {
  const [[name, args]] = Object.entries(model);
  return { op: name === 'insertOne' ? args.document : statement(name, args), insert: name === 'insertOne' };
}

/** The update or delete statement of the `bulkWrite` model `{ [name]: args }`. */
function statement(name, args) {
  const out = { q: args.filter };
  if (name === 'deleteOne' || name === 'deleteMany') {
    out.limit = name === 'deleteOne' ? 1 : 0;
  } else {
    out.u = args.update ?? args.replacement;
    if (typeof args.upsert === 'boolean') out.upsert = args.upsert;
    if (name === 'updateMany') out.multi = true;
  }
  for (const field of ['hint', 'arrayFilters', 'collation']) {
    if (args[field]) out[field] = args[field];
  }
  if ((name === 'updateOne' || name === 'replaceOne') && args.sort != null) out.sort = args.sort;
  return out;
}

/**
 * `error`, if a MongoBulkWriteError of the writes `writesOf()` gives (see `write`;
 * ordered or not), as the Node driver makes it: each write error with its write (`op`),
 * and the result made from the `_id` of every insert sent, of which the constructor
 * keeps those the write errors did not stop.
 */
function withOperations(error, writesOf, ordered) {
  if (!(error instanceof MongoBulkWriteError)) return error;
  const writes = writesOf();
  for (const writeError of error.writeErrors) writeError.err.op = writes[writeError.index]?.op;
  const insertedIds = [];
  writes.forEach(({ op, insert }, index) => {
    if (insert) insertedIds.push({ index, _id: op._id });
  });
  error.result = new BulkWriteResult({ ...error.result.result, insertedIds }, ordered);
  return error;
}

/** The Node driver's fluent bulk write builder (`initializeOrderedBulkOp`). */
export class BulkOperation {
  #collection;
  #options;
  #operations = [];
  #executed = false;

  constructor(collection, options) {
    this.#collection = collection;
    this.#options = options;
  }

  get length() {
    return this.#operations.length;
  }

  insert(document) {
    this.#operations.push({ insertOne: { document } });
    return this;
  }

  /** The writes to the documents matching `filter`: `.updateOne()`, `.upsert().replaceOne()`, `.delete()`... */
  find(filter) {
    if (filter === null || typeof filter !== 'object') {
      throw new MongoInvalidArgumentError('Bulk find operation must specify a selector');
    }
    const push = (operation) => {
      this.#operations.push(operation);
      return this;
    };
    const modifiers = {};
    const find = {
      upsert() {
        modifiers.upsert = true;
        return find;
      },
      collation(collation) {
        modifiers.collation = collation;
        return find;
      },
      hint(hint) {
        modifiers.hint = hint;
        return find;
      },
      arrayFilters(arrayFilters) {
        modifiers.arrayFilters = arrayFilters;
        return find;
      },
      updateOne: (update) => push({ updateOne: { filter, update, ...modifiers } }),
      update: (update) => push({ updateMany: { filter, update, ...modifiers } }),
      replaceOne: (replacement) => push({ replaceOne: { filter, replacement, ...modifiers } }),
      deleteOne: () => push({ deleteOne: { filter, ...modifiers } }),
      delete: () => push({ deleteMany: { filter, ...modifiers } }),
    };
    return find;
  }

  /** Any operation of `collection.bulkWrite`. */
  raw(operation) {
    this.#operations.push(operation);
    return this;
  }

  async execute(options = {}) {
    if (this.#executed) {
      throw new MongoBatchReExecutionError('Batch cannot be re-executed');
    }
    if (this.#operations.length === 0) {
      throw new MongoInvalidArgumentError('Invalid BulkOperation, Batch cannot be empty');
    }
    this.#executed = true;
    return this.#collection.bulkWrite(this.#operations, { ...this.#options, ...options });
  }
}

/**
 * What the cursors share: batches from the module, read with next(), toArray() or
 * `for await`. A batch is the BSON of its documents one after the other, each
 * deserialized only when it is read: a document read and dropped is garbage at once,
 * rather than kept alive (and copied from GC generation to generation) with its whole
 * batch. An EventEmitter, as the Node driver's cursors: `'close'` once it is closed or
 * exhausted.
 */
class AbstractCursor extends EventEmitter {
  #client;
  #db;
  #collection;
  #concerns;
  #bsonOptions;
  #read;
  #native = null;
  #batch = new Uint8Array(0);
  #position = 0;
  #closed = false;
  #transform = null;

  /** `bsonOptions`: the resolved BSON options its documents are read with (default: the client's). */
  constructor(client, db, collection, concerns, bsonOptions = client.bsonOptions) {
    super();
    this.#client = client;
    this.#db = db;
    this.#collection = collection;
    this.#concerns = concerns;
    this.#bsonOptions = bsonOptions;
    this.#read = deserializeOptions(bsonOptions);
  }

  /** @internal [op, args] of the command that opens the cursor. */
  _command() {
    throw new Error('abstract');
  }

  /** @internal The explain document the cursor yields instead of its results (`explain` option), if asked. */
  _explained() {
    return undefined;
  }

  /** A document of a batch: with the `raw` option its BSON (as the Node driver: a Buffer where there is one). */
  #document(bytes) {
    if (this.#bsonOptions.raw) {
      return globalThis.Buffer ? globalThis.Buffer.from(bytes) : bytes.slice();
    }
    const document = deserialize(bytes, this.#read);
    return this.#transform ? this.#transform(document) : document;
  }

  /** @internal Throws if the cursor was already read (its options are fixed then). */
  _checkUnstarted() {
    if (this.#native || this.#closed) {
      throw new MongoCursorInUseError('the cursor was already read');
    }
  }

  get closed() {
    return this.#closed;
  }

  /** Maps each document through `transform` (applied after earlier ones). */
  map(transform) {
    const previous = this.#transform;
    this.#transform = previous ? (document) => transform(previous(document)) : transform;
    return this;
  }

  /** Fetches the next batch (waiting for one with `wait`); false if none came. */
  async #fetch(wait) {
    const explained = this.#native ? undefined : this._explained();
    if (explained) {
      // The plan is the cursor's one document.
      this.#batch = serialize(await explained);
      this.#position = 0;
      this.#closed = true;
      return true;
    }
    if (!this.#native) {
      const [op, args] = this._command();
      const concerned = withConcerns(args, this.#concerns);
      this.#native = await this.#client._cursor(op, this.#db, this.#collection, concerned, this.#bsonOptions);
    }
    let bytes;
    try {
      bytes = await this.#native.nextBatch(wait);
    } catch (error) {
      // Unlike the Node driver's, the cursor stays open after a failed getMore: a
      // load-balanced cursor keeps its server cursor and pinned connection until the
      // application closes it (load-balancers.md, "Behaviour With Cursors"); the next
      // read finds it ended and closes it; `for await` and toArray close it on the way out.
      throw toError(error);
    }
    if (bytes === null) {
      await this.close();
      return false;
    }
    if (bytes === undefined) return false;
    this.#batch = bytes;
    this.#position = 0;
    return true;
  }

  async #fill() {
    while (this.#position >= this.#batch.length && !this.#closed) {
      await this.#fetch(true);
    }
    return this.#position < this.#batch.length;
  }

  async hasNext() {
    return this.#fill();
  }

  /** The next document, or null at the end. */
  async next() {
    if (!(await this.#fill())) {
      return null;
    }
    const batch = this.#batch;
    const start = this.#position;
    const end = start + documentLength(batch, start);
    this.#position = end;
    return this.#document(batch.subarray(start, end));
  }

  /**
   * The next document, or null: at the end, or when a tailable cursor's getMore found
   * nothing new (where `next()` would wait).
   */
  async tryNext() {
    if (this.#position >= this.#batch.length && !this.#closed && !(await this.#fetch(false))) {
      return null;
    }
    return this.next();
  }

  /** Calls `fn(document)` for each remaining document; stops early when `fn` returns false. */
  async forEach(fn) {
    if (typeof fn !== 'function') {
      throw new MongoInvalidArgumentError('Argument "iterator" must be a function');
    }
    for await (const document of this) {
      if (fn(document) === false) break;
    }
  }

  /** How many documents the cursor holds without asking the server. */
  bufferedCount() {
    let count = 0;
    for (let at = this.#position; at < this.#batch.length; count += 1) {
      at += documentLength(this.#batch, at);
    }
    return count;
  }

  /** Up to `number` (default: all) of the documents held, without asking the server. */
  readBufferedDocuments(number = Infinity) {
    const documents = [];
    while (documents.length < number && this.#position < this.#batch.length) {
      const start = this.#position;
      this.#position += documentLength(this.#batch, start);
      documents.push(this.#document(this.#batch.subarray(start, this.#position)));
    }
    return documents;
  }

  /** The cursor as it was before it was read: the next read sends the command again. */
  rewind() {
    const native = this.#native;
    this.#native = null;
    this.#batch = new Uint8Array(0);
    this.#position = 0;
    this.#closed = false;
    if (native) {
      native.close().then(
        () => native.free(),
        () => native.free(),
      );
    }
  }

  /** A new cursor with the same command, unread. */
  clone() {
    return this._clone();
  }

  /** @internal A copy of this cursor with the same arguments, unread. */
  _clone() {
    throw new Error('abstract');
  }

  /** @internal What the copy needs of this cursor. */
  _origin() {
    return [this.#client, this.#db, this.#collection, this.#concerns, this.#bsonOptions];
  }

  /** A ReadableStream of the remaining documents (where the runtime has Web Streams). */
  stream() {
    const iterator = this[Symbol.asyncIterator]();
    return new ReadableStream({
      async pull(controller) {
        const { value, done } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel() {
        await iterator.return();
      },
    });
  }

  async [Symbol.asyncDispose]() {
    await this.close();
  }

  /** Every remaining document. */
  async toArray() {
    const documents = [];
    for await (const document of this) {
      documents.push(document);
    }
    return documents;
  }

  /** `for await (const document of cursor)`; leaving the loop early closes the cursor. */
  async *[Symbol.asyncIterator]() {
    try {
      while (await this.#fill()) {
        yield await this.next();
      }
    } finally {
      await this.close();
    }
  }

  /** Kills the server cursor (if still open); emits `'close'`. */
  async close() {
    if (this.#closed) {
      return;
    }
    this.#closed = true;
    const native = this.#native;
    if (native) {
      try {
        // As the Node driver's: killCursors is best effort (the server times idle
        // cursors out), so its failure is not the caller's.
        await native.close();
      } catch {
        // Ignored, above.
      } finally {
        native.free();
      }
    }
    this.emit('close');
  }
}

/** The cursor of `find`; `sort`, `limit`, `skip`, `project`, `batchSize` before reading. */
export class FindCursor extends AbstractCursor {
  #filter;
  #options;

  constructor(client, db, collection, filter, options, concerns, bsonOptions) {
    super(client, db, collection, concerns, bsonOptions);
    this.#filter = filter;
    this.#options = { ...options };
  }

  _command() {
    const { tailable, awaitData, explain, ...options } = this.#options;
    if (tailable) options.cursorType = awaitData ? 'tailableAwait' : 'tailable';
    return ['find', { filter: this.#filter, options }];
  }

  _explained() {
    const { explain } = this.#options;
    return explain === undefined || explain === false ? undefined : this.explain(explain);
  }

  #set(name, value) {
    this._checkUnstarted();
    this.#options[name] = value;
    return this;
  }

  filter(filter) {
    this._checkUnstarted();
    this.#filter = filter;
    return this;
  }

  _clone() {
    const [client, db, collection, concerns, bsonOptions] = this._origin();
    return new FindCursor(client, db, collection, this.#filter, this.#options, concerns, bsonOptions);
  }

  /** The server's plan for the query (the `explain` command; `verbosity` default "allPlansExecution"). */
  async explain(verbosity = 'allPlansExecution') {
    const [client, db, collection, concerns, bsonOptions] = this._origin();
    const { timeoutMS, session, readPreference, readConcern, explain, ...fields } = this.#options;
    for (const name of BSON_OPTION_NAMES) delete fields[name];
    const find = { find: collection, filter: this.#filter, ...fields };
    const verbose = typeof verbosity === 'boolean' ? (verbosity ? 'allPlansExecution' : 'queryPlanner') : verbosity;
    const options = { timeoutMS, session, ...concerns, ...bsonOptions };
    return new Db(client, db, {}).command({ explain: find, verbosity: verbose }, options);
  }

  collation(collation) {
    return this.#set('collation', collation);
  }

  allowDiskUse(allow = true) {
    return this.#set('allowDiskUse', allow);
  }

  min(min) {
    return this.#set('min', min);
  }

  max(max) {
    return this.#set('max', max);
  }

  returnKey(value) {
    return this.#set('returnKey', value);
  }

  showRecordId(value) {
    return this.#set('showRecordId', value);
  }

  maxAwaitTimeMS(milliseconds) {
    return this.#set('maxAwaitTimeMS', milliseconds);
  }

  /** `tailable`, `awaitData`, `noCursorTimeout`, `partial` (allowPartialResults). */
  addCursorFlag(flag, value) {
    const names = { partial: 'allowPartialResults', exhaust: 'exhaust' };
    return this.#set(names[flag] ?? flag, value);
  }

  sort(sort, direction) {
    if (typeof sort === 'string') {
      sort = { [sort]: direction ?? 1 };
    }
    return this.#set('sort', sort);
  }

  limit(limit) {
    return this.#set('limit', limit);
  }

  skip(skip) {
    return this.#set('skip', skip);
  }

  project(projection) {
    return this.#set('projection', projection);
  }

  batchSize(size) {
    return this.#set('batchSize', size);
  }

  maxTimeMS(milliseconds) {
    return this.#set('maxTimeMS', milliseconds);
  }

  hint(hint) {
    return this.#set('hint', hint);
  }

  comment(comment) {
    return this.#set('comment', comment);
  }
}

/** The cursor of `aggregate`. */
export class AggregationCursor extends AbstractCursor {
  #args;

  constructor(client, db, collection, args, concerns, bsonOptions) {
    super(client, db, collection, concerns, bsonOptions);
    this.#args = args;
  }

  _command() {
    return ['aggregate', this.#args];
  }

  _clone() {
    const [client, db, collection, concerns, bsonOptions] = this._origin();
    const args = { ...this.#args, pipeline: [...this.#args.pipeline] };
    return new AggregationCursor(client, db, collection, args, concerns, bsonOptions);
  }

  match(value) {
    return this.addStage({ $match: value });
  }

  project(value) {
    return this.addStage({ $project: value });
  }

  sort(value) {
    return this.addStage({ $sort: value });
  }

  limit(value) {
    return this.addStage({ $limit: value });
  }

  skip(value) {
    return this.addStage({ $skip: value });
  }

  group(value) {
    return this.addStage({ $group: value });
  }

  unwind(value) {
    return this.addStage({ $unwind: value });
  }

  lookup(value) {
    return this.addStage({ $lookup: value });
  }

  out(value) {
    return this.addStage({ $out: value });
  }

  redact(value) {
    return this.addStage({ $redact: value });
  }

  geoNear(value) {
    return this.addStage({ $geoNear: value });
  }

  /** Adds a stage to the pipeline (before the cursor is read). */
  addStage(stage) {
    this._checkUnstarted();
    this.#args.pipeline.push(stage);
    return this;
  }

  #option(name, value) {
    this._checkUnstarted();
    this.#args.options = { ...this.#args.options, [name]: value };
    return this;
  }

  batchSize(size) {
    return this.#option('batchSize', size);
  }

  maxTimeMS(milliseconds) {
    return this.#option('maxTimeMS', milliseconds);
  }

  /** The server's plan for the pipeline (`explain: true`). */
  async explain(verbosity = true) {
    const [client, db, collection, concerns] = this._origin();
    const { timeoutMS, session, readPreference, readConcern, batchSize, ...fields } = this.#args.options ?? {};
    for (const name of BSON_OPTION_NAMES) delete fields[name];
    const command = { aggregate: collection || 1, pipeline: this.#args.pipeline, explain: Boolean(verbosity), ...fields };
    return new Db(client, db, {}).command(command, { timeoutMS, session, ...concerns });
  }
}

/** A cursor over what a command answers with (`listCollections`, `listIndexes`, `runCursorCommand`). */
class CommandCursor extends AbstractCursor {
  #args;

  constructor(client, db, command, options) {
    super(client, db, '');
    this.#args = { command, options: commandOptions(options) };
  }

  _command() {
    return ['command', this.#args];
  }

  _clone() {
    const [client, db] = this._origin();
    const copy = new this.constructor(client, db, this.#args.command, this.#args.options);
    for (const [name, value] of Object.entries(this.#args.getMore ?? {})) copy._getMore(name, value);
    return copy;
  }

  /** @internal Sets what each getMore carries, before the cursor is read. */
  _getMore(name, value) {
    this._checkUnstarted();
    this.#args.getMore = { ...this.#args.getMore, [name]: value };
    return this;
  }
}

/** The cursor of `db.runCursorCommand`. */
export class RunCommandCursor extends CommandCursor {
  /** The `batchSize` of each getMore (set before the cursor is read). */
  setBatchSize(size) {
    return this._getMore('batchSize', size);
  }

  /** The `maxTimeMS` of each getMore (set before the cursor is read). */
  setMaxTimeMS(milliseconds) {
    return this._getMore('maxTimeMS', milliseconds);
  }

  /** The `comment` of each getMore (set before the cursor is read). */
  setComment(comment) {
    return this._getMore('comment', comment);
  }
}

/**
 * A cursor of the spec's list operations (`listCollections`, `listIndexes`): retried
 * as reads are, unlike a command run as given.
 */
class ListingCursor extends AbstractCursor {
  #op;
  #options;

  constructor(client, db, collection, op, options) {
    super(client, db, collection);
    this.#op = op;
    this.#options = { ...options };
  }

  _command() {
    return [this.#op, { options: this.#options }];
  }

  _clone() {
    const [client, db, collection] = this._origin();
    return new this.constructor(client, db, collection, this.#op, this.#options);
  }
}

/** The cursor of `db.listCollections`. */
export class ListCollectionsCursor extends ListingCursor {}

/** The cursor of `collection.listIndexes`. */
export class ListIndexesCursor extends ListingCursor {}
