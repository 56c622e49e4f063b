// Types of the anymongo npm package: the public surface, shaped like the official
// Node.js driver's. BSON values are the `bson` package's classes, re-exported.
import type { Document } from 'bson';

export {
  Binary,
  BSON,
  Decimal128,
  Document,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
} from 'bson';

/** The socket of one connection, supplied by the host: what a transport's connect() gives. */
export interface Duplex {
  /** The next bytes received; `null` at the end of the stream. */
  read(): Promise<Uint8Array | null>;
  /** Sends all of `bytes`. */
  write(bytes: Uint8Array): Promise<void>;
  /** Closes the connection (a pending read then ends). */
  close(): void;
}

/** What the driver asks for when the connection string enables TLS. */
export interface TlsRequest {
  servername: string;
  caFile?: string;
  caPem?: string;
  certificateKeyFile?: string;
  certificateKeyPem?: string;
  certificateKeyPassword?: string;
  allowInvalidCertificates: boolean;
  allowInvalidHostnames: boolean;
}

/**
 * Opens connections for the driver. Each runtime's entry point has one (node:net/tls,
 * Deno.connect/connectTls, cloudflare:sockets); pass your own as `options.transport`.
 * A rejection's `code` (`ECONNREFUSED`...) and `tls: true` (certificate failures) are
 * read.
 */
export interface Transport {
  connect(host: string, port: number, tls: TlsRequest | null): Promise<Duplex>;
  /**
   * TLS started on the socket under `duplex` (from `connect`, open to `host` through a
   * SOCKS5 proxy), for TLS through a proxy (optional; Node.js and Bun have it).
   */
  secure?(duplex: Duplex, host: string, tls: TlsRequest): Promise<Duplex>;
  /**
   * SRV records, for mongodb+srv:// (optional). This and resolveTxt resolve to an empty
   * array when the name has no such records or does not exist, and reject otherwise.
   */
  resolveSrv?(name: string): Promise<{ name: string; port: number; ttl?: number }[]>;
  /** TXT records, each one's strings joined (optional). */
  resolveTxt?(name: string): Promise<string[]>;
}

/**
 * SRV and TXT look-ups over DNS-over-HTTPS (the `application/dns-json` form), for a
 * transport on a host without a DNS module; Workers' transport uses it with the
 * default endpoint, `https://cloudflare-dns.com/dns-query`.
 *
 * ```js
 * const transport = { ...myTransport, ...dnsOverHttps({ endpoint: 'https://dns.google/resolve' }) };
 * ```
 */
export declare function dnsOverHttps(options?: {
  endpoint?: string;
  fetch?: typeof globalThis.fetch;
}): Required<Pick<Transport, 'resolveSrv' | 'resolveTxt'>>;

/**
 * Options of MongoClient: any connection string option (`appName`,
 * `serverSelectionTimeoutMS`, `retryWrites`, `tls`...), merged into the URI, and:
 */
export interface MongoClientOptions {
  /** Credentials, instead of the connection string's. */
  auth?: { username: string; password?: string };
  /** The host's sockets (default: the runtime's). */
  transport?: Transport;
  /**
   * Monitor servers in the background on the event loop (default: true on Node.js,
   * Deno and Bun; false on Workers, where monitoring happens before each server selection).
   */
  backgroundMonitoring?: boolean;
  [option: string]: string | number | boolean | undefined | object;
}

export declare class MongoClient {
  constructor(uri: string, options?: MongoClientOptions);
  static connect(uri: string, options?: MongoClientOptions): Promise<MongoClient>;
  /** Connects and authenticates, without a command of its own (operations connect on first use too). */
  connect(): Promise<this>;
  /** The database `name` (default: the connection string's, else `test`). */
  db(name?: string): Db;
  /** Kills open cursors and closes every connection. */
  close(): Promise<void>;
}

