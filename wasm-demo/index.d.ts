// Types of the anymongo npm package: the whole public surface, shaped like the
// official Node.js driver's (7.x) and generic over the document type as its are
// (Filter<TSchema>, UpdateFilter<TSchema>, WithId<TSchema>...), but written for this
// package's API: only what js/*.js exports and does is declared, so that code that
// type-checks against these types does not call what is not there. BSON values are
// the `bson` package's classes, re-exported.
//
// The same file is the CommonJS entry's types (build.sh copies it to pkg/node.d.cts).
// It names Web Streams (ReadableStream, WritableStream), `fetch` and
// `Symbol.asyncDispose`: a project checking it needs the DOM library or @types/node,
// and `esnext.disposable` (TypeScript 5.2+), as it does for the Node driver's types.
import type { Binary, Document, Long, ObjectId, ObjectIdLike, Timestamp } from 'bson';
import type { BSONRegExp, BSONType, Decimal128, Double, Int32 } from 'bson';

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
  /**
   * Whether the connection is still open with nothing unread (optional, answered at
   * once). The driver asks it of a connection that sat idle in the pool for a second
   * and opens another when the answer is false (the server or a middlebox closed it);
   * without it, an idle connection closed by the other side fails the next command.
   */
  isOpenAndIdle?(): boolean;
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
  /**
   * A host's addresses (optional), for names the runtime's own resolver does not
   * know: the Node.js and Workers transports connect to what it gives instead of
   * resolving the name themselves (`nameServers` of `anymongo/transports/node`,
   * `dnsOverHttps({ addresses: true })`). Node.js still checks the TLS certificate
   * against the name; a Worker's socket checks it against the address.
   */
  lookup?(host: string): Promise<string[]>;
}

/**
 * SRV and TXT look-ups over DNS-over-HTTPS (the `application/dns-json` form), for a
 * transport on a host without a DNS module; Workers' transport uses it with the
 * default endpoint, `https://cloudflare-dns.com/dns-query`. With `addresses: true`,
 * also `lookup` (the hosts' A and AAAA records, asked at once and kept for their TTL).
 *
 * ```js
 * const transport = { ...myTransport, ...dnsOverHttps({ endpoint: 'https://dns.google/resolve' }) };
 * ```
 */
export declare function dnsOverHttps(options?: {
  endpoint?: string;
  fetch?: typeof globalThis.fetch;
  addresses?: false;
}): Required<Pick<Transport, 'resolveSrv' | 'resolveTxt'>>;
export declare function dnsOverHttps(options: {
  endpoint?: string;
  fetch?: typeof globalThis.fetch;
  addresses: true;
}): Required<Pick<Transport, 'resolveSrv' | 'resolveTxt' | 'lookup'>>;

// ---------------------------------------------------------------------------------
// Typing of documents, as the Node driver's: a Collection<TSchema> checks the fields
// that its filters, updates and inserts name against TSchema, and leaves the others
// (dotted paths, operators) free, as the server does.
// ---------------------------------------------------------------------------------

/** The type of `_id` of TSchema: its declared type, else ObjectId (the driver's default). */
export type InferIdType<TSchema> = TSchema extends { _id: infer IdType }
  ? Record<any, never> extends IdType
    ? never
    : IdType
  : TSchema extends { _id?: infer IdType }
    ? unknown extends IdType
      ? ObjectId
      : IdType
    : ObjectId;

/** Omit that distributes over a union and leaves an indexed type (Document) as it is. */
export type EnhancedOmit<TRecordOrUnion, KeyUnion> = string extends keyof TRecordOrUnion
  ? TRecordOrUnion
  : TRecordOrUnion extends any
    ? Pick<TRecordOrUnion, Exclude<keyof TRecordOrUnion, KeyUnion>>
    : never;

/** TSchema as read back: `_id` is always there. */
export type WithId<TSchema> = EnhancedOmit<TSchema, '_id'> & { _id: InferIdType<TSchema> };

/** TSchema without `_id` (a replacement document). */
export type WithoutId<TSchema> = Omit<TSchema, '_id'>;

/** TSchema with `_id` optional. */
export type OptionalId<TSchema> = EnhancedOmit<TSchema, '_id'> & { _id?: InferIdType<TSchema> };

/**
 * What an insert takes: `_id` optional (the driver adds an ObjectId), unless TSchema
 * requires one, whose type the driver cannot make up.
 */
export type OptionalUnlessRequiredId<TSchema> = TSchema extends { _id: any } ? TSchema : OptionalId<TSchema>;

/** The element type of an array type, or the type itself. */
export type Flatten<Type> = Type extends ReadonlyArray<infer Item> ? Item : Type;

/** A string field may also be matched by a regular expression. */
export type RegExpOrString<T> = T extends string ? BSONRegExp | RegExp | T : T;
/** An array field may be matched by the whole array or by one element. */
export type AlternativeType<T> = T extends ReadonlyArray<infer U> ? T | RegExpOrString<U> : RegExpOrString<T>;

/** A bit mask of `$bitsAllSet` and the like. */
export type BitwiseFilter = number | Binary | ReadonlyArray<number>;

/** A Document that is not mistaken for an ObjectId (whose fields it may not have). */
export type NonObjectIdLikeDocument = { [key in keyof ObjectIdLike]?: never } & Document;

/** The query operators on a field of type TValue. */
export interface FilterOperators<TValue> extends NonObjectIdLikeDocument {
  $eq?: TValue;
  $gt?: TValue;
  $gte?: TValue;
  $in?: ReadonlyArray<TValue>;
  $lt?: TValue;
  $lte?: TValue;
  $ne?: TValue;
  $nin?: ReadonlyArray<TValue>;
  $not?: TValue extends string ? FilterOperators<TValue> | RegExp : FilterOperators<TValue>;
  $exists?: boolean;
  $type?: BSONType | keyof typeof BSONType;
  $expr?: Record<string, any>;
  $jsonSchema?: Record<string, any>;
  $mod?: TValue extends number ? [number, number] : never;
  $regex?: TValue extends string ? RegExp | BSONRegExp | string : never;
  $options?: TValue extends string ? string : never;
  $geoIntersects?: { $geometry: Document };
  $geoWithin?: Document;
  $near?: Document;
  $nearSphere?: Document;
  $maxDistance?: number;
  $all?: ReadonlyArray<any>;
  $elemMatch?: Document;
  $size?: TValue extends ReadonlyArray<any> ? number : never;
  $bitsAllClear?: BitwiseFilter;
  $bitsAllSet?: BitwiseFilter;
  $bitsAnyClear?: BitwiseFilter;
  $bitsAnySet?: BitwiseFilter;
  $rand?: Record<string, never>;
}

/** What a filter may give for a field of type T: a value, or operators on it. */
export type Condition<T> = AlternativeType<T> | FilterOperators<AlternativeType<T>>;

/** The operators at the top of a filter. */
export interface RootFilterOperators<TSchema> extends Document {
  $and?: Filter<TSchema>[];
  $nor?: Filter<TSchema>[];
  $or?: Filter<TSchema>[];
  $text?: { $search: string; $language?: string; $caseSensitive?: boolean; $diacriticSensitive?: boolean };
  $where?: string | ((this: TSchema) => boolean);
  $comment?: string | Document;
}

/**
 * A query filter: the fields of TSchema with values or operators of their types; other
 * keys (dotted paths into subdocuments, unknown fields) are not checked.
 */
export type Filter<TSchema> = {
  [P in keyof WithId<TSchema>]?: Condition<WithId<TSchema>[P]>;
} & RootFilterOperators<WithId<TSchema>>;

/** Integer values of BSON. */
export type IntegerType = number | Int32 | Long | bigint;
/** Numeric values of BSON. */
export type NumericType = IntegerType | Decimal128 | Double;

/** Whether Type is `any`. */
export type IsAny<Type, ResultIfAny, ResultIfNotAny> = true extends false & Type ? ResultIfAny : ResultIfNotAny;
/** The keys of TSchema whose values are of Type. */
export type KeysOfAType<TSchema, Type> = {
  [key in keyof TSchema]: NonNullable<TSchema[key]> extends Type ? key : never;
}[keyof TSchema];
/** The keys of TSchema whose values are not of Type. */
export type KeysOfOtherType<TSchema, Type> = {
  [key in keyof TSchema]: NonNullable<TSchema[key]> extends Type ? never : key;
}[keyof TSchema];
/** The fields of TSchema of FieldType, each given an AssignableType. */
export type AcceptedFields<TSchema, FieldType, AssignableType> = {
  readonly [key in KeysOfAType<TSchema, FieldType>]?: AssignableType;
};
/** The fields of TSchema not of FieldType, which an operator on FieldType may not name. */
export type NotAcceptedFields<TSchema, FieldType> = {
  readonly [key in KeysOfOtherType<TSchema, FieldType>]?: never;
};
/** An update operator's argument: the fields of FieldType (and any other path). */
export type OnlyFieldsOfType<TSchema, FieldType = any, AssignableType = FieldType> = IsAny<
  TSchema[keyof TSchema],
  AssignableType extends FieldType ? Record<string, FieldType> : Record<string, AssignableType>,
  AcceptedFields<TSchema, FieldType, AssignableType> & NotAcceptedFields<TSchema, FieldType> & Record<string, AssignableType>
>;
/** `$set`'s argument: fields of TSchema with values of their types, and any other path. */
export type MatchKeysAndValues<TSchema> = Readonly<Partial<TSchema>> & Record<string, any>;

export type ArrayOperator<Type> = { $each?: Array<Flatten<Type>>; $slice?: number; $position?: number; $sort?: Sort };
export type AddToSetOperators<Type> = { $each?: Array<Flatten<Type>> };
export type SetFields<TSchema> = ({
  readonly [key in KeysOfAType<TSchema, ReadonlyArray<any> | undefined>]?:
    | OptionalId<Flatten<TSchema[key]>>
    | AddToSetOperators<Array<OptionalId<Flatten<TSchema[key]>>>>;
} & IsAny<TSchema[keyof TSchema], object, NotAcceptedFields<TSchema, ReadonlyArray<any> | undefined>>) & {
  readonly [key: string]: AddToSetOperators<any> | any;
};
export type PushOperator<TSchema> = ({
  readonly [key in KeysOfAType<TSchema, ReadonlyArray<any>>]?: Flatten<TSchema[key]> | ArrayOperator<Array<Flatten<TSchema[key]>>>;
} & NotAcceptedFields<TSchema, ReadonlyArray<any>>) & {
  readonly [key: string]: ArrayOperator<any> | any;
};
export type PullOperator<TSchema> = ({
  readonly [key in KeysOfAType<TSchema, ReadonlyArray<any>>]?: Partial<Flatten<TSchema[key]>> | FilterOperators<Flatten<TSchema[key]>>;
} & NotAcceptedFields<TSchema, ReadonlyArray<any>>) & {
  readonly [key: string]: FilterOperators<any> | any;
};
export type PullAllOperator<TSchema> = ({
  readonly [key in KeysOfAType<TSchema, ReadonlyArray<any>>]?: TSchema[key];
} & NotAcceptedFields<TSchema, ReadonlyArray<any>>) & {
  readonly [key: string]: ReadonlyArray<any>;
};

/** An update document: the update operators, each checked against TSchema's fields. */
export type UpdateFilter<TSchema> = {
  $currentDate?: OnlyFieldsOfType<TSchema, Date | Timestamp, true | { $type: 'date' | 'timestamp' }>;
  $inc?: OnlyFieldsOfType<TSchema, NumericType | undefined>;
  $min?: MatchKeysAndValues<TSchema>;
  $max?: MatchKeysAndValues<TSchema>;
  $mul?: OnlyFieldsOfType<TSchema, NumericType | undefined>;
  $rename?: Record<string, string>;
  $set?: MatchKeysAndValues<TSchema>;
  $setOnInsert?: MatchKeysAndValues<TSchema>;
  $unset?: OnlyFieldsOfType<TSchema, any, '' | true | 1>;
  $addToSet?: SetFields<TSchema>;
  $pop?: OnlyFieldsOfType<TSchema, ReadonlyArray<any>, 1 | -1>;
  $pull?: PullOperator<TSchema>;
  $push?: PushOperator<TSchema>;
  $pullAll?: PullAllOperator<TSchema>;
  $bit?: OnlyFieldsOfType<TSchema, NumericType | undefined, { and: IntegerType } | { or: IntegerType } | { xor: IntegerType }>;
} & Document;

