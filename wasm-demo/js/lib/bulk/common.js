// `anymongo/lib/bulk/common`, installed as `mongodb`: `mongodb/lib/bulk/common`, which
// libraries (Mongoose) require for the bulk write classes. The same classes as the
// package's main entry (`instanceof` holds across both), read from its namespace so
// that a class the package does not have is undefined here, as a missing export.
import * as driver from '../../client.js';

/** The kinds of write a bulk operation batches (the Node driver's numbering). */
export const BatchType = Object.freeze({ INSERT: 1, UPDATE: 2, DELETE: 3 });
export const BulkWriteResult = driver.BulkWriteResult;
export const MongoBulkWriteError = driver.MongoBulkWriteError;
export const WriteError = driver.WriteError;
export const WriteConcernError = driver.WriteConcernError;
export const BulkOperationBase = driver.BulkOperation;