export declare class Db {
  readonly databaseName: string;
  collection<TSchema extends Document = Document>(name: string): Collection<TSchema>;
  command(command: Document, options?: { timeoutMS?: number }): Promise<Document>;
  aggregate<T extends Document = Document>(pipeline?: Document[], options?: AggregateOptions): AggregationCursor<T>;
  dropDatabase(): Promise<boolean>;
  /** The collections and views; with `nameOnly`, only `{ name, type }` of each. */
  listCollections(filter?: Filter, options?: ListCollectionsOptions): ListCollectionsCursor<CollectionInfo>;
  /** The collections of the database (not its `system.` ones). */
  collections(options?: ListCollectionsOptions): Promise<Collection[]>;
  /** `options`: the `create` command's fields (`capped`, `size`, `validator`, `timeseries`...). */
  createCollection<TSchema extends Document = Document>(name: string, options?: CreateCollectionOptions): Promise<Collection<TSchema>>;
  /** True, or false when there was no such collection. */
  dropCollection(name: string, options?: { timeoutMS?: number }): Promise<boolean>;
  renameCollection<TSchema extends Document = Document>(from: string, to: string, options?: RenameOptions): Promise<Collection<TSchema>>;
  admin(): Admin;
}

/** The commands of the `admin` database (`db.admin()`). */
export declare class Admin {
  command(command: Document, options?: { timeoutMS?: number }): Promise<Document>;
  ping(options?: { timeoutMS?: number }): Promise<Document>;
  buildInfo(options?: { timeoutMS?: number }): Promise<Document>;
  serverStatus(options?: { timeoutMS?: number }): Promise<Document>;
  listDatabases(options?: ListDatabasesOptions): Promise<ListDatabasesResult>;
}

export interface ListDatabasesOptions {
  nameOnly?: boolean;
  filter?: Document;
  authorizedDatabases?: boolean;
  comment?: unknown;
  timeoutMS?: number;
}

export interface ListDatabasesResult {
  databases: ({ name: string; sizeOnDisk?: number; empty?: boolean } & Document)[];
  totalSize?: number;
  totalSizeMb?: number;
  ok: 1 | 0;
}

export interface ListCollectionsOptions {
  nameOnly?: boolean;
  authorizedCollections?: boolean;
  batchSize?: number;
  comment?: unknown;
  timeoutMS?: number;
}

export interface CollectionInfo extends Document {
  name: string;
  type?: string;
  options?: Document;
  info?: { readOnly?: false; uuid?: any };
  idIndex?: Document;
}

export interface CreateCollectionOptions {
  capped?: boolean;
  size?: number;
  max?: number;
  validator?: Document;
  validationLevel?: string;
  validationAction?: string;
  timeseries?: Document;
  expireAfterSeconds?: number;
  viewOn?: string;
  pipeline?: Document[];
  collation?: Document;
  writeConcern?: WriteConcern;
  timeoutMS?: number;
  [option: string]: unknown;
}

export interface RenameOptions {
  /** Drop a collection already named like the target (otherwise its existence is an error). */
  dropTarget?: boolean;
  timeoutMS?: number;
}

export type Filter = Document;
export type UpdateFilter = Document | Document[];
export type Sort = Document | string;

export interface WriteConcern {
  w?: number | string;
  j?: boolean;
  wtimeout?: number;
}

export interface CommonOptions {
  comment?: unknown;
  maxTimeMS?: number;
  /** This operation's timeoutMS (instead of the client's): 0 for no limit. */
  timeoutMS?: number;
}

export interface WriteOptions {
  writeConcern?: WriteConcern;
  /** This operation's timeoutMS (instead of the client's): 0 for no limit. */
  timeoutMS?: number;
  bypassDocumentValidation?: boolean;
  comment?: unknown;
}

export interface InsertManyOptions extends WriteOptions {
  ordered?: boolean;
}

export interface UpdateOptions extends WriteOptions {
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: Document;
  hint?: string | Document;
  let?: Document;
  sort?: Document;
}