/** The order of one sort key. */
export type SortDirection = 1 | -1 | 'asc' | 'desc' | 'ascending' | 'descending' | { readonly $meta: string };
/** A sort: `{ field: 1 }`, a field name, `[field, direction]` pairs or a Map of them. */
export type Sort =
  | string
  | Exclude<SortDirection, { readonly $meta: string }>
  | ReadonlyArray<string>
  | { readonly [key: string]: SortDirection }
  | ReadonlyMap<string, SortDirection>
  | ReadonlyArray<readonly [string, SortDirection]>
  | readonly [string, SortDirection];

/** The fields to return (`{ field: 1 }`) or leave out (`{ field: 0 }`), or expressions. */
export type Projection = Document;

/** An index hint: the index's name or key pattern. */
export type Hint = string | Document;

/** A collation (`{ locale: 'fr', strength: 2 }`). */
export interface CollationOptions {
  locale: string;
  caseLevel?: boolean;
  caseFirst?: string;
  strength?: number;
  numericOrdering?: boolean;
  alternate?: string;
  maxVariable?: string;
  backwards?: boolean;
  normalization?: boolean;
}

// ---------------------------------------------------------------------------------
// Read preference, read concern, write concern (js/concerns.js).
// ---------------------------------------------------------------------------------

export type ReadPreferenceMode = 'primary' | 'primaryPreferred' | 'secondary' | 'secondaryPreferred' | 'nearest';
export type TagSet = { [key: string]: string };
export interface HedgeOptions {
  enabled?: boolean;
}
export interface ReadPreferenceOptions {
  maxStalenessSeconds?: number;
  hedge?: HedgeOptions;
}
/** A read preference given as an object: the mode and its options. */
export interface ReadPreferenceFromOptions extends ReadPreferenceOptions {
  mode: ReadPreferenceMode;
  tags?: TagSet[];
  /** The same as `tags`, as the core names them. */
  tagSets?: TagSet[];
}
/** Where an option takes a read preference: the class, or its mode. */
export type ReadPreferenceLike = ReadPreference | ReadPreferenceMode;

/** Where reads go: `new ReadPreference('secondary', [{ dc: 'east' }], { maxStalenessSeconds: 90 })`. */
export declare class ReadPreference {
  mode: ReadPreferenceMode;
  tags?: TagSet[];
  hedge?: HedgeOptions;
  maxStalenessSeconds?: number;
  static PRIMARY: 'primary';
  static PRIMARY_PREFERRED: 'primaryPreferred';
  static SECONDARY: 'secondary';
  static SECONDARY_PREFERRED: 'secondaryPreferred';
  static NEAREST: 'nearest';
  static primary: ReadPreference;
  static primaryPreferred: ReadPreference;
  static secondary: ReadPreference;
  static secondaryPreferred: ReadPreference;
  static nearest: ReadPreference;
  /** Throws a MongoInvalidArgumentError for a mode that is not one of ReadPreferenceMode. */
  constructor(mode: ReadPreferenceMode, tags?: TagSet[], options?: ReadPreferenceOptions);
  static isValid(mode: string): boolean;
  static fromString(mode: string): ReadPreference;
  /** The read preference of `options.readPreference` (a mode, an object or a ReadPreference). */
  static fromOptions(options?: {
    readPreference?: ReadPreferenceLike | ReadPreferenceFromOptions;
    readPreferenceTags?: TagSet[];
  }): ReadPreference | undefined;
  isValid(mode?: string): boolean;
  /** Whether reads may go to a secondary. */
  secondaryOk(): boolean;
  equals(readPreference: ReadPreference): boolean;
  toJSON(): Document;
}

export type ReadConcernLevel = 'local' | 'majority' | 'linearizable' | 'available' | 'snapshot';
/** Where an option takes a read concern: the class, `{ level }`, or the level. */
export type ReadConcernLike = ReadConcern | { level: ReadConcernLevel } | ReadConcernLevel;

/** How fresh and durable reads are: `new ReadConcern('majority')`. */
export declare class ReadConcern {
  level: ReadConcernLevel | string;
  static LOCAL: 'local';
  static MAJORITY: 'majority';
  static AVAILABLE: 'available';
  static LINEARIZABLE: 'linearizable';
  static SNAPSHOT: 'snapshot';
  constructor(level: ReadConcernLevel);
  static fromOptions(options?: { readConcern?: ReadConcernLike; level?: ReadConcernLevel }): ReadConcern | undefined;
  toJSON(): Document;
}

/** A write concern given as an object (the Node driver's names, and the server's `j`, `wtimeout`). */
export interface WriteConcernSettings {
  w?: W;
  wtimeoutMS?: number;
  journal?: boolean;
  j?: boolean;
  wtimeout?: number;
}
/** How many members acknowledge a write: a number, `'majority'`, or a tag set's name. */
export type W = number | 'majority' | (string & {});

/** How writes are acknowledged: `new WriteConcern('majority', 5000, true)`. */
export declare class WriteConcern {
  readonly w?: W;
  readonly wtimeoutMS?: number;
  readonly journal?: boolean;
  /** The same as `wtimeoutMS`, as the server names it. */
  readonly wtimeout?: number;
  /** The same as `journal`, as the server names it. */
  readonly j?: boolean;
  constructor(w?: W, wtimeoutMS?: number, journal?: boolean);
  static fromOptions(options?: WriteConcernSettings | { writeConcern?: WriteConcern | WriteConcernSettings }): WriteConcern | undefined;
}

// ---------------------------------------------------------------------------------
// Options.
// ---------------------------------------------------------------------------------

/**
 * The versioned API (`serverApi: '1'` or `{ version: '1', strict: true }`): sent with
 * every command.
 */
export interface ServerApi {
  version: ServerApiVersion;
  strict?: boolean;
  deprecationErrors?: boolean;
}
/** The versions of the API (a type only: the package has no `ServerApiVersion` object). */
export type ServerApiVersion = '1';

/**
 * Options of MongoClient: the connection string options (merged into the URI, so they
 * take strings, numbers and booleans, as in a URI), and those only code can give.
 */
/**
 * The Node driver's options for its own Node.js sockets and TLS contexts (`family`,
 * `noDelay`, `ca`, `cert`, `key`, `secureContext`...), its logger and its internals:
 * accepted, as there, with no effect (use the connection string's `tls*` options).
 */
export type NodeDriverOnlyOptionName =
  | 'family'
  | 'autoSelectFamily'
  | 'autoSelectFamilyAttemptTimeout'
  | 'noDelay'
  | 'keepAliveInitialDelay'
  | 'localAddress'
  | 'localPort'
  | 'hints'
  | 'lookup'
  | 'ca'
  | 'cert'
  | 'key'
  | 'crl'
  | 'pfx'
  | 'passphrase'
  | 'ciphers'
  | 'ecdhCurve'
  | 'secureContext'
  | 'secureProtocol'
  | 'servername'
  | 'minDHSize'
  | 'pskCallback'
  | 'enableTrace'
  | 'requestCert'
  | 'rejectUnauthorized'
  | 'checkServerIdentity'
  | 'ALPNProtocols'
  | 'SNICallback'
  | 'requestOCSP'
  | 'allowPartialTrustChain'
  | 'session'
  | 'index'
  | 'name'
  | 'mongodbLogPath'
  | 'mongodbLogComponentSeverities'
  | 'mongodbLogMaxDocumentLength'
  | 'connectionType'
  | 'srvPoller'
  | 'srvHostValidator'
  | 'runtimeAdapters'
  | 'minInternalBufferSize'
  | '__skipPingOnConnect';

/**
 * A client's OpenTelemetry options (open-telemetry.md, the option `tracing`). Left
 * unset, `enabled` is true when the environment variable
 * `OTEL_NODE_INSTRUMENTATION_MONGODB_ENABLED` is `1`, `true` or `yes`, and
 * `queryTextMaxLength` is `OTEL_NODE_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH`.
 */
export interface TracingOptions {
  /** Whether the client traces (default: the environment variable, else false). */
  enabled?: boolean;
  /**
   * How many characters of each command the `db.query.text` attribute of its span
   * keeps; 0 (the default) leaves the attribute out.
   */
  queryTextMaxLength?: number;
}

export interface MongoClientOptions extends BSONSerializeOptions, Partial<Record<NodeDriverOnlyOptionName, unknown>> {
  /** Credentials, instead of the connection string's. */
  auth?: { username: string; password?: string };
  /** The host's sockets (default: the runtime's). */
  transport?: Transport;
  /**
   * Monitor servers in the background on the event loop (default: true on Node.js,
   * Deno and Bun; false on Workers, where monitoring happens before each server selection).
   */
  backgroundMonitoring?: boolean;
  /** Emit `commandStarted`, `commandSucceeded` and `commandFailed`. */
  monitorCommands?: boolean;
  /** The versioned API: `'1'`, or `{ version: '1', strict, deprecationErrors }`. */
  serverApi?: ServerApi | ServerApiVersion;
  /** A library wrapping the driver, appended to the handshake's `client.driver` and `client.platform`. */
  driverInfo?: DriverInfo;
  /**
   * OpenTelemetry spans of operations and commands through `@opentelemetry/api` (an
   * optional peer dependency; without it, no spans): see {@link TracingOptions}.
   */
  tracing?: TracingOptions;
  /** The default database of `client.db()` (instead of the connection string's). */
  dbName?: string;
  /** Makes the `_id` of inserted documents that have none (default: a new ObjectId). */
  pkFactory?: PkFactory;
  /**
   * Client-side field level encryption: refused (MongoCompatibilityError), as it needs
   * the `mongodb-client-encryption` native library.
   */
  autoEncryption?: never;
  /** The default read preference (the connection string's `readPreference`, `readPreferenceTags`, `maxStalenessSeconds`). */
  readPreference?: ReadPreferenceLike | ReadPreferenceFromOptions;
  /** The default read concern (`readConcernLevel`). */
  readConcern?: ReadConcernLike;
  /** The default write concern (`w`, `journal`, `wtimeoutMS`). */
  writeConcern?: WriteConcern | WriteConcernSettings;

  // The connection string options the core knows (case as the spec writes them).
  appName?: string;
  authMechanism?: string;
  /** `PROP:value,PROP:value`, as in a URI, or an object of them. */
  authMechanismProperties?: string | Record<string, string | boolean>;
  authSource?: string;
  /** A comma-separated list (`zstd,zlib,snappy`), as in a URI, or an array. */
  compressors?: string | string[];
  connectTimeoutMS?: number;
  directConnection?: boolean;
  enableOverloadRetargeting?: boolean;
  heartbeatFrequencyMS?: number;
  journal?: boolean;
  loadBalanced?: boolean;
  localThresholdMS?: number;
  maxAdaptiveRetries?: number;
  maxConnecting?: number;
  maxIdleTimeMS?: number;
  maxPoolSize?: number;
  maxStalenessSeconds?: number;
  minPoolSize?: number;
  proxyHost?: string;
  proxyPassword?: string;
  proxyPort?: number;
  proxyUsername?: string;
  readConcernLevel?: ReadConcernLevel;
  /** `dc:ny,rack:1`, as in a URI (one tag set), or an array of tag sets. */
  readPreferenceTags?: string | TagSet[];
  replicaSet?: string;
  retryReads?: boolean;
  retryWrites?: boolean;
  serverMonitoringMode?: 'auto' | 'poll' | 'stream';
  serverSelectionTimeoutMS?: number;
  serverSelectionTryOnce?: boolean;
  socketTimeoutMS?: number;
  srvAllowedHostsSuffix?: string;
  srvMaxHosts?: number;
  srvServiceName?: string;
  /** The client's default bound on each operation (Client Side Operations Timeout); 0 for none. */
  timeoutMS?: number;
  tls?: boolean;
  /** The same as `tls`, as older URIs name it. */
  ssl?: boolean;
  tlsAllowInvalidCertificates?: boolean;
  tlsAllowInvalidHostnames?: boolean;
  tlsCAFile?: string;
  tlsCertificateKeyFile?: string;
  tlsCertificateKeyFilePassword?: string;
  tlsDisableCertificateRevocationCheck?: boolean;
  tlsDisableOCSPEndpointCheck?: boolean;
  tlsInsecure?: boolean;
  w?: W;
  waitQueueTimeoutMS?: number;
  wtimeoutMS?: number;
  /** The same as `wtimeoutMS`, as the spec's list spells it. */
  wTimeoutMS?: number;
  zlibCompressionLevel?: number;
}

