// Errors as the WebAssembly module reports them: an error document (see
// `ops::error_document` in the Rust crate), turned into the Node driver's error class.
// Internal: the package exports the classes (errors.js), not these.
import { BSON } from 'bson';
import {
  MongoBulkWriteError,
  MongoClientBulkWriteError,
  MongoCompatibilityError,
  MongoError,
  MongoGridFSChunkError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoPoolClearedError,
  MongoRuntimeError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWaitQueueTimeoutError,
  MongoWriteConcernError,
  WriteError,
} from './errors.js';
import { BulkWriteResult, bulkResult, ClientBulkWriteResult } from './results.js';

const CLASSES = {
  MongoError,
  MongoServerError,
  MongoBulkWriteError,
  MongoClientBulkWriteError,
  MongoGridFSChunkError,
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
  MongoParseError,
  MongoRuntimeError,
};

/** The error of an error document (its `cause`, itself an error document, included). */
export function errorFromDocument(fields) {
  if (fields.cause !== null && typeof fields.cause === 'object' && typeof fields.cause.name === 'string') {
    fields = { ...fields, cause: errorFromDocument(fields.cause) };
  }
  const Class = CLASSES[fields.name] ?? MongoError;
  if (!(Class === MongoServerError || Class.prototype instanceof MongoServerError)) {
    return new Class(fields.message, fields);
  }
  const { name: _name, message, errorLabels, errorResponse, writeErrors, result, partialResult, ...rest } = fields;
  let error;
  if (Class === MongoBulkWriteError) {
    // The Node driver's: the server's entries as WriteError objects (each write's `op`
    // is added by the collection, which knows the writes), the first one's message.
    const errors = writeErrors.map(({ index, code, errmsg, errInfo }) => new WriteError({ index, code, errmsg, errInfo, op: undefined }));
    error = new MongoBulkWriteError({ message, code: rest.code, writeErrors: errors }, new BulkWriteResult(bulkResult(result, errors), false));
  } else if (Class === MongoWriteConcernError) {
    const { code, codeName, errInfo } = rest;
    error = new MongoWriteConcernError(errorResponse ?? { writeConcernError: defined({ code, codeName, errmsg: message, errInfo }) });
  } else if (Class === MongoClientBulkWriteError) {
    error = new MongoClientBulkWriteError({ message });
    error.writeErrors = new Map(Object.entries(writeErrors ?? {}).map(([index, entry]) => [Number(index), entry]));
    error.writeConcernErrors = rest.writeConcernErrors ?? [];
    error.partialResult = partialResult ? new ClientBulkWriteResult(partialResult) : undefined;
  } else {
    // The server's reply to a command, or the entry of a single write's error, as the
    // Node driver builds the error from either.
    const { code, codeName, errInfo } = rest;
    error = new Class(errorResponse ?? defined({ code, codeName, errmsg: message, errInfo }));
  }
  for (const [name, value] of Object.entries(rest)) {
    if (value !== undefined && !(name in error)) error[name] = value;
  }
  if (errorResponse && Class !== MongoServerError) error.errorResponse = errorResponse;
  // The core's message: the server's `errmsg` where there is one, else its own account.
  error.message = message;
  // The core's labels: the server's and those the driver added (RetryableWriteError...).
  error.errorLabels = [...(errorLabels ?? [])];
  return error;
}

/** `document` without its undefined fields. */
function defined(document) {
  return Object.fromEntries(Object.entries(document).filter(([, value]) => value !== undefined));
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
  return errorFromDocument(BSON.deserialize(rejection));
}