export type ReplaceOptions = Omit<UpdateOptions, 'arrayFilters'>;

export interface DeleteOptions extends WriteOptions {
  collation?: Document;
  hint?: string | Document;
  let?: Document;
}

export interface FindOptions extends CommonOptions {
  projection?: Document;
  sort?: Document;
  limit?: number;
  skip?: number;
  batchSize?: number;
  hint?: string | Document;
  collation?: Document;
  allowDiskUse?: boolean;
  let?: Document;
  min?: Document;
  max?: Document;
  returnKey?: boolean;
  showRecordId?: boolean;
  noCursorTimeout?: boolean;
  allowPartialResults?: boolean;
  readConcern?: { level: string };
}

export interface FindOneAndUpdateOptions extends CommonOptions {
  returnDocument?: 'before' | 'after';
  projection?: Document;
  sort?: Document;
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: Document;
  hint?: string | Document;
  let?: Document;
  writeConcern?: WriteConcern;
  bypassDocumentValidation?: boolean;
}

export type FindOneAndReplaceOptions = Omit<FindOneAndUpdateOptions, 'arrayFilters'>;
export type FindOneAndDeleteOptions = Omit<FindOneAndUpdateOptions, 'arrayFilters' | 'returnDocument' | 'upsert' | 'bypassDocumentValidation'>;

export interface AggregateOptions extends CommonOptions {
  allowDiskUse?: boolean;
  batchSize?: number;
  bypassDocumentValidation?: boolean;
  collation?: Document;
  hint?: string | Document;
  let?: Document;
  readConcern?: { level: string };
  writeConcern?: WriteConcern;
}

export interface CountDocumentsOptions extends CommonOptions {
  skip?: number;
  limit?: number;
  collation?: Document;
  hint?: string | Document;
}

export interface DistinctOptions extends CommonOptions {
  collation?: Document;
  hint?: string | Document;
}

export interface CreateIndexesOptions extends CommonOptions {
  name?: string;
  unique?: boolean;
  sparse?: boolean;
  expireAfterSeconds?: number;
  partialFilterExpression?: Document;
  collation?: Document;
  hidden?: boolean;
  commitQuorum?: number | string;
  writeConcern?: WriteConcern;
  [indexOption: string]: unknown;
}

export interface IndexDescription extends Omit<CreateIndexesOptions, 'commitQuorum' | 'writeConcern' | 'timeoutMS' | 'maxTimeMS' | 'comment'> {
  key: Document;
}

export interface ListIndexesOptions {
  batchSize?: number;
  comment?: unknown;
  timeoutMS?: number;
}

export interface IndexInformationOptions extends ListIndexesOptions {
  /** The descriptions as listIndexes gives them (default for `indexes`), or `{ name: [[field, direction]...] }`. */
  full?: boolean;
}

export interface BulkWriteOptions extends WriteOptions {
  /** Stop at the first failed write (default true). */
  ordered?: boolean;
  let?: Document;
}

export type AnyBulkWriteOperation<TSchema extends Document = Document> =
  | { insertOne: { document: TSchema } }
  | { replaceOne: { filter: Filter; replacement: TSchema; upsert?: boolean; collation?: Document; hint?: string | Document; sort?: Document } }
  | { updateOne: { filter: Filter; update: UpdateFilter; upsert?: boolean; arrayFilters?: Document[]; collation?: Document; hint?: string | Document; sort?: Document } }
  | { updateMany: { filter: Filter; update: UpdateFilter; upsert?: boolean; arrayFilters?: Document[]; collation?: Document; hint?: string | Document } }
  | { deleteOne: { filter: Filter; collation?: Document; hint?: string | Document } }
  | { deleteMany: { filter: Filter; collation?: Document; hint?: string | Document } };

export interface WriteError {
  index: number;
  code: number;
  errmsg: string;
  errInfo?: Document;
}