/** The maker of inserted documents' `_id` (`pkFactory`). */
export interface PkFactory {
  createPk(): any;
}

/** A library wrapping the driver (`driverInfo`): appended to the handshake metadata after a `|`. */
export interface DriverInfo {
  name?: string;
  version?: string;
  platform?: string;
}

/**
 * The Node driver's BSON options, given to a MongoClient, a Db, a Collection or one
 * operation; each level takes what it does not set from the one above.
 */
export interface BSONSerializeOptions {
  /** Write an undefined value as nothing rather than as null (default false, as the Node driver). */
  ignoreUndefined?: boolean;
  serializeFunctions?: boolean;
  /** Read int64 values as `bigint`. */
  useBigInt64?: boolean;
  /** Read int64 values as numbers when they fit (default true); false: as Long. */
  promoteLongs?: boolean;
  /** Read Int32, Double... as JavaScript values (default true). */
  promoteValues?: boolean;
  /** Read Binary values as Buffers. */
  promoteBuffers?: boolean;
  /** Read regular expressions as BSONRegExp. */
  bsonRegExp?: boolean;
  /** A cursor's documents as their BSON bytes. */
  raw?: boolean;
  fieldsAsRaw?: Document;
  /** Check that strings are valid UTF-8 (default true). */
  enableUtf8Validation?: boolean;
}

/** The resolved BSON options of a client, database or collection (`bsonOptions`). */
export type BSONOptions = Required<BSONSerializeOptions>;

/** Options every operation takes. */
export interface OperationOptions extends BSONSerializeOptions {
  /** Runs the operation in the session (and its transaction, if one is open). */
  session?: ClientSession;
  /** This operation's timeoutMS (instead of the client's): 0 for no limit. */
  timeoutMS?: number;
  readPreference?: ReadPreferenceLike | ReadPreferenceFromOptions;
}

/** Options of a command the driver sends: the concerns, `comment`, `maxTimeMS`. */
export interface CommandOperationOptions extends OperationOptions {
  readConcern?: ReadConcernLike;
  writeConcern?: WriteConcern | WriteConcernSettings;
  comment?: unknown;
  maxTimeMS?: number;
  /**
   * Internal, for MongoDB's own teams: operate on the raw data of time series buckets.
   * Sent only to MongoDB 8.2 and later (the CRUD spec's `rawData`); may change or go.
   */
  rawData?: boolean;
}

/** Options of `db.command`, `admin.command`, `runCursorCommand` and the drop commands. */
export interface RunCommandOptions {
  session?: ClientSession;
  timeoutMS?: number;
  readPreference?: ReadPreferenceLike | ReadPreferenceFromOptions;
}

/** The concerns a Db, a Collection or a GridFSBucket gives its operations. */
export interface DbOptions extends BSONSerializeOptions {
  /** Makes the `_id` of inserted documents that have none, over the client's. */
  pkFactory?: PkFactory;
  readPreference?: ReadPreferenceLike | ReadPreferenceFromOptions;
  readConcern?: ReadConcernLike;
  writeConcern?: WriteConcern | WriteConcernSettings;
}
export type CollectionOptions = DbOptions;

export interface ListDatabasesOptions extends RunCommandOptions {
  nameOnly?: boolean;
  filter?: Document;
  authorizedDatabases?: boolean;
  comment?: unknown;
}

export interface ListDatabasesResult {
  databases: ({ name: string; sizeOnDisk?: number; empty?: boolean } & Document)[];
  totalSize?: number;
  totalSizeMb?: number;
  ok: 1 | 0;
}

export interface ListCollectionsOptions extends RunCommandOptions {
  nameOnly?: boolean;
  authorizedCollections?: boolean;
  batchSize?: number;
  comment?: unknown;
}

export interface CollectionInfo extends Document {
  name: string;
  type?: string;
  options?: Document;
  info?: { readOnly?: false; uuid?: Binary };
  idIndex?: Document;
}

/** `options`: the `create` command's fields, and the driver's `session`, `timeoutMS`, `readPreference`. */
export interface CreateCollectionOptions extends RunCommandOptions {
  capped?: boolean;
  size?: number;
  max?: number;
  validator?: Document;
  validationLevel?: string;
  validationAction?: string;
  timeseries?: Document;
  expireAfterSeconds?: number;
  clusteredIndex?: Document;
  changeStreamPreAndPostImages?: { enabled: boolean };
  viewOn?: string;
  pipeline?: Document[];
  collation?: CollationOptions;
  /** Sent in the command as it is: the server's fields (`w`, `j`, `wtimeout`). */
  writeConcern?: WriteConcernSettings;
  [option: string]: unknown;
}

export interface RenameOptions extends RunCommandOptions {
  /** Drop a collection already named like the target (otherwise its existence is an error). */
  dropTarget?: boolean;
}

export type DropCollectionOptions = RunCommandOptions;
export type DropDatabaseOptions = RunCommandOptions;
export type DropIndexesOptions = RunCommandOptions;

export interface InsertOneOptions extends CommandOperationOptions {
  bypassDocumentValidation?: boolean;
}

export interface BulkWriteOptions extends CommandOperationOptions {
  bypassDocumentValidation?: boolean;
  /** Stop at the first failed write (default true). */
  ordered?: boolean;
  let?: Document;
}

export interface UpdateOptions extends CommandOperationOptions {
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: CollationOptions;
  hint?: Hint;
  let?: Document;
  sort?: Sort;
  bypassDocumentValidation?: boolean;
}

export interface ReplaceOptions extends CommandOperationOptions {
  upsert?: boolean;
  collation?: CollationOptions;
  hint?: Hint;
  let?: Document;
  sort?: Sort;
  bypassDocumentValidation?: boolean;
}

export interface DeleteOptions extends CommandOperationOptions {
  collation?: CollationOptions;
  hint?: Hint;
  let?: Document;
}

export interface FindOptions extends CommandOperationOptions {
  /** Answer with the server's plan for the query instead (a verbosity, or true for 'allPlansExecution'). */
  explain?: boolean | 'queryPlanner' | 'executionStats' | 'allPlansExecution';
  projection?: Projection;
  sort?: Sort;
  limit?: number;
  skip?: number;
  batchSize?: number;
  hint?: Hint;
  collation?: CollationOptions;
  allowDiskUse?: boolean;
  let?: Document;
  min?: Document;
  max?: Document;
  returnKey?: boolean;
  showRecordId?: boolean;
  noCursorTimeout?: boolean;
  allowPartialResults?: boolean;
  /** A tailable cursor (on a capped collection): it stays open at the end of the results. */
  tailable?: boolean;
  /** With `tailable`, a getMore waits (`maxAwaitTimeMS`) for new documents. */
  awaitData?: boolean;
  maxAwaitTimeMS?: number;
}

export interface FindOneAndDeleteOptions extends CommandOperationOptions {
  projection?: Projection;
  sort?: Sort;
  collation?: CollationOptions;
  hint?: Hint;
  let?: Document;
  /** The server's reply (a ModifyResult: `value`, `lastErrorObject`, `ok`) instead of the document. */
  includeResultMetadata?: boolean;
}

export interface FindOneAndReplaceOptions extends FindOneAndDeleteOptions {
  /** The document as it was before the write (default) or after. */
  returnDocument?: 'before' | 'after';
  upsert?: boolean;
  bypassDocumentValidation?: boolean;
}

export interface FindOneAndUpdateOptions extends FindOneAndReplaceOptions {
  arrayFilters?: Document[];
}

/** findOneAndX's result with `includeResultMetadata: true`: the server's reply. */
export interface ModifyResult<TSchema = Document> {
  value: WithId<TSchema> | null;
  /** `n` (documents written), `updatedExisting`, `upserted` (the `_id` of an upsert). */
  lastErrorObject?: Document;
  ok: 0 | 1;
}

export interface AggregateOptions extends CommandOperationOptions {
  allowDiskUse?: boolean;
  batchSize?: number;
  bypassDocumentValidation?: boolean;
  collation?: CollationOptions;
  hint?: Hint;
  let?: Document;
  maxAwaitTimeMS?: number;
}

export interface CountDocumentsOptions extends CommandOperationOptions {
  skip?: number;
  limit?: number;
  collation?: CollationOptions;
  hint?: Hint;
}

export type EstimatedDocumentCountOptions = CommandOperationOptions;

export interface DistinctOptions extends CommandOperationOptions {
  collation?: CollationOptions;
  hint?: Hint;
}

/**
 * The options of an index (`unique`, `expireAfterSeconds`...), and any other the server
 * knows, sent as they are.
 */
export interface IndexOptions {
  name?: string;
  unique?: boolean;
  sparse?: boolean;
  background?: boolean;
  expireAfterSeconds?: number;
  partialFilterExpression?: Document;
  collation?: CollationOptions;
  hidden?: boolean;
  weights?: Document;
  default_language?: string;
  language_override?: string;
  textIndexVersion?: number;
  wildcardProjection?: Document;
  storageEngine?: Document;
  '2dsphereIndexVersion'?: number;
  bits?: number;
  min?: number;
  max?: number;
  version?: number;
  [indexOption: string]: unknown;
}

/** Options of createIndex (the index's and the command's) and createIndexes (the command's). */
export interface CreateIndexesOptions extends IndexOptions, CommandOperationOptions {
  /** How many data-bearing members must build the index before it is ready. */
  commitQuorum?: number | string;
}

/** A key pattern: `{ field: 1 }`, `{ field: 'text' }`, `{ location: '2dsphere' }`. */
export type IndexSpecification = string | { [key: string]: IndexDirection };
export type IndexDirection = -1 | 1 | '2d' | '2dsphere' | 'text' | 'geoHaystack' | 'hashed' | number;

/** One index of `createIndexes`. */
export interface IndexDescription extends IndexOptions {
  key: { [key: string]: IndexDirection };
}

/** An index as listIndexes describes it. */
export interface IndexDescriptionInfo extends Document {
  v?: number;
  key: { [key: string]: IndexDirection };
  name: string;
}
/** `{ name: [[field, direction]...] }`: `indexInformation()`'s default. */
export type IndexDescriptionCompact = Record<string, [name: string, direction: IndexDirection][]>;

export interface ListIndexesOptions extends RunCommandOptions {
  batchSize?: number;
  comment?: unknown;
}

export interface IndexInformationOptions extends ListIndexesOptions {
  /** The descriptions as listIndexes gives them (default for `indexes`), or `{ name: [[field, direction]...] }`. */
  full?: boolean;
}

// ---------------------------------------------------------------------------------
// Results.
// ---------------------------------------------------------------------------------

export interface InsertOneResult<TSchema = Document> {
  acknowledged: boolean;
  insertedId: InferIdType<TSchema>;
}

