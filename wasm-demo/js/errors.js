// The error classes, named and shaped like the official Node.js driver's, with the
// same parents (MongoDriverError, MongoAPIError, MongoRuntimeError...), so that code
// written against that driver catches the same errors: a server error carries `code`,
// `codeName`, `errorLabels` (and `errorResponse`, the server's reply), whatever the
// runtime. A few classes are never raised by this package (Kerberos, AWS, OIDC
// providers, decompression); they exist for `instanceof` in code that names them.
// error_documents.js turns what the WebAssembly module reports into these.
import { WriteConcernError } from './results.js';

/** The labels the server or the driver puts on errors, as the Node driver names them. */
export const MongoErrorLabel = Object.freeze({
  RetryableWriteError: 'RetryableWriteError',
  TransientTransactionError: 'TransientTransactionError',
  UnknownTransactionCommitResult: 'UnknownTransactionCommitResult',
  ResumableChangeStreamError: 'ResumableChangeStreamError',
  HandshakeError: 'HandshakeError',
  ResetPool: 'ResetPool',
  PoolRequestedRetry: 'PoolRequestedRetry',
  InterruptInUseConnections: 'InterruptInUseConnections',
  NoWritesPerformed: 'NoWritesPerformed',
  RetryableError: 'RetryableError',
  SystemOverloadedError: 'SystemOverloadedError',
});

/** The base class of every error of the driver. */
export class MongoError extends Error {
  /** `fields`: `cause`, as the Node driver's options, and what else the error carries (`code`...). */
  constructor(message, fields = {}) {
    super(message);
    const { name: _name, message: _message, errmsg: _errmsg, errorLabels, ...rest } = fields;
    Object.assign(this, rest);
    this.errorLabels = Array.isArray(errorLabels) ? [...errorLabels] : [];
  }

  get name() {
    return 'MongoError';
  }

  /** The message, by its legacy name (the server's `errmsg`). */
  get errmsg() {
    return this.message;
  }

  /** Whether the error carries `label` (e.g. `"RetryableWriteError"`). */
  hasErrorLabel(label) {
    return this.errorLabels.includes(label);
  }

  addErrorLabel(label) {
    if (!this.hasErrorLabel(label)) {
      this.errorLabels.push(label);
    }
  }
}

/**
 * The server answered with an error (`ok: 0`, or a write error). Made, as the Node
 * driver's, from the error document: `new MongoServerError({ code, errmsg, errorLabels })`
 * keeps its labels, `errorResponse` is the document, and each of its other fields
 * (`codeName`, `keyPattern`, `keyValue`, `errInfo`...) is one of the error's.
 */
export class MongoServerError extends MongoError {
  constructor(document) {
    super(document.message || document.errmsg || document.$err || 'n/a', { errorLabels: document.errorLabels });
    this.errorResponse = document;
    for (const name in document) {
      if (!SERVER_ERROR_OWN.has(name)) this[name] = document[name];
    }
  }

  get name() {
    return 'MongoServerError';
  }
}

/** Fields of an error document that are not copied as they are onto a MongoServerError. */
const SERVER_ERROR_OWN = new Set(['errorLabels', 'errmsg', 'message', 'errorResponse']);

/**
 * A failed write of a bulk write (an entry of MongoBulkWriteError's `writeErrors`): the
 * server's entry (`err`: `index`, `code`, `errmsg`, `errInfo`) and the write (`op`) as
 * the command carried it.
 */
export class WriteError {
  constructor(err) {
    this.err = err;
  }

  get code() {
    return this.err.code;
  }

  /** The index of the write among those the bulk write was given. */
  get index() {
    return this.err.index;
  }

  get errmsg() {
    return this.err.errmsg;
  }

  get errInfo() {
    return this.err.errInfo;
  }

  /** The write that failed: the document of an insert, the `{ q, u }` or `{ q, limit }` statement of the others. */
  getOperation() {
    return this.err.op;
  }

  toJSON() {
    return { code: this.err.code, index: this.err.index, errmsg: this.err.errmsg, op: this.err.op };
  }

  toString() {
    return `WriteError(${JSON.stringify(this.toJSON())})`;
  }
}

/**
 * Some writes of a `bulkWrite` or `insertMany` failed: `writeErrors` (WriteError
 * objects), and in `result` (a BulkWriteResult) what the others did, whose counts and
 * ids the error's getters repeat. Made as the Node driver's: `(error, result)`, `error`
 * being `{ message, code, writeErrors }` or the error that stopped the writes.
 */