/** What a bulkWrite did (also the `result` of its MongoBulkWriteError). */
export declare class BulkWriteResult {
  readonly insertedCount: number;
  readonly matchedCount: number;
  readonly modifiedCount: number;
  readonly deletedCount: number;
  readonly upsertedCount: number;
  /** The `_id` of each upserted document, by the index of its operation. */
  readonly upsertedIds: { [index: number]: any };
  /** The `_id` of each inserted document, by the index of its operation. */
  readonly insertedIds: { [index: number]: any };
  readonly ok: number;
  isOk(): boolean;
  getInsertedIdAt(index: number): any;
  getUpsertedIdAt(index: number): { index: number; _id: any } | undefined;
  getUpsertedIds(): { index: number; _id: any }[];
  hasWriteErrors(): boolean;
  getWriteErrorCount(): number;
  getWriteErrorAt(index: number): WriteError | undefined;
  getWriteErrors(): WriteError[];
}

export interface InsertOneResult {
  acknowledged: boolean;
  insertedId: any;
}

export interface InsertManyResult {
  acknowledged: boolean;
  insertedCount: number;
  insertedIds: { [index: number]: any };
}

export interface UpdateResult {
  acknowledged: boolean;
  matchedCount: number;
  modifiedCount: number;
  upsertedCount: number;
  upsertedId: any | null;
}

export interface DeleteResult {
  acknowledged: boolean;
  deletedCount: number;
}

export declare class Collection<TSchema extends Document = Document> {
  readonly collectionName: string;
  readonly dbName: string;
  readonly namespace: string;
  /** Gives the document an ObjectId `_id` when it has none. */
  insertOne(document: TSchema, options?: WriteOptions): Promise<InsertOneResult>;
  insertMany(documents: TSchema[], options?: InsertManyOptions): Promise<InsertManyResult>;
  updateOne(filter: Filter, update: UpdateFilter, options?: UpdateOptions): Promise<UpdateResult>;
  updateMany(filter: Filter, update: UpdateFilter, options?: UpdateOptions): Promise<UpdateResult>;
  replaceOne(filter: Filter, replacement: TSchema, options?: ReplaceOptions): Promise<UpdateResult>;
  deleteOne(filter?: Filter, options?: DeleteOptions): Promise<DeleteResult>;
  deleteMany(filter?: Filter, options?: DeleteOptions): Promise<DeleteResult>;
  findOne(filter?: Filter, options?: FindOptions): Promise<TSchema | null>;
  find(filter?: Filter, options?: FindOptions): FindCursor<TSchema>;
  findOneAndUpdate(filter: Filter, update: UpdateFilter, options?: FindOneAndUpdateOptions): Promise<TSchema | null>;
  findOneAndReplace(filter: Filter, replacement: TSchema, options?: FindOneAndReplaceOptions): Promise<TSchema | null>;
  findOneAndDelete(filter: Filter, options?: FindOneAndDeleteOptions): Promise<TSchema | null>;
  aggregate<T extends Document = Document>(pipeline?: Document[], options?: AggregateOptions): AggregationCursor<T>;
  countDocuments(filter?: Filter, options?: CountDocumentsOptions): Promise<number>;
  estimatedDocumentCount(options?: CommonOptions): Promise<number>;
  distinct(key: string, filter?: Filter, options?: DistinctOptions): Promise<any[]>;
  /** Returns the index's name. */
  createIndex(keys: Document | string, options?: CreateIndexesOptions): Promise<string>;
  /** Creates the indexes with one command; returns their names. */
  createIndexes(specs: IndexDescription[], options?: CreateIndexesOptions): Promise<string[]>;
  listIndexes(options?: ListIndexesOptions): ListIndexesCursor;
  indexes(options?: IndexInformationOptions & { full?: true }): Promise<Document[]>;
  indexes(options: IndexInformationOptions & { full: false }): Promise<{ [name: string]: [string, unknown][] }>;
  indexInformation(options?: IndexInformationOptions & { full?: false }): Promise<{ [name: string]: [string, unknown][] }>;
  indexInformation(options: IndexInformationOptions & { full: true }): Promise<Document[]>;
  /** Whether the index (or every index named) exists. */
  indexExists(names: string | string[], options?: ListIndexesOptions): Promise<boolean>;
  /** Returns the server's reply. */
  dropIndex(name: string, options?: { timeoutMS?: number }): Promise<Document>;
  /** Drops every index but `_id`'s: false when that failed. */
  dropIndexes(options?: { timeoutMS?: number }): Promise<boolean>;
  /** Returns the renamed collection. */
  rename<T extends Document = TSchema>(newName: string, options?: RenameOptions): Promise<Collection<T>>;
  /** Failed writes throw a MongoBulkWriteError with `writeErrors` and `result`. */
  bulkWrite(operations: AnyBulkWriteOperation<TSchema>[], options?: BulkWriteOptions): Promise<BulkWriteResult>;
  drop(): Promise<boolean>;
}