export interface InsertManyResult<TSchema = Document> {
  acknowledged: boolean;
  insertedCount: number;
  insertedIds: { [index: number]: InferIdType<TSchema> };
}

export interface UpdateResult<TSchema extends Document = Document> {
  acknowledged: boolean;
  matchedCount: number;
  modifiedCount: number;
  upsertedCount: number;
  upsertedId: InferIdType<TSchema> | null;
}

export interface DeleteResult {
  acknowledged: boolean;
  deletedCount: number;
}

/** The server's entry of a failed write of a bulk write, and the write (`op`). */
export interface BulkWriteOperationError {
  index: number;
  code: number;
  errmsg: string;
  errInfo: Document;
  op: Document;
}

/** A failed write of a bulk write (`writeErrors` of a MongoBulkWriteError). */
export declare class WriteError {
  constructor(err: BulkWriteOperationError);
  err: BulkWriteOperationError;
  readonly code: number;
  /** The index of the write among those the bulk write was given. */
  readonly index: number;
  readonly errmsg: string | undefined;
  readonly errInfo: Document | undefined;
  /** The write that failed: an insert's document, else its `{ q, u }` or `{ q, limit }` statement. */
  getOperation(): Document;
  toJSON(): { code: number; index: number; errmsg?: string; op: Document };
  toString(): string;
}

/** A write concern error of a bulk write. */
export declare class WriteConcernError {
  constructor(error: { code: number; errmsg: string; errInfo?: Document });
  readonly code: number | undefined;
  readonly errmsg: string | undefined;
  readonly errInfo: Document | undefined;
  toJSON(): { code: number; errmsg: string; errInfo?: Document };
  toString(): string;
}

/** The raw result of a bulk write (`BulkWriteResult.result`). */
export interface BulkResult {
  ok: number;
  writeErrors: WriteError[];
  writeConcernErrors: WriteConcernError[];
  insertedIds: Document[];
  nInserted: number;
  nUpserted: number;
  nMatched: number;
  nModified: number;
  nRemoved: number;
  upserted: Document[];
}

/** What a bulkWrite did (also the `result` of its MongoBulkWriteError). */
export declare class BulkWriteResult {
  /** As the Node driver's: from the raw result, and whether the writes were ordered. */
  constructor(bulkResult: BulkResult, isOrdered: boolean);
  /** The raw result. */
  readonly result: BulkResult;
  readonly insertedCount: number;
  readonly matchedCount: number;
  readonly modifiedCount: number;
  readonly deletedCount: number;
  readonly upsertedCount: number;
  /** The `_id` of each upserted document, by the index of its operation. */
  readonly upsertedIds: { [index: number]: any };
  /** The `_id` of each inserted document, by the index of its operation. */
  readonly insertedIds: { [index: number]: any };
  /** The raw result's `ok`. */
  readonly ok: number;
  isOk(): boolean;
  getRawResponse(): Document;
  /** The `index`-th upsert: `{ index, _id }`, `index` being the write's. */
  getUpsertedIdAt(index: number): Document | undefined;
  hasWriteErrors(): boolean;
  getWriteErrorCount(): number;
  getWriteErrorAt(index: number): WriteError | undefined;
  getWriteErrors(): WriteError[];
  getWriteConcernError(): WriteConcernError | undefined;
  toString(): string;
}

export interface InsertOneModel<TSchema extends Document = Document> {
  document: OptionalId<TSchema>;
}
export interface ReplaceOneModel<TSchema extends Document = Document> {
  filter: Filter<TSchema>;
  replacement: WithoutId<TSchema>;
  upsert?: boolean;
  collation?: CollationOptions;
  hint?: Hint;
  sort?: Sort;
}
export interface UpdateOneModel<TSchema extends Document = Document> {
  filter: Filter<TSchema>;
  update: UpdateFilter<TSchema> | Document[];
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: CollationOptions;
  hint?: Hint;
  sort?: Sort;
}
export interface UpdateManyModel<TSchema extends Document = Document> {
  filter: Filter<TSchema>;
  update: UpdateFilter<TSchema> | Document[];
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: CollationOptions;
  hint?: Hint;
}
export interface DeleteOneModel<TSchema extends Document = Document> {
  filter: Filter<TSchema>;
  collation?: CollationOptions;
  hint?: Hint;
}
export interface DeleteManyModel<TSchema extends Document = Document> {
  filter: Filter<TSchema>;
  collation?: CollationOptions;
  hint?: Hint;
}

/** One write of `collection.bulkWrite`. */
export type AnyBulkWriteOperation<TSchema extends Document = Document> =
  | { insertOne: InsertOneModel<TSchema> }
  | { replaceOne: ReplaceOneModel<TSchema> }
  | { updateOne: UpdateOneModel<TSchema> }
  | { updateMany: UpdateManyModel<TSchema> }
  | { deleteOne: DeleteOneModel<TSchema> }
  | { deleteMany: DeleteManyModel<TSchema> };

/** What a model of `client.bulkWrite` has in common: `'db.collection'`. */
export interface ClientWriteModel {
  namespace: string;
}
export interface ClientInsertOneModel<TSchema> extends ClientWriteModel {
  name: 'insertOne';
  document: OptionalId<TSchema>;
}
export interface ClientReplaceOneModel<TSchema> extends ClientWriteModel {
  name: 'replaceOne';
  filter: Filter<TSchema>;
  replacement: WithoutId<TSchema>;
  upsert?: boolean;
  collation?: CollationOptions;
  hint?: Hint;
  sort?: Sort;
}
export interface ClientUpdateOneModel<TSchema> extends ClientWriteModel {
  name: 'updateOne';
  filter: Filter<TSchema>;
  update: UpdateFilter<TSchema> | Document[];
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: CollationOptions;
  hint?: Hint;
  sort?: Sort;
}
export interface ClientUpdateManyModel<TSchema> extends ClientWriteModel {
  name: 'updateMany';
  filter: Filter<TSchema>;
  update: UpdateFilter<TSchema> | Document[];
  upsert?: boolean;
  arrayFilters?: Document[];
  collation?: CollationOptions;
  hint?: Hint;
}
export interface ClientDeleteOneModel<TSchema> extends ClientWriteModel {
  name: 'deleteOne';
  filter: Filter<TSchema>;
  collation?: CollationOptions;
  hint?: Hint;
}
export interface ClientDeleteManyModel<TSchema> extends ClientWriteModel {
  name: 'deleteMany';
  filter: Filter<TSchema>;
  collation?: CollationOptions;
  hint?: Hint;
}
/** One write of `client.bulkWrite`, on documents of TSchema. */
export type AnyClientBulkWriteModel<TSchema extends Document = Document> =
  | ClientInsertOneModel<TSchema>
  | ClientReplaceOneModel<TSchema>
  | ClientUpdateOneModel<TSchema>
  | ClientUpdateManyModel<TSchema>
  | ClientDeleteOneModel<TSchema>
  | ClientDeleteManyModel<TSchema>;
/**
 * One write of `client.bulkWrite`, typed by its namespace when SchemaMap names the
 * namespaces' schemas (`{ 'shop.orders': Order }`).
 */
export type ClientBulkWriteModel<SchemaMap extends Record<string, Document> = Record<string, Document>> = {
  [Namespace in keyof SchemaMap]: AnyClientBulkWriteModel<SchemaMap[Namespace]> & { namespace: Namespace };
}[keyof SchemaMap];

export interface ClientBulkWriteOptions extends CommandOperationOptions {
  /** Stop at the first failed write (default true). */
  ordered?: boolean;
  bypassDocumentValidation?: boolean;
  let?: Document;
  /** The result of each write, in `insertResults`, `updateResults`, `deleteResults`. */
  verboseResults?: boolean;
}

export interface ClientInsertOneResult {
  insertedId: any;
}
export interface ClientUpdateResult {
  matchedCount: number;
  modifiedCount: number;
  upsertedId?: any;
  didUpsert: boolean;
}
export interface ClientDeleteResult {
  deletedCount: number;
}

/**
 * The result of `client.bulkWrite`: the counts, and with `verboseResults: true` the
 * result of each write by index of its model.
 */
export declare class ClientBulkWriteResult {
  readonly acknowledged: boolean;
  readonly insertedCount: number;
  readonly upsertedCount: number;
  readonly matchedCount: number;
  readonly modifiedCount: number;
  readonly deletedCount: number;
  readonly insertResults?: ReadonlyMap<number, ClientInsertOneResult>;
  readonly updateResults?: ReadonlyMap<number, ClientUpdateResult>;
  readonly deleteResults?: ReadonlyMap<number, ClientDeleteResult>;
}

/** A failed write of `client.bulkWrite` (`writeErrors` of a MongoClientBulkWriteError). */
export interface ClientBulkWriteError {
  code: number;
  message: string;
  details?: Document;
}

// ---------------------------------------------------------------------------------
// Events (js/events.js).
// ---------------------------------------------------------------------------------

/** Listeners by event name: what an EventEmitter's `on` checks names and arguments against. */
export type EventsDescription = Record<string, (...args: any[]) => void>;

/**
 * Node's EventEmitter where the runtime has `node:events` (Node.js, Deno, Bun), else
 * this package's portable one (PortableEventEmitter), typed by its events as the Node
 * driver's TypedEventEmitter: `client.on('commandStarted', (event) => ...)` gives
 * `event` its class.
 */
export declare class EventEmitter<Events extends EventsDescription = EventsDescription> {
  /** No leak warnings past `count` listeners (0: none ever). */
  setMaxListeners(count: number): this;
  getMaxListeners(): number;
  prependListener<EventKey extends keyof Events & string>(name: EventKey, listener: Events[EventKey]): this;
  rawListeners<EventKey extends keyof Events & string>(name: EventKey): Events[EventKey][];
  on<EventKey extends keyof Events & string>(name: EventKey, listener: Events[EventKey]): this;
  addListener<EventKey extends keyof Events & string>(name: EventKey, listener: Events[EventKey]): this;
  /** The listener runs for the next event only. */
  once<EventKey extends keyof Events & string>(name: EventKey, listener: Events[EventKey]): this;
  off<EventKey extends keyof Events & string>(name: EventKey, listener: Events[EventKey]): this;
  removeListener<EventKey extends keyof Events & string>(name: EventKey, listener: Events[EventKey]): this;
  removeAllListeners(name?: keyof Events & string): this;
  listeners<EventKey extends keyof Events & string>(name: EventKey): Events[EventKey][];
  listenerCount(name: keyof Events & string): number;
  eventNames(): (keyof Events & string)[];
  /** Calls each listener of `name` in order; true if there was one. */
  emit<EventKey extends keyof Events & string>(name: EventKey, ...args: Parameters<Events[EventKey]>): boolean;
}

// The event objects carry the fields the core reports, named as the Node driver's
// (`address` as `host:port`, durations in milliseconds), and `name`, the event's name.

/** `commandStarted` (with `monitorCommands: true`). */
export declare class CommandStartedEvent {
  readonly name: 'commandStarted';
  commandName: string;
  databaseName: string;
  requestId: number;
  operationId?: number;
  /** `host:port`. */
  address: string;
  connectionId: number;
  /** The server's id of the connection, when the server told it. */
  serverConnectionId: number | null;
  /** The load balancer's service, if any. */
  serviceId?: ObjectId;
  /** Whether the command went to a load balancer's service (`serviceId`). */
  readonly hasServiceId: boolean;
  command: Document;
}
/** `commandSucceeded` (with `monitorCommands: true`). */
export declare class CommandSucceededEvent {
  readonly name: 'commandSucceeded';
  commandName: string;
  databaseName: string;
  requestId: number;
  operationId?: number;
  address: string;
  connectionId: number;
  serverConnectionId: number | null;
  serviceId?: ObjectId;
  readonly hasServiceId: boolean;
  /** Milliseconds. */
  duration: number;
  reply: Document;
}
/** `commandFailed` (with `monitorCommands: true`). */
export declare class CommandFailedEvent {
  readonly name: 'commandFailed';
  commandName: string;
  databaseName: string;
  requestId: number;
  operationId?: number;
  address: string;
  connectionId: number;
  serverConnectionId: number | null;
  serviceId?: ObjectId;
  readonly hasServiceId: boolean;
  /** Milliseconds. */
  duration: number;
  failure: MongoError;
}