export class MongoBulkWriteError extends MongoServerError {
  constructor(error, result) {
    super(error);
    this.writeErrors = [];
    if (error instanceof WriteConcernError) {
      this.err = error;
    } else if (!(error instanceof Error)) {
      this.message = error.message;
      this.code = error.code;
      this.writeErrors = error.writeErrors ?? [];
    }
    this.result = result;
    Object.assign(this, error);
  }

  get name() {
    return 'MongoBulkWriteError';
  }

  get insertedCount() {
    return this.result.insertedCount;
  }

  get matchedCount() {
    return this.result.matchedCount;
  }

  get modifiedCount() {
    return this.result.modifiedCount;
  }

  get deletedCount() {
    return this.result.deletedCount;
  }

  get upsertedCount() {
    return this.result.upsertedCount;
  }

  /** The `_id`s inserted, by index of the write. */
  get insertedIds() {
    return this.result.insertedIds;
  }

  /** The `_id`s upserted, by index of the write. */
  get upsertedIds() {
    return this.result.upsertedIds;
  }
}

/**
 * Some writes of a client-level bulk write failed: `writeErrors` (a Map by index of the
 * model), `writeConcernErrors`, `partialResult` (what the others did), and as `cause`
 * the error that stopped it, if one did. Made, as the Node driver's, from an error
 * document; the fields are set after.
 */
export class MongoClientBulkWriteError extends MongoServerError {
  constructor(document) {
    super(document);
    this.writeConcernErrors = [];
    this.writeErrors = new Map();
  }

  get name() {
    return 'MongoClientBulkWriteError';
  }
}

/**
 * The write was done but its write concern was not satisfied. Made, as the Node
 * driver's, from the server's reply (`result`), whose `writeConcernError` gives the
 * error its `code`, `codeName`, `errmsg` and `errInfo`.
 */
export class MongoWriteConcernError extends MongoServerError {
  constructor(result) {
    super({ ...result.writeConcernError, ...result });
    this.errInfo = result.writeConcernError?.errInfo;
    this.result = result;
  }

  get name() {
    return 'MongoWriteConcernError';
  }
}

/** An error the driver raised (not the server). */
export class MongoDriverError extends MongoError {
  get name() {
    return 'MongoDriverError';
  }
}

/** The driver's API was used wrongly. */
export class MongoAPIError extends MongoDriverError {
  get name() {
    return 'MongoAPIError';
  }
}

/** An argument or option is invalid. */
export class MongoInvalidArgumentError extends MongoAPIError {
  get name() {
    return 'MongoInvalidArgumentError';
  }
}

/** The server's wire versions do not overlap the driver's. */
export class MongoCompatibilityError extends MongoAPIError {
  get name() {
    return 'MongoCompatibilityError';
  }
}

/** The authentication mechanism needs credentials that were not given. */
export class MongoMissingCredentialsError extends MongoAPIError {
  get name() {
    return 'MongoMissingCredentialsError';
  }
}

/** A module the operation needs is not installed. */
export class MongoMissingDependencyError extends MongoAPIError {
  get name() {
    return 'MongoMissingDependencyError';
  }
}

/** The client is closed. */
export class MongoTopologyClosedError extends MongoAPIError {
  get name() {
    return 'MongoTopologyClosedError';
  }
}

/** The client was closed while the operation ran. */
export class MongoClientClosedError extends MongoAPIError {
  get name() {
    return 'MongoClientClosedError';
  }
}

/** The server the operation was on is closed. */
export class MongoServerClosedError extends MongoAPIError {
  get name() {
    return 'MongoServerClosedError';
  }
}

/** The operation needs a connected client. */
export class MongoNotConnectedError extends MongoAPIError {
  get name() {
    return 'MongoNotConnectedError';
  }
}

/** A transaction was misused (committed twice, say). */
export class MongoTransactionError extends MongoAPIError {
  get name() {
    return 'MongoTransactionError';
  }
}

/** The session has ended. */
export class MongoExpiredSessionError extends MongoAPIError {
  get name() {
    return 'MongoExpiredSessionError';
  }
}

/** A bulk operation was executed again. */
export class MongoBatchReExecutionError extends MongoAPIError {
  get name() {
    return 'MongoBatchReExecutionError';
  }
}

/** A tailable cursor does not support the call. */
export class MongoTailableCursorError extends MongoAPIError {
  get name() {
    return 'MongoTailableCursorError';
  }
}