declare class AbstractCursor<T> implements AsyncIterable<T> {
  readonly closed: boolean;
  hasNext(): Promise<boolean>;
  next(): Promise<T | null>;
  toArray(): Promise<T[]>;
  map<U>(transform: (document: T) => U): AbstractCursor<U>;
  close(): Promise<void>;
  /** Leaving the loop early closes the cursor. */
  [Symbol.asyncIterator](): AsyncGenerator<T, void, void>;
}

export declare class FindCursor<T = Document> extends AbstractCursor<T> {
  filter(filter: Filter): this;
  sort(sort: Sort, direction?: 1 | -1): this;
  limit(limit: number): this;
  skip(skip: number): this;
  project(projection: Document): this;
  batchSize(size: number): this;
  maxTimeMS(milliseconds: number): this;
  hint(hint: string | Document): this;
  comment(comment: unknown): this;
  map<U>(transform: (document: T) => U): FindCursor<U>;
}

export declare class AggregationCursor<T = Document> extends AbstractCursor<T> {
  map<U>(transform: (document: T) => U): AggregationCursor<U>;
}

export declare class ListCollectionsCursor<T = CollectionInfo> extends AbstractCursor<T> {
  map<U>(transform: (document: T) => U): ListCollectionsCursor<U>;
}

export declare class ListIndexesCursor<T = Document> extends AbstractCursor<T> {
  map<U>(transform: (document: T) => U): ListIndexesCursor<U>;
}

/** The labels the server or the driver puts on errors (`error.hasErrorLabel(...)`). */
export declare const MongoErrorLabel: Readonly<{
  RetryableWriteError: 'RetryableWriteError';
  TransientTransactionError: 'TransientTransactionError';
  UnknownTransactionCommitResult: 'UnknownTransactionCommitResult';
  ResumableChangeStreamError: 'ResumableChangeStreamError';
  HandshakeError: 'HandshakeError';
  ResetPool: 'ResetPool';
  PoolRequestedRetry: 'PoolRequestedRetry';
  InterruptInUseConnections: 'InterruptInUseConnections';
  NoWritesPerformed: 'NoWritesPerformed';
  RetryableError: 'RetryableError';
  SystemOverloadedError: 'SystemOverloadedError';
}>;
export type MongoErrorLabel = (typeof MongoErrorLabel)[keyof typeof MongoErrorLabel];

/**
 * The base class of every error of the driver. The classes and their parents are the
 * official Node.js driver's; some are never raised by this package (it has no
 * sessions, change streams or GridFS yet) and exist for code that names them.
 */
export declare class MongoError extends Error {
  readonly errorLabels: string[];
  code?: number | string;
  cause?: Error;
  hasErrorLabel(label: string): boolean;
  addErrorLabel(label: string): void;
}