/** The base class of the connection pool's events. */
export declare class ConnectionPoolMonitoringEvent {
  /** The pool's server, `host:port`. */
  address: string;
}
export declare class ConnectionPoolCreatedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionPoolCreated';
  options: { maxPoolSize: number; minPoolSize: number; maxConnecting: number; maxIdleTimeMS?: number };
}
export declare class ConnectionPoolReadyEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionPoolReady';
}
export declare class ConnectionPoolClearedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionPoolCleared';
  serviceId?: ObjectId;
  interruptInUseConnections?: boolean;
}
export declare class ConnectionPoolClosedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionPoolClosed';
}
export declare class ConnectionCreatedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionCreated';
  connectionId: number;
}
export declare class ConnectionReadyEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionReady';
  connectionId: number;
  /** Milliseconds from the connection's creation to its being ready. */
  durationMS: number;
}
export declare class ConnectionClosedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionClosed';
  connectionId: number;
  reason: string;
}
export declare class ConnectionCheckOutStartedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionCheckOutStarted';
}
export declare class ConnectionCheckOutFailedEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionCheckOutFailed';
  reason: string;
  /** Milliseconds. */
  durationMS: number;
  error?: MongoError;
}
export declare class ConnectionCheckedOutEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionCheckedOut';
  connectionId: number;
  /** Milliseconds. */
  durationMS: number;
}
export declare class ConnectionCheckedInEvent extends ConnectionPoolMonitoringEvent {
  readonly name: 'connectionCheckedIn';
  connectionId: number;
}

/** The EventEmitter of runtimes without `node:events` (Workers without their Node.js compatibility flag). */
export declare class PortableEventEmitter<Events extends EventsDescription = EventsDescription> extends EventEmitter<Events> {}

/** A server as SDAM describes it. */
export declare class ServerDescription {
  address: string;
  type: string;
  hosts: string[];
  passives: string[];
  arbiters: string[];
  minWireVersion: number;
  maxWireVersion: number;
  error: string | null;
  /** Milliseconds; -1 before the first heartbeat. */
  roundTripTime: number;
  setName: string | null;
  setVersion?: number;
  electionId?: ObjectId;
  primary: string | null;
  me: string | null;
  logicalSessionTimeoutMinutes?: number;
  tags: TagSet;
}
/** The deployment as SDAM describes it. */
export declare class TopologyDescription {
  /** 'Single', 'ReplicaSetWithPrimary', 'ReplicaSetNoPrimary', 'Sharded', 'LoadBalanced' or 'Unknown'. */
  type: string;
  setName: string | null;
  /** By `host:port`. */
  servers: Map<string, ServerDescription>;
  /** No server of an unsupported wire version. */
  readonly compatible: boolean;
  /** Some server has answered its monitor. */
  readonly hasKnownServers: boolean;
  compatibilityError: string | null;
  logicalSessionTimeoutMinutes: number | null;
  heartbeatFrequencyMS: number;
}

export declare class TopologyOpeningEvent {
  readonly name: 'topologyOpening';
  topologyId: number;
}
export declare class TopologyClosedEvent {
  readonly name: 'topologyClosed';
  topologyId: number;
}
export declare class TopologyDescriptionChangedEvent {
  readonly name: 'topologyDescriptionChanged';
  topologyId: number;
  previousDescription: TopologyDescription;
  newDescription: TopologyDescription;
}
export declare class ServerOpeningEvent {
  readonly name: 'serverOpening';
  topologyId: number;
  address: string;
}
export declare class ServerClosedEvent {
  readonly name: 'serverClosed';
  topologyId: number;
  address: string;
}
export declare class ServerDescriptionChangedEvent {
  readonly name: 'serverDescriptionChanged';
  topologyId: number;
  address: string;
  previousDescription: ServerDescription;
  newDescription: ServerDescription;
}
export declare class ServerHeartbeatStartedEvent {
  readonly name: 'serverHeartbeatStarted';
  /** The server, `host:port` (as the Node driver names it). */
  connectionId: string;
  /** Whether it is a streaming (awaited) heartbeat. */
  awaited: boolean;
}
export declare class ServerHeartbeatSucceededEvent {
  readonly name: 'serverHeartbeatSucceeded';
  connectionId: string;
  awaited: boolean;
  /** Milliseconds. */
  duration: number;
  reply: Document;
}
export declare class ServerHeartbeatFailedEvent {
  readonly name: 'serverHeartbeatFailed';
  connectionId: string;
  awaited: boolean;
  /** Milliseconds. */
  duration: number;
  failure: MongoError;
}

/**
 * The events of a MongoClient, by name. The Node driver's `open`, `close`, `error` and
 * `timeout` are not emitted by this package, so they are not here.
 */
export type MongoClientEvents = {
  commandStarted(event: CommandStartedEvent): void;
  commandSucceeded(event: CommandSucceededEvent): void;
  commandFailed(event: CommandFailedEvent): void;
  connectionPoolCreated(event: ConnectionPoolCreatedEvent): void;
  connectionPoolReady(event: ConnectionPoolReadyEvent): void;
  connectionPoolCleared(event: ConnectionPoolClearedEvent): void;
  connectionPoolClosed(event: ConnectionPoolClosedEvent): void;
  connectionCreated(event: ConnectionCreatedEvent): void;
  connectionReady(event: ConnectionReadyEvent): void;
  connectionClosed(event: ConnectionClosedEvent): void;
  connectionCheckOutStarted(event: ConnectionCheckOutStartedEvent): void;
  connectionCheckOutFailed(event: ConnectionCheckOutFailedEvent): void;
  connectionCheckedOut(event: ConnectionCheckedOutEvent): void;
  connectionCheckedIn(event: ConnectionCheckedInEvent): void;
  topologyOpening(event: TopologyOpeningEvent): void;
  topologyClosed(event: TopologyClosedEvent): void;
  topologyDescriptionChanged(event: TopologyDescriptionChangedEvent): void;
  serverOpening(event: ServerOpeningEvent): void;
  serverClosed(event: ServerClosedEvent): void;
  serverDescriptionChanged(event: ServerDescriptionChangedEvent): void;
  serverHeartbeatStarted(event: ServerHeartbeatStartedEvent): void;
  serverHeartbeatSucceeded(event: ServerHeartbeatSucceededEvent): void;
  serverHeartbeatFailed(event: ServerHeartbeatFailedEvent): void;
};

// ---------------------------------------------------------------------------------
// Client, databases, collections (js/client.js).
// ---------------------------------------------------------------------------------

/** What `withSession` and `withTransaction` run. */
export type WithSessionCallback<T = unknown> = (session: ClientSession) => Promise<T>;
export type WithTransactionCallback<T = any> = (session: ClientSession) => Promise<T>;

/**
 * A client of a MongoDB deployment: `new MongoClient(uri, options)`, then `connect()`
 * (operations also connect on first use), and `close()` when done. Monitoring events
 * are emitted on it (built only while someone listens).
 */
/** A connected client's deployment (`client.topology`), as the Node driver's. */
export declare class Topology {
  /** The description the last `topologyDescriptionChanged` event gave. */
  readonly description: TopologyDescription;
  /** Where the Node driver keeps it too. */
  s: { description: TopologyDescription };
}

/** A seed list host (`client.s.options.hosts`). */
export interface HostAddress {
  host: string;
  port: number;
  isIPv6: boolean;
  toString(): string;
}

export declare class MongoClient extends EventEmitter<MongoClientEvents> implements AsyncDisposable {
  constructor(uri: string, options?: MongoClientOptions);
  /** The deployment, from `connect()` until `close()` (else undefined), as the Node driver's. */
  readonly topology: Topology | undefined;
  /** The client's BSON options (its databases inherit them). */
  readonly bsonOptions: BSONOptions;
  /** The Node driver's client state, as far as libraries read it. */
  readonly s: {
    url: string;
    bsonOptions: BSONOptions;
    options: MongoClientOptions & BSONOptions & { hosts: HostAddress[]; dbName: string };
  };
  static connect(uri: string, options?: MongoClientOptions): Promise<MongoClient>;
  /**
   * The options given to the constructor (a copy; not the Node driver's resolved
   * MongoOptions: the connection string's own options are not in it).
   */
  readonly options: MongoClientOptions;
  /** Connects and authenticates, without a command of its own (operations connect on first use too). */
  connect(): Promise<this>;
  /** The database `name` (default: the connection string's, else `test`), with `options`' concerns. */
  db(name?: string, options?: DbOptions): Db;
  /** A session for operations to run in (`{ session }`): transactions, causal consistency. */
  startSession(options?: ClientSessionOptions): ClientSession;
  /** Runs `executor(session)` with a new session, ended when it settles. */
  withSession<T = any>(executor: WithSessionCallback<T>): Promise<T>;
  withSession<T = any>(options: ClientSessionOptions, executor: WithSessionCallback<T>): Promise<T>;
  /**
   * Writes to any namespaces in one command (MongoDB 8.0+). Failed writes throw a
   * MongoClientBulkWriteError (`writeErrors` by index, `partialResult`).
   */
  bulkWrite<SchemaMap extends Record<string, Document> = Record<string, Document>>(
    models: ReadonlyArray<ClientBulkWriteModel<SchemaMap>>,
    options?: ClientBulkWriteOptions,
  ): Promise<ClientBulkWriteResult>;
  /** The changes to every database of the deployment. */
  watch<TSchema extends Document = Document, TChange extends Document = ChangeStreamDocument<TSchema>>(
    pipeline?: Document[],
    options?: ChangeStreamOptions,
  ): ChangeStream<TSchema, TChange>;
  /** Kills open cursors and closes every connection; the client can connect again. */
  close(): Promise<void>;
  /** `close()`, for `await using client = new MongoClient(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

export declare class Db {
  readonly databaseName: string;
  /** Its BSON options (its own over the client's). */
  readonly bsonOptions: BSONOptions;
  /** The client the database belongs to. */
  readonly client: MongoClient;
  readonly readPreference: ReadPreference | undefined;
  readonly readConcern: ReadConcern | undefined;
  readonly writeConcern: WriteConcern | undefined;
  /** The collection `name`, with `options`' concerns over the database's. */
  collection<TSchema extends Document = Document>(name: string, options?: CollectionOptions): Collection<TSchema>;
  /** Runs a command and returns the server's reply. */
  command(command: Document, options?: RunCommandOptions): Promise<Document>;
  /** A cursor over the reply of a command that opens one (`find`, `aggregate`, `listCollections`...). */
  runCursorCommand(command: Document, options?: RunCommandOptions): RunCommandCursor;
  /** A database aggregation (`$documents`, `$currentOp`...). */
  aggregate<T extends Document = Document>(pipeline?: Document[], options?: AggregateOptions): AggregationCursor<T>;
  dropDatabase(options?: DropDatabaseOptions): Promise<boolean>;
  /** The changes to the database's collections. */
  watch<TSchema extends Document = Document, TChange extends Document = ChangeStreamDocument<TSchema>>(
    pipeline?: Document[],
    options?: ChangeStreamOptions,
  ): ChangeStream<TSchema, TChange>;
  /** The collections and views; with `nameOnly`, only `{ name, type }` of each. */
  listCollections(
    filter: Document,
    options: Omit<ListCollectionsOptions, 'nameOnly'> & { nameOnly: true },
  ): ListCollectionsCursor<Pick<CollectionInfo, 'name' | 'type'>>;
  listCollections(
    filter: Document,
    options: Omit<ListCollectionsOptions, 'nameOnly'> & { nameOnly: false },
  ): ListCollectionsCursor<CollectionInfo>;
  listCollections<T extends Pick<CollectionInfo, 'name' | 'type'> | CollectionInfo = Pick<CollectionInfo, 'name' | 'type'> | CollectionInfo>(
    filter?: Document,
    options?: ListCollectionsOptions,
  ): ListCollectionsCursor<T>;
  /** The collections of the database (not its `system.` ones). */
  collections(options?: ListCollectionsOptions): Promise<Collection[]>;
  /** Creates the collection `name` (`options`: the `create` command's fields); returns it. */
  createCollection<TSchema extends Document = Document>(name: string, options?: CreateCollectionOptions): Promise<Collection<TSchema>>;
  /** True, or false when there was no such collection. */
  dropCollection(name: string, options?: DropCollectionOptions): Promise<boolean>;
  renameCollection<TSchema extends Document = Document>(from: string, to: string, options?: RenameOptions): Promise<Collection<TSchema>>;
  /** The `admin` database's commands. */
  admin(): Admin;
}