/** The cursor was already read, so its options are fixed. */
export class MongoCursorInUseError extends MongoAPIError {
  get name() {
    return 'MongoCursorInUseError';
  }
}

/** The cursor is exhausted. */
export class MongoCursorExhaustedError extends MongoAPIError {
  get name() {
    return 'MongoCursorExhaustedError';
  }
}

/** The driver met a condition it cannot go on from. */
export class MongoRuntimeError extends MongoDriverError {
  get name() {
    return 'MongoRuntimeError';
  }
}

/** A primary was found stale. */
export class MongoStalePrimaryError extends MongoRuntimeError {
  get name() {
    return 'MongoStalePrimaryError';
  }
}

/** A compressed reply could not be decompressed. */
export class MongoDecompressionError extends MongoRuntimeError {
  get name() {
    return 'MongoDecompressionError';
  }
}

/** The server's reply made no sense to the driver. */
export class MongoUnexpectedServerResponseError extends MongoRuntimeError {
  get name() {
    return 'MongoUnexpectedServerResponseError';
  }
}

/** Kerberos (GSSAPI) authentication failed on the client. */
export class MongoKerberosError extends MongoRuntimeError {
  get name() {
    return 'MongoKerberosError';
  }
}

/** MONGODB-AWS authentication failed on the client. */
export class MongoAWSError extends MongoRuntimeError {
  get name() {
    return 'MongoAWSError';
  }
}

/** MONGODB-OIDC authentication failed on the client. */
export class MongoOIDCError extends MongoRuntimeError {
  get name() {
    return 'MongoOIDCError';
  }
}

/** MONGODB-OIDC on Azure failed to get a token. */
export class MongoAzureError extends MongoOIDCError {
  get name() {
    return 'MongoAzureError';
  }
}

/** MONGODB-OIDC on GCP failed to get a token. */
export class MongoGCPError extends MongoOIDCError {
  get name() {
    return 'MongoGCPError';
  }
}

/** The results of a client-level bulk write could not be read. */
export class MongoClientBulkWriteCursorError extends MongoRuntimeError {
  get name() {
    return 'MongoClientBulkWriteCursorError';
  }
}

/** A client-level bulk write failed on the client. */
export class MongoClientBulkWriteExecutionError extends MongoRuntimeError {
  get name() {
    return 'MongoClientBulkWriteExecutionError';
  }
}

/** A change stream failed. */
export class MongoChangeStreamError extends MongoRuntimeError {
  get name() {
    return 'MongoChangeStreamError';
  }
}

/** A GridFS upload or download failed (a missing file, say). */
export class MongoGridFSStreamError extends MongoRuntimeError {
  get name() {
    return 'MongoGridFSStreamError';
  }
}

/** A GridFS chunk is missing or malformed. */
export class MongoGridFSChunkError extends MongoRuntimeError {
  get name() {
    return 'MongoGridFSChunkError';
  }
}

/** The connection string (or the options its SRV records add) is invalid. */
export class MongoParseError extends MongoDriverError {
  get name() {
    return 'MongoParseError';
  }
}

/** No connection came out of the pool in time. */
export class MongoWaitQueueTimeoutError extends MongoDriverError {
  get name() {
    return 'MongoWaitQueueTimeoutError';
  }
}

/**
 * The operation's `timeoutMS` passed: the driver stopped all its work on it. What the
 * deadline cut (a server selection, a connection, a read), if anything, is its `cause`.
 */
export class MongoOperationTimeoutError extends MongoDriverError {
  get name() {
    return 'MongoOperationTimeoutError';
  }
}

/** Opening, reading or writing a connection failed. */
export class MongoNetworkError extends MongoError {
  get name() {
    return 'MongoNetworkError';
  }
}

/** A connection did not answer in time. */
export class MongoNetworkTimeoutError extends MongoNetworkError {
  get name() {
    return 'MongoNetworkTimeoutError';
  }
}

/** A server's pool was cleared while the operation waited for a connection. */
export class MongoPoolClearedError extends MongoNetworkError {
  get name() {
    return 'MongoPoolClearedError';
  }
}

/** A problem with the deployment as a whole. */
export class MongoSystemError extends MongoError {
  get name() {
    return 'MongoSystemError';
  }
}

/** No suitable server was found within `serverSelectionTimeoutMS`. */
export class MongoServerSelectionError extends MongoSystemError {
  get name() {
    return 'MongoServerSelectionError';
  }
}

// The classes the WebAssembly module names in its error documents (`error_class` and
// `reject_connection_string` in the Rust crate).