/** The server answered with an error (`ok: 0`, or a write error). */
export declare class MongoServerError extends MongoError {
  code: number;
  codeName?: string;
  errmsg: string;
  /** The server's whole reply, when it sent one. */
  errorResponse?: Document;
  errInfo?: Document;
}

export declare class MongoBulkWriteError extends MongoServerError {
  writeErrors: WriteError[];
  /** What the writes that succeeded did. */
  result: BulkWriteResult;
  insertedCount: number;
  matchedCount: number;
  modifiedCount: number;
  deletedCount: number;
  upsertedCount: number;
  insertedIds: { [index: number]: any };
  upsertedIds: { [index: number]: any };
}

export declare class MongoClientBulkWriteError extends MongoServerError {}
export declare class MongoWriteConcernError extends MongoServerError {}

/** An error the driver raised (not the server). */
export declare class MongoDriverError extends MongoError {}

/** The driver's API was used wrongly. */
export declare class MongoAPIError extends MongoDriverError {}
export declare class MongoInvalidArgumentError extends MongoAPIError {}
export declare class MongoCompatibilityError extends MongoAPIError {}
export declare class MongoMissingCredentialsError extends MongoAPIError {}
export declare class MongoMissingDependencyError extends MongoAPIError {}
export declare class MongoTopologyClosedError extends MongoAPIError {}
export declare class MongoClientClosedError extends MongoAPIError {}
export declare class MongoServerClosedError extends MongoAPIError {}
export declare class MongoNotConnectedError extends MongoAPIError {}
export declare class MongoTransactionError extends MongoAPIError {}
export declare class MongoExpiredSessionError extends MongoAPIError {}
export declare class MongoBatchReExecutionError extends MongoAPIError {}
export declare class MongoTailableCursorError extends MongoAPIError {}
/** A cursor's options were changed after it was read. */
export declare class MongoCursorInUseError extends MongoAPIError {}
export declare class MongoCursorExhaustedError extends MongoAPIError {}

/** The driver met a condition it cannot go on from (a wrong SCRAM server signature, say). */
export declare class MongoRuntimeError extends MongoDriverError {}
export declare class MongoStalePrimaryError extends MongoRuntimeError {}
export declare class MongoDecompressionError extends MongoRuntimeError {}
export declare class MongoUnexpectedServerResponseError extends MongoRuntimeError {}
export declare class MongoKerberosError extends MongoRuntimeError {}
export declare class MongoAWSError extends MongoRuntimeError {}
export declare class MongoOIDCError extends MongoRuntimeError {}
export declare class MongoAzureError extends MongoOIDCError {}
export declare class MongoGCPError extends MongoOIDCError {}
export declare class MongoClientBulkWriteCursorError extends MongoRuntimeError {}
export declare class MongoClientBulkWriteExecutionError extends MongoRuntimeError {}
export declare class MongoChangeStreamError extends MongoRuntimeError {}
export declare class MongoGridFSStreamError extends MongoRuntimeError {}
export declare class MongoGridFSChunkError extends MongoRuntimeError {}

/** The connection string, or the options its SRV and TXT records add, is invalid. */
export declare class MongoParseError extends MongoDriverError {}
export declare class MongoWaitQueueTimeoutError extends MongoDriverError {}
/**
 * The operation's `timeoutMS` passed (the `timeoutMS` connection string option); `cause`
 * is what the deadline cut (a server selection, a connection, a read), if anything.
 */
export declare class MongoOperationTimeoutError extends MongoDriverError {
  cause?: MongoError;
}

export declare class MongoNetworkError extends MongoError {}
export declare class MongoNetworkTimeoutError extends MongoNetworkError {}
export declare class MongoPoolClearedError extends MongoNetworkError {}

export declare class MongoSystemError extends MongoError {}
export declare class MongoServerSelectionError extends MongoSystemError {}

export default MongoClient;