/** The commands of the `admin` database (`db.admin()`). */
export declare class Admin {
  command(command: Document, options?: RunCommandOptions): Promise<Document>;
  ping(options?: RunCommandOptions): Promise<Document>;
  buildInfo(options?: RunCommandOptions): Promise<Document>;
  serverStatus(options?: RunCommandOptions): Promise<Document>;
  listDatabases(options?: ListDatabasesOptions): Promise<ListDatabasesResult>;
}

export declare class Collection<TSchema extends Document = Document> {
  readonly collectionName: string;
  /** Its BSON options (its own over its database's). */
  readonly bsonOptions: BSONOptions;
  readonly dbName: string;
  /** `db.collection`. */
  readonly namespace: string;
  readonly readPreference: ReadPreference | undefined;
  readonly readConcern: ReadConcern | undefined;
  readonly writeConcern: WriteConcern | undefined;
  /** Gives the document an ObjectId `_id` when it has none (setting it on the object). */
  insertOne(document: OptionalUnlessRequiredId<TSchema>, options?: InsertOneOptions): Promise<InsertOneResult<TSchema>>;
  insertMany(
    documents: ReadonlyArray<OptionalUnlessRequiredId<TSchema>>,
    options?: BulkWriteOptions,
  ): Promise<InsertManyResult<TSchema>>;
  /** Failed writes throw a MongoBulkWriteError with `writeErrors` and `result`. */
  bulkWrite(operations: ReadonlyArray<AnyBulkWriteOperation<TSchema>>, options?: BulkWriteOptions): Promise<BulkWriteResult>;
  /** `update`: update operators, or an aggregation pipeline. */
  updateOne(filter: Filter<TSchema>, update: UpdateFilter<TSchema> | Document[], options?: UpdateOptions): Promise<UpdateResult<TSchema>>;
  updateMany(filter: Filter<TSchema>, update: UpdateFilter<TSchema> | Document[], options?: UpdateOptions): Promise<UpdateResult<TSchema>>;
  replaceOne(filter: Filter<TSchema>, replacement: WithoutId<TSchema>, options?: ReplaceOptions): Promise<UpdateResult<TSchema>>;
  deleteOne(filter?: Filter<TSchema>, options?: DeleteOptions): Promise<DeleteResult>;
  deleteMany(filter?: Filter<TSchema>, options?: DeleteOptions): Promise<DeleteResult>;
  findOne(): Promise<WithId<TSchema> | null>;
  findOne(filter: Filter<TSchema>, options?: FindOptions): Promise<WithId<TSchema> | null>;
  /** With a projection, name the type of what is returned. */
  findOne<T = TSchema>(filter: Filter<TSchema>, options?: FindOptions): Promise<T | null>;
  /** A cursor over the matching documents (nothing is sent before it is read). */
  find(): FindCursor<WithId<TSchema>>;
  find(filter: Filter<TSchema>, options?: FindOptions): FindCursor<WithId<TSchema>>;
  find<T extends Document>(filter: Filter<TSchema>, options?: FindOptions): FindCursor<T>;
  findOneAndDelete(filter: Filter<TSchema>, options: FindOneAndDeleteOptions & { includeResultMetadata: true }): Promise<ModifyResult<TSchema>>;
  findOneAndDelete(filter: Filter<TSchema>, options?: FindOneAndDeleteOptions & { includeResultMetadata?: false }): Promise<WithId<TSchema> | null>;
  findOneAndReplace(
    filter: Filter<TSchema>,
    replacement: WithoutId<TSchema>,
    options: FindOneAndReplaceOptions & { includeResultMetadata: true },
  ): Promise<ModifyResult<TSchema>>;
  findOneAndReplace(
    filter: Filter<TSchema>,
    replacement: WithoutId<TSchema>,
    options?: FindOneAndReplaceOptions & { includeResultMetadata?: false },
  ): Promise<WithId<TSchema> | null>;
  findOneAndUpdate(
    filter: Filter<TSchema>,
    update: UpdateFilter<TSchema> | Document[],
    options: FindOneAndUpdateOptions & { includeResultMetadata: true },
  ): Promise<ModifyResult<TSchema>>;
  findOneAndUpdate(
    filter: Filter<TSchema>,
    update: UpdateFilter<TSchema> | Document[],
    options?: FindOneAndUpdateOptions & { includeResultMetadata?: false },
  ): Promise<WithId<TSchema> | null>;
  /** A builder of an ordered bulk write: `find(filter).updateOne(update)`, `insert(document)`..., then `execute()`. */
  initializeOrderedBulkOp(options?: BulkWriteOptions): BulkOperation<TSchema>;
  /** `initializeOrderedBulkOp` whose writes go on after a failure. */
  initializeUnorderedBulkOp(options?: BulkWriteOptions): BulkOperation<TSchema>;
  aggregate<T extends Document = Document>(pipeline?: Document[], options?: AggregateOptions): AggregationCursor<T>;
  /** The deprecated `count` command: fast, but inexact on sharded clusters and after unclean shutdowns. */
  count(filter?: Filter<TSchema>, options?: CountDocumentsOptions): Promise<number>;
  countDocuments(filter?: Filter<TSchema>, options?: CountDocumentsOptions): Promise<number>;
  estimatedDocumentCount(options?: EstimatedDocumentCountOptions): Promise<number>;
  /** The distinct values of a field of TSchema... */
  distinct<Key extends keyof WithId<TSchema>>(
    key: Key,
    filter?: Filter<TSchema>,
    options?: DistinctOptions,
  ): Promise<Array<Flatten<WithId<TSchema>[Key]>>>;
  /** ...or of any path. */
  distinct(key: string, filter?: Filter<TSchema>, options?: DistinctOptions): Promise<any[]>;
  /** Returns the index's name; `keys` as `{ field: 1 }`, or a field name (ascending). */
  createIndex(keys: IndexSpecification, options?: CreateIndexesOptions): Promise<string>;
  /** Creates the indexes with one command; returns their names. */
  createIndexes(specs: IndexDescription[], options?: CreateIndexesOptions): Promise<string[]>;
  listIndexes(options?: ListIndexesOptions): ListIndexesCursor;
  /** The index descriptions (default); with `full: false`, `{ name: [[field, direction]...] }`. */
  indexes(options: IndexInformationOptions & { full: false }): Promise<IndexDescriptionCompact>;
  indexes(options?: IndexInformationOptions & { full?: true }): Promise<IndexDescriptionInfo[]>;
  indexes(options: IndexInformationOptions): Promise<IndexDescriptionCompact | IndexDescriptionInfo[]>;
  /** `indexes` with `full: false` unless told otherwise. */
  indexInformation(options: IndexInformationOptions & { full: true }): Promise<IndexDescriptionInfo[]>;
  indexInformation(options?: IndexInformationOptions & { full?: false }): Promise<IndexDescriptionCompact>;
  indexInformation(options: IndexInformationOptions): Promise<IndexDescriptionCompact | IndexDescriptionInfo[]>;
  /** Whether the index (or every index named) exists. */
  indexExists(names: string | string[], options?: ListIndexesOptions): Promise<boolean>;
  /** Returns the server's reply. */
  dropIndex(name: string, options?: DropIndexesOptions): Promise<Document>;
  /** Drops every index but `_id`'s: false when that failed. */
  dropIndexes(options?: DropIndexesOptions): Promise<boolean>;
  /** Returns the renamed collection. */
  rename(newName: string, options?: RenameOptions): Promise<Collection<TSchema>>;
  drop(options?: DropCollectionOptions): Promise<boolean>;
  /** The options the collection was created with (`listCollections`); throws a MongoAPIError if there is none. */
  options(options?: CommandOperationOptions): Promise<Document>;
  /** Whether the collection is capped. */
  isCapped(options?: CommandOperationOptions): Promise<boolean>;
  /** The changes to the collection. */
  watch<TLocal extends Document = TSchema, TChange extends Document = ChangeStreamDocument<TLocal>>(
    pipeline?: Document[],
    options?: ChangeStreamOptions,
  ): ChangeStream<TLocal, TChange>;
}

/**
 * The Node driver's fluent bulk write builder (`initializeOrderedBulkOp`): one class
 * here, where the Node driver has OrderedBulkOperation and UnorderedBulkOperation.
 */
export declare class BulkOperation<TSchema extends Document = Document> {
  /** How many writes were added. */
  readonly length: number;
  insert(document: OptionalUnlessRequiredId<TSchema>): this;
  /** The writes to the documents matching `filter`: `.updateOne()`, `.upsert().replaceOne()`, `.delete()`... */
  find(filter: Filter<TSchema>): FindOperators<TSchema>;
  /** Any operation of `collection.bulkWrite`. */
  raw(operation: AnyBulkWriteOperation<TSchema>): this;
  /** Runs the writes (once). */
  execute(options?: BulkWriteOptions): Promise<BulkWriteResult>;
}

/** What `bulk.find(filter)` gives: modifiers, then the write. */
export interface FindOperators<TSchema extends Document = Document> {
  upsert(): this;
  collation(collation: CollationOptions): this;
  hint(hint: Hint): this;
  arrayFilters(arrayFilters: Document[]): this;
  updateOne(update: UpdateFilter<TSchema> | Document[]): BulkOperation<TSchema>;
  /** Updates every matching document. */
  update(update: UpdateFilter<TSchema> | Document[]): BulkOperation<TSchema>;
  replaceOne(replacement: WithoutId<TSchema>): BulkOperation<TSchema>;
  deleteOne(): BulkOperation<TSchema>;
  /** Deletes every matching document. */
  delete(): BulkOperation<TSchema>;
}

// ---------------------------------------------------------------------------------
// Cursors.
// ---------------------------------------------------------------------------------

/**
 * What the cursors share (not exported by the package: a type only). The command
 * that opens the cursor is sent on the first read.
 */
/** The events of a cursor: `'close'` once it is closed or exhausted. */
export type AbstractCursorEvents = {
  close(): void;
};

