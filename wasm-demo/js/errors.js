// The error classes, named and shaped like the official Node.js driver's: a server
// error carries `code`, `codeName`, `errorLabels` (and `errorResponse`, the server's
// reply), whatever the runtime.
import { BSON } from 'bson';

/** The base class of every error of the driver. */
export class MongoError extends Error {
  constructor(message, fields = {}) {
    super(message);
    const { name: _name, message: _message, errorLabels, ...rest } = fields;
    Object.assign(this, rest);
    this.errorLabels = Array.isArray(errorLabels) ? errorLabels : [];
  }

  get name() {
    return 'MongoError';
  }

  /** Whether the error carries `label` (e.g. `"RetryableWriteError"`). */
  hasErrorLabel(label) {
    return this.errorLabels.includes(label);
  }
}

/** The server answered with an error (`ok: 0`, or a write error). */
export class MongoServerError extends MongoError {
  constructor(message, fields = {}) {
    super(message, fields);
    this.errmsg ??= fields.errorResponse?.errmsg ?? message;
  }

  get name() {
    return 'MongoServerError';
  }
}

/** Some writes of an `insertMany` failed: `writeErrors`, and `insertedIds` of the others. */
export class MongoBulkWriteError extends MongoServerError {
  get name() {
    return 'MongoBulkWriteError';
  }
}

/** The write was done but its write concern was not satisfied. */
export class MongoWriteConcernError extends MongoServerError {
  get name() {
    return 'MongoWriteConcernError';
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

/** No suitable server was found within `serverSelectionTimeoutMS`. */
export class MongoServerSelectionError extends MongoError {
  get name() {
    return 'MongoServerSelectionError';
  }
}

/** An argument or option is invalid (a malformed URI, say). */
export class MongoInvalidArgumentError extends MongoError {
  get name() {
    return 'MongoInvalidArgumentError';
  }
}

/** The server's wire versions do not overlap the driver's. */
export class MongoCompatibilityError extends MongoError {
  get name() {
    return 'MongoCompatibilityError';
  }
}

/** The client is closed. */
export class MongoTopologyClosedError extends MongoError {
  get name() {
    return 'MongoTopologyClosedError';
  }
}

/** No connection came out of the pool in time. */
export class MongoWaitQueueTimeoutError extends MongoError {
  get name() {
    return 'MongoWaitQueueTimeoutError';
  }
}

/**
 * The operation's `timeoutMS` passed: the driver stopped all its work on it. What the
 * deadline cut (a server selection, a connection, a read), if anything, is its `cause`.
 */
export class MongoOperationTimeoutError extends MongoError {
  get name() {
    return 'MongoOperationTimeoutError';
  }
}

const CLASSES = {
  MongoError,
  MongoServerError,
  MongoBulkWriteError,
  MongoWriteConcernError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoPoolClearedError,
  MongoServerSelectionError,
  MongoInvalidArgumentError,
  MongoCompatibilityError,
  MongoTopologyClosedError,
  MongoWaitQueueTimeoutError,
  MongoOperationTimeoutError,
};

/** The error of an error document (its `cause`, itself an error document, included). */
function fromDocument(fields) {
  const Class = CLASSES[fields.name] ?? MongoError;
  if (fields.cause !== null && typeof fields.cause === 'object' && typeof fields.cause.name === 'string') {
    fields = { ...fields, cause: fromDocument(fields.cause) };
  }
  return new Class(fields.message, fields);
}

/**
 * The error for what the WebAssembly module rejected with: the BSON of an error
 * document (see `ops::error_document` in the Rust crate), or any other exception,
 * returned as it is.
 */
export function toError(rejection) {
  if (!(rejection instanceof Uint8Array)) {
    return rejection;
  }
  return fromDocument(BSON.deserialize(rejection));
}
