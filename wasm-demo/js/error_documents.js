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
} from './errors.js';

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
  const Class = CLASSES[fields.name] ?? MongoError;
  if (fields.cause !== null && typeof fields.cause === 'object' && typeof fields.cause.name === 'string') {
    fields = { ...fields, cause: errorFromDocument(fields.cause) };
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
  return errorFromDocument(BSON.deserialize(rejection));
}