declare abstract class AbstractCursor<TSchema = any>
  extends EventEmitter<AbstractCursorEvents>
  implements AsyncIterable<TSchema>, AsyncDisposable
{
  readonly closed: boolean;
  hasNext(): Promise<boolean>;
  /** The next document, or null at the end. */
  next(): Promise<TSchema | null>;
  /** The next document, or null at the end (the same as `next()` for a cursor that is not tailable). */
  tryNext(): Promise<TSchema | null>;
  /** Calls `iterator(document)` for each remaining document; stops early when it returns false. */
  forEach(iterator: (document: TSchema) => boolean | void): Promise<void>;
  /** Every remaining document. */
  toArray(): Promise<TSchema[]>;
  /** How many documents the cursor holds without asking the server. */
  bufferedCount(): number;
  /** Up to `number` (default: all) of the documents held, without asking the server. */
  readBufferedDocuments(number?: number): TSchema[];
  /** The cursor as it was before it was read: the next read sends the command again. */
  rewind(): void;
  /**
   * A new cursor with the same command, unread. As the Node driver's, it does not keep
   * `map()`'s transforms; the type, as theirs, says otherwise.
   */
  abstract clone(): AbstractCursor<TSchema>;
  /**
   * Maps each document through `transform` (after earlier ones). The cursor itself is
   * returned, retyped: use the returned one.
   */
  map<T>(transform: (document: TSchema) => T): AbstractCursor<T>;
  /**
   * A Web ReadableStream of the remaining documents, on every runtime (where the Node
   * driver gives a Node.js Readable).
   */
  stream(): ReadableStream<TSchema>;
  /** Kills the server cursor (if still open); emits `'close'`. */
  close(): Promise<void>;
  /** `for await (const document of cursor)`; leaving the loop early closes the cursor. */
  [Symbol.asyncIterator](): AsyncGenerator<TSchema, void, void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The cursor of `find`; `sort`, `limit`, `skip`, `project`... before it is read. */
export declare class FindCursor<TSchema = any> extends AbstractCursor<TSchema> {
  clone(): FindCursor<TSchema>;
  map<T>(transform: (document: TSchema) => T): FindCursor<T>;
  /** The server's plan for the query (`verbosity` default "allPlansExecution"; true and false as in the Node driver). */
  explain(verbosity?: ExplainVerbosityLike): Promise<Document>;
  filter(filter: Document): this;
  sort(sort: Sort, direction?: SortDirection): this;
  limit(limit: number): this;
  skip(skip: number): this;
  /** The fields to return; name the type of what is returned as `T`. */
  project<T extends Document = Document>(projection: Projection): FindCursor<T>;
  batchSize(size: number): this;
  maxTimeMS(milliseconds: number): this;
  /** For a tailable, awaitData cursor: how long a getMore waits for new documents. */
  maxAwaitTimeMS(milliseconds: number): this;
  hint(hint: Hint): this;
  comment(comment: unknown): this;
  collation(collation: CollationOptions): this;
  allowDiskUse(allow?: boolean): this;
  min(min: Document): this;
  max(max: Document): this;
  returnKey(value: boolean): this;
  showRecordId(value: boolean): this;
  /** `partial` is `allowPartialResults`. */
  addCursorFlag(flag: CursorFlag, value: boolean): this;
}

/** The flags of `addCursorFlag`. */
export type CursorFlag = 'tailable' | 'awaitData' | 'noCursorTimeout' | 'partial' | 'oplogReplay' | 'exhaust';
/** The `explain` verbosity: a level, or true (allPlansExecution) and false (queryPlanner). */
export type ExplainVerbosityLike = 'queryPlanner' | 'executionStats' | 'allPlansExecution' | boolean;

/** The cursor of `aggregate`; stages can be added before it is read. */
export declare class AggregationCursor<TSchema = any> extends AbstractCursor<TSchema> {
  clone(): AggregationCursor<TSchema>;
  map<T>(transform: (document: TSchema) => T): AggregationCursor<T>;
  /** The server's plan for the pipeline (`explain: true`). */
  explain(verbosity?: ExplainVerbosityLike): Promise<Document>;
  /** Adds a stage to the pipeline; name the type of what it returns as `T`. */
  addStage(stage: Document): this;
  addStage<T = Document>(stage: Document): AggregationCursor<T>;
  match(filter: Document): this;
  project<T extends Document = Document>(projection: Document): AggregationCursor<T>;
  sort(sort: Sort): this;
  limit(limit: number): this;
  skip(skip: number): this;
  group<T = TSchema>(group: Document): AggregationCursor<T>;
  unwind<T = Document>(field: string | Document): AggregationCursor<T>;
  lookup(lookup: Document): this;
  out(out: string | { db: string; coll: string }): this;
  redact(redact: Document): this;
  geoNear(geoNear: Document): this;
  batchSize(size: number): this;
  maxTimeMS(milliseconds: number): this;
}

/** The cursor of `db.listCollections`. */
export declare class ListCollectionsCursor<
  T extends Pick<CollectionInfo, 'name' | 'type'> | CollectionInfo = Pick<CollectionInfo, 'name' | 'type'> | CollectionInfo,
> extends AbstractCursor<T> {
  clone(): ListCollectionsCursor<T>;
}

/** The cursor of `collection.listIndexes`. */
export declare class ListIndexesCursor extends AbstractCursor<IndexDescriptionInfo> {
  clone(): ListIndexesCursor;
}

/** The cursor of `db.runCursorCommand`. */
export declare class RunCommandCursor extends AbstractCursor<Document> {
  clone(): RunCommandCursor;
  /** The `batchSize` of each getMore; set before the cursor is read. */
  setBatchSize(size: number): this;
  /** The `maxTimeMS` of each getMore; set before the cursor is read. */
  setMaxTimeMS(milliseconds: number): this;
  /** The `comment` of each getMore; set before the cursor is read. */
  setComment(comment: unknown): this;
}

// ---------------------------------------------------------------------------------
// Sessions, transactions and change streams (js/session.js).
// ---------------------------------------------------------------------------------

export interface TransactionOptions {
  readConcern?: ReadConcernLike;
  writeConcern?: WriteConcern | WriteConcernSettings;
  readPreference?: ReadPreferenceLike | ReadPreferenceFromOptions;
  /** The bound on `commitTransaction` (the command's `maxTimeMS`). */
  maxCommitTimeMS?: number;
}

export interface ClientSessionOptions {
  /** Reads see the session's earlier writes (default true). */
  causalConsistency?: boolean;
  /** Reads see one snapshot (not with causalConsistency, nor transactions). */
  snapshot?: boolean;
  /** The snapshot of a snapshot session (another's `snapshotTime`), instead of its first read's. */
  snapshotTime?: Timestamp;
  /** The timeoutMS of the session's operations that give none. */
  defaultTimeoutMS?: number;
  /** The options of its transactions that give none. */
  defaultTransactionOptions?: TransactionOptions;
}

/** The session id: `{ id: UUID }` (a Binary of subtype 4). */
export type ServerSessionId = { id: Binary };

/** A `$clusterTime`, as the server gossips it. */
export interface ClusterTime {
  clusterTime: Timestamp;
  signature?: { hash: Binary; keyId: Long | number };
}

/** The Node driver's names of the transaction states. */
export type TxnState =
  | 'NO_TRANSACTION'
  | 'STARTING_TRANSACTION'
  | 'TRANSACTION_IN_PROGRESS'
  | 'TRANSACTION_COMMITTED'
  | 'TRANSACTION_ABORTED';

/**
 * A session (`client.startSession()`): pass it as `{ session }` to operations. Its
 * server session is taken when it is first used, so a session can be started before
 * the client connects, and a transaction started before its first operation.
 */
export declare class ClientSession implements AsyncDisposable {
  /** The client that started the session. */
  readonly client: MongoClient;
  /** Whether the application started the session (always, here). */
  readonly explicit: boolean;
  readonly snapshotEnabled: boolean;
  /**
   * A snapshot session's snapshot: the `snapshotTime` it was started with, else its
   * first read's `atClusterTime` (undefined before that, and for other sessions).
   */
  readonly snapshotTime: Timestamp | undefined;
  /** The session id, once the session was used. */
  readonly id: ServerSessionId | undefined;
  /** The last `$clusterTime` the session saw. */
  readonly clusterTime: ClusterTime | undefined;
  /** The last operation time the session saw. */
  readonly operationTime: Timestamp | undefined;
  /** The server session, once the session was used: its id, and whether a network error made it dirty. */
  readonly serverSession: { id: ServerSessionId; isDirty: boolean } | undefined;
  readonly hasEnded: boolean;
  /** Whether the session's transaction is pinned to a mongos or a load balancer's connection. */
  readonly isPinned: boolean;
  /** The transaction's state (a new object at each read). */
  readonly transaction: { state: TxnState; isActive: boolean; isPinned: boolean };
  advanceClusterTime(clusterTime: ClusterTime): void;
  advanceOperationTime(operationTime: Timestamp): void;
  inTransaction(): boolean;
  /** Starts a transaction; its first operation sends `startTransaction`. */
  startTransaction(options?: TransactionOptions): void;
  commitTransaction(): Promise<void>;
  abortTransaction(): Promise<void>;
  /**
   * Runs `fn(session)` in a transaction and commits it, retrying both on the errors
   * the Convenient Transactions API spec names; resolves to what `fn` resolved to.
   */
  withTransaction<T = any>(fn: WithTransactionCallback<T>, options?: TransactionOptions): Promise<T>;
  /** Ends the session (aborting an open transaction); its server session is pooled again. */
  endSession(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A change stream's resume token (an opaque document). */
export type ResumeToken = unknown;

export interface ChangeStreamOptions extends Omit<AggregateOptions, 'writeConcern'> {
  /** `'updateLookup'`, `'whenAvailable'`, `'required'`: the document after an update. */
  fullDocument?: string;
  /** `'whenAvailable'`, `'required'`: the document before the change. */
  fullDocumentBeforeChange?: string;
  maxAwaitTimeMS?: number;
  resumeAfter?: ResumeToken;
  startAfter?: ResumeToken;
  startAtOperationTime?: Timestamp;
  batchSize?: number;
  showExpandedEvents?: boolean;
}

export interface ChangeStreamNameSpace {
  db: string;
  coll: string;
}
export interface ChangeStreamDocumentCommon {
  /** The resume token of this change. */
  _id: ResumeToken;
  clusterTime?: Timestamp;
  txnNumber?: number;
  lsid?: ServerSessionId;
  splitEvent?: { fragment: number; of: number };
}
export interface ChangeStreamDocumentKey<TSchema extends Document = Document> {
  documentKey: { _id: InferIdType<TSchema>; [shardKey: string]: any };
}
export interface ChangeStreamDocumentCollectionUUID {
  collectionUUID: Binary;
}
export interface ChangeStreamDocumentWallTime {
  wallTime?: Date;
}
export interface ChangeStreamDocumentOperationDescription {
  operationDescription?: Document;
}
export interface UpdateDescription<TSchema extends Document = Document> {
  updatedFields?: Partial<TSchema>;
  removedFields?: string[];
  truncatedArrays?: Array<{ field: string; newSize: number }>;
  disambiguatedPaths?: Document;
}
export interface ChangeStreamInsertDocument<TSchema extends Document = Document>
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentKey<TSchema>, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'insert';
  fullDocument: TSchema;
  ns: ChangeStreamNameSpace;
}
export interface ChangeStreamUpdateDocument<TSchema extends Document = Document>
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentKey<TSchema>, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'update';
  /** With `fullDocument: 'updateLookup'` (or the other modes). */
  fullDocument?: TSchema;
  updateDescription: UpdateDescription<TSchema>;
  ns: ChangeStreamNameSpace;
  fullDocumentBeforeChange?: TSchema;
}
export interface ChangeStreamReplaceDocument<TSchema extends Document = Document>
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentKey<TSchema>, ChangeStreamDocumentWallTime {
  operationType: 'replace';
  fullDocument: TSchema;
  ns: ChangeStreamNameSpace;
  fullDocumentBeforeChange?: TSchema;
}
export interface ChangeStreamDeleteDocument<TSchema extends Document = Document>
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentKey<TSchema>, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'delete';
  ns: ChangeStreamNameSpace;
  fullDocumentBeforeChange?: TSchema;
}
export interface ChangeStreamDropDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'drop';
  ns: ChangeStreamNameSpace;
}
export interface ChangeStreamRenameDocument
  extends ChangeStreamDocumentCommon, ChangeStreamDocumentCollectionUUID, ChangeStreamDocumentWallTime {
  operationType: 'rename';
  to: { db: string; coll: string };
  ns: ChangeStreamNameSpace;
}
export interface ChangeStreamDropDatabaseDocument extends ChangeStreamDocumentCommon, ChangeStreamDocumentWallTime {
  operationType: 'dropDatabase';
  ns: { db: string };
}
export interface ChangeStreamInvalidateDocument extends ChangeStreamDocumentCommon, ChangeStreamDocumentWallTime {
  operationType: 'invalidate';
}
/** The DDL events of `showExpandedEvents: true`. */
export interface ChangeStreamExpandedEventDocument
  extends ChangeStreamDocumentCommon,
    ChangeStreamDocumentCollectionUUID,
    ChangeStreamDocumentOperationDescription,
    ChangeStreamDocumentWallTime {
  operationType:
    | 'create'
    | 'createIndexes'
    | 'dropIndexes'
    | 'modify'
    | 'shardCollection'
    | 'reshardCollection'
    | 'refineCollectionShardKey';
  ns: ChangeStreamNameSpace;
}
/** A change event: narrow it by `operationType`. */
export type ChangeStreamDocument<TSchema extends Document = Document> =
  | ChangeStreamInsertDocument<TSchema>
  | ChangeStreamUpdateDocument<TSchema>
  | ChangeStreamReplaceDocument<TSchema>
  | ChangeStreamDeleteDocument<TSchema>
  | ChangeStreamDropDocument
  | ChangeStreamRenameDocument
  | ChangeStreamDropDatabaseDocument
  | ChangeStreamInvalidateDocument
  | ChangeStreamExpandedEventDocument;

/**
 * The events of a ChangeStream: the Node driver's that this package emits (`change`
 * while a `change` listener is attached, `error` when reading fails, `close`).
 */
export type ChangeStreamEvents<TSchema extends Document = Document, TChange extends Document = ChangeStreamDocument<TSchema>> = {
  change(change: TChange): void;
  error(error: Error): void;
  close(): void;
  /** The resume token changed (a change was read, or the server moved past a batch). */
  resumeTokenChanged(token: ResumeToken): void;
};

/**
 * The changes to a collection, a database or the deployment (`watch()`): read with
 * `next()`, `tryNext()`, `for await`, or `on('change', listener)`. The aggregate that
 * opens it is sent on the first read.
 */
export declare class ChangeStream<TSchema extends Document = Document, TChange extends Document = ChangeStreamDocument<TSchema>>
  extends EventEmitter<ChangeStreamEvents<TSchema, TChange>>
  implements AsyncIterable<TChange>, AsyncDisposable
{
  readonly closed: boolean;
  /** The token to resume after the last change returned (or a later one of the server's). */
  readonly resumeToken: ResumeToken;
  /** Whether there is a next change, waiting for one (false once closed). */
  hasNext(): Promise<boolean>;
  /** The next change, waiting for one. */
  next(): Promise<TChange>;
  /** The next change if the server has one now (one getMore), else null. */
  tryNext(): Promise<TChange | null>;
  close(): Promise<void>;
  [Symbol.asyncIterator](): AsyncGenerator<TChange, void, void>;
  [Symbol.asyncDispose](): Promise<void>;
}

// ---------------------------------------------------------------------------------
// GridFS (js/gridfs.js).
// ---------------------------------------------------------------------------------

export interface GridFSBucketOptions extends DbOptions {
  /** The collections' prefix: `<bucketName>.files`, `<bucketName>.chunks` (default `fs`). */
  bucketName?: string;
  /** Default 255 KiB. */
  chunkSizeBytes?: number;
}

export interface GridFSBucketWriteStreamOptions {
  /** The file's id (default: a new ObjectId). */
  id?: ObjectId;
  chunkSizeBytes?: number;
  metadata?: Document;
}

export interface GridFSBucketReadStreamOptions {
  /** The first byte to read. */
  start?: number;
  /** The byte after the last to read. */
  end?: number;
}

export interface GridFSBucketReadStreamOptionsWithRevision extends GridFSBucketReadStreamOptions {
  /** 0 the first revision, 1 the second..., -1 the latest (default), -2 the one before... */
  revision?: number;
}

/** A document of `<bucket>.files`. */
export interface GridFSFile {
  _id: ObjectId;
  length: number;
  chunkSize: number;
  filename: string;
  metadata?: Document;
  uploadDate: Date;
}

/**
 * The part of a Node.js `stream.Writable` these types name (without depending on
 * @types/node): under Node.js and Bun an upload stream is a real Writable
 * (`Writable.fromWeb`), which has all of this and more.
 */
export interface NodeWritableLike {
  readonly writable: boolean;
  write(chunk: Uint8Array | string, callback?: (error?: Error | null) => void): boolean;
  end(callback?: () => void): this;
  end(chunk: Uint8Array | string, callback?: () => void): this;
  destroy(error?: Error): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

/**
 * The part of a Node.js `stream.Readable` these types name: under Node.js and Bun a
 * download stream is a real Readable (`Readable.fromWeb`).
 */
export interface NodeReadableLike extends AsyncIterable<any> {
  readonly readable: boolean;
  pipe<T>(destination: T, options?: { end?: boolean }): T;
  destroy(error?: Error): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

/**
 * An upload stream, with the file's `id` and `filename`. Which stream it is depends on
 * the runtime, and these types are every runtime's: a Node.js Writable under Node.js
 * and Bun (the Node driver's GridFSBucketWriteStream is one), a Web WritableStream on
 * Deno and Workers. Narrow it (`'getWriter' in stream`), or cast it to the runtime's
 * type where the code runs on one runtime only.
 */
export type GridFSBucketWriteStream = (WritableStream<Uint8Array | string> | NodeWritableLike) & {
  readonly id: ObjectId;
  readonly filename: string;
};

/**
 * A download stream of the file's bytes: a Node.js Readable under Node.js and Bun, a
 * Web ReadableStream elsewhere (see GridFSBucketWriteStream).
 */
export type GridFSBucketReadStream = ReadableStream<Uint8Array> | NodeReadableLike;

/** A bucket of GridFS files: `new GridFSBucket(db, { bucketName, chunkSizeBytes })`. */
export declare class GridFSBucket extends EventEmitter {
  constructor(db: Db, options?: GridFSBucketOptions);
  /** A stream to write a new file named `filename` to; it is stored when the stream is closed (ended). */
  openUploadStream(filename: string, options?: GridFSBucketWriteStreamOptions): GridFSBucketWriteStream;
  /** `openUploadStream` with the file's id given. */
  openUploadStreamWithId(id: ObjectId, filename: string, options?: Omit<GridFSBucketWriteStreamOptions, 'id'>): GridFSBucketWriteStream;
  /** A stream of the content of the file with `id`. */
  openDownloadStream(id: ObjectId, options?: GridFSBucketReadStreamOptions): GridFSBucketReadStream;
  /** A stream of a revision of the file named `filename`. */
  openDownloadStreamByName(filename: string, options?: GridFSBucketReadStreamOptionsWithRevision): GridFSBucketReadStream;
  /** A cursor over the files documents matching `filter`. */
  find(filter?: Filter<GridFSFile>, options?: FindOptions): FindCursor<GridFSFile>;
  /** Deletes the file with `id` and its chunks. */
  delete(id: ObjectId): Promise<void>;
  /** Renames the file with `id`. */
  rename(id: ObjectId, filename: string): Promise<void>;
  /** Deletes every revision of the file named `filename` (GridFS spec; not in the Node driver 7.x). */
  deleteByName(filename: string): Promise<void>;
  /** Renames every revision of the file named `filename` (GridFS spec; not in the Node driver 7.x). */
  renameByName(filename: string, newFilename: string): Promise<void>;
  /** Drops the bucket's collections. */
  drop(): Promise<void>;
}

// ---------------------------------------------------------------------------------
// Errors (js/errors.js).
// ---------------------------------------------------------------------------------

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
 * official Node.js driver's; some are never raised by this package and exist for
 * code that names them. `new`-able as theirs: `(message, fields)`, `fields` copied onto
 * the error.
 */
export declare class MongoError extends Error {
  constructor(message?: string, fields?: Document);
  readonly errorLabels: string[];
  /** The message, by its legacy name (the server's `errmsg`). */
  readonly errmsg: string;
  code?: number | string;
  cause?: Error;
  /** Whether the error carries `label` (e.g. `"RetryableWriteError"`). */
  hasErrorLabel(label: string): boolean;
  addErrorLabel(label: string): void;
}

/**
 * The server answered with an error (`ok: 0`, or a write error). `new`-able as the
 * Node driver's, from the error document: its labels kept, its fields copied.
 */
export declare class MongoServerError extends MongoError {
  constructor(document: Document);
  code: number;
  codeName?: string;
  /** The server's whole reply (a single write's: its `writeErrors` entry). */
  errorResponse: Document;
  errInfo?: Document;
  /** A duplicate key error's index key and the duplicate value. */
  keyPattern?: Document;
  keyValue?: Document;
  [field: string]: any;
}

/**
 * Some writes of a `bulkWrite` or `insertMany` failed: `writeErrors`, and in `result`
 * what the others did, whose counts and ids the error repeats.
 */
export declare class MongoBulkWriteError extends MongoServerError {
  /** As the Node driver's: `{ message, code, writeErrors }` (or the error that stopped the writes), and the result. */
  constructor(error: Document | Error, result: BulkWriteResult);
  writeErrors: WriteError[];
  /** The write concern error, when that is what failed. */
  err?: WriteConcernError;
  /** What the writes that succeeded did. */
  result: BulkWriteResult;
  readonly insertedCount: number;
  readonly matchedCount: number;
  readonly modifiedCount: number;
  readonly deletedCount: number;
  readonly upsertedCount: number;
  readonly insertedIds: { [index: number]: any };
  readonly upsertedIds: { [index: number]: any };
}

/**
 * Some writes of a `client.bulkWrite` failed: `writeErrors` by index of the model,
 * `writeConcernErrors`, `partialResult` (what the others did), and as `cause` the error
 * that stopped it, if one did.
 */
export declare class MongoClientBulkWriteError extends MongoServerError {
  constructor(document: Document);
  writeErrors: Map<number, ClientBulkWriteError>;
  writeConcernErrors: Document[];
  partialResult?: ClientBulkWriteResult;
}
/** The write was done but its write concern was not satisfied. */
export declare class MongoWriteConcernError extends MongoServerError {
  /** As the Node driver's: from the server's reply, with its `writeConcernError`. */
  constructor(result: Document);
  /** The server's reply. */
  result: Document;
}

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
/** A session was used after `endSession()`. */
export declare class MongoExpiredSessionError extends MongoAPIError {}
/** A BulkOperation was executed twice. */
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
/** A GridFS file's chunks are missing, out of order or of the wrong size. */
export declare class MongoGridFSChunkError extends MongoRuntimeError {}

/** The connection string, or the options its SRV and TXT records add, is invalid. */
export declare class MongoParseError extends MongoDriverError {}
export declare class MongoWaitQueueTimeoutError extends MongoDriverError {}
/**
 * The operation's `timeoutMS` passed; `cause` is what the deadline cut (a server
 * selection, a connection, a read), if anything.
 */
export declare class MongoOperationTimeoutError extends MongoDriverError {
  cause?: MongoError;
}

/** Opening, reading or writing a connection failed. */
export declare class MongoNetworkError extends MongoError {}
/** A connection did not answer in time. */
export declare class MongoNetworkTimeoutError extends MongoNetworkError {}
/** A server's pool was cleared while the operation waited for a connection. */
export declare class MongoPoolClearedError extends MongoNetworkError {}

/** A problem with the deployment as a whole. */
export declare class MongoSystemError extends MongoError {}
/** No suitable server was found within `serverSelectionTimeoutMS`. */
export declare class MongoServerSelectionError extends MongoSystemError {}

export default MongoClient;

// Only what is exported above is the package's: AbstractCursor, for one, is a type
// the cursors share, not an export of the JavaScript.
export {};
