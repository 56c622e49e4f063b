// The error classes against the official Node.js driver's (mongodb 7): each one's
// parent and name, and the labels; and a connection string the core refuses raised as
// MongoParseError (no server needed).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as anymongo from '../js/node.js';

// [class, its parent] as the mongodb package declares them (src/error.ts,
// src/bulk/common.ts; the pool errors, which it does not export, by their parents in
// src/cmap/errors.ts).
const HIERARCHY = [
  ['MongoError', 'Error'],
  ['MongoServerError', 'MongoError'],
  ['MongoBulkWriteError', 'MongoServerError'],
  ['MongoClientBulkWriteError', 'MongoServerError'],
  ['MongoWriteConcernError', 'MongoServerError'],
  ['MongoDriverError', 'MongoError'],
  ['MongoAPIError', 'MongoDriverError'],
  ['MongoInvalidArgumentError', 'MongoAPIError'],
  ['MongoCompatibilityError', 'MongoAPIError'],
  ['MongoMissingCredentialsError', 'MongoAPIError'],
  ['MongoMissingDependencyError', 'MongoAPIError'],
  ['MongoTopologyClosedError', 'MongoAPIError'],
  ['MongoClientClosedError', 'MongoAPIError'],
  ['MongoServerClosedError', 'MongoAPIError'],
  ['MongoNotConnectedError', 'MongoAPIError'],
  ['MongoTransactionError', 'MongoAPIError'],
  ['MongoExpiredSessionError', 'MongoAPIError'],
  ['MongoBatchReExecutionError', 'MongoAPIError'],
  ['MongoTailableCursorError', 'MongoAPIError'],
  ['MongoCursorInUseError', 'MongoAPIError'],
  ['MongoCursorExhaustedError', 'MongoAPIError'],
  ['MongoRuntimeError', 'MongoDriverError'],
  ['MongoStalePrimaryError', 'MongoRuntimeError'],
  ['MongoDecompressionError', 'MongoRuntimeError'],
  ['MongoUnexpectedServerResponseError', 'MongoRuntimeError'],
  ['MongoKerberosError', 'MongoRuntimeError'],
  ['MongoAWSError', 'MongoRuntimeError'],
  ['MongoOIDCError', 'MongoRuntimeError'],
  ['MongoAzureError', 'MongoOIDCError'],
  ['MongoGCPError', 'MongoOIDCError'],
  ['MongoClientBulkWriteCursorError', 'MongoRuntimeError'],
  ['MongoClientBulkWriteExecutionError', 'MongoRuntimeError'],
  ['MongoChangeStreamError', 'MongoRuntimeError'],
  ['MongoGridFSStreamError', 'MongoRuntimeError'],
  ['MongoGridFSChunkError', 'MongoRuntimeError'],
  ['MongoParseError', 'MongoDriverError'],
  ['MongoWaitQueueTimeoutError', 'MongoDriverError'],
  ['MongoOperationTimeoutError', 'MongoDriverError'],
  ['MongoNetworkError', 'MongoError'],
  ['MongoNetworkTimeoutError', 'MongoNetworkError'],
  ['MongoPoolClearedError', 'MongoNetworkError'],
  ['MongoSystemError', 'MongoError'],
  ['MongoServerSelectionError', 'MongoSystemError'],
];

/**
 * An error of `Class` with `message`, made as the official driver makes it: a server
 * error from an error document (a write concern error from the server's reply, a bulk
 * write error with its result), the others from the message.
 */
function made(Class, message) {
  if (Class === anymongo.MongoWriteConcernError) {
    return new Class({ writeConcernError: { code: 64, errmsg: message } });
  }
  if (Class === anymongo.MongoBulkWriteError) {
    return new Class({ message, code: 11000, writeErrors: [] }, new anymongo.BulkWriteResult(emptyBulkResult(), true));
  }
  if (Class === anymongo.MongoServerError || Class.prototype instanceof anymongo.MongoServerError) {
    return new Class({ message });
  }
  return new Class(message);
}

function emptyBulkResult() {
  return { ok: 1, writeErrors: [], writeConcernErrors: [], insertedIds: [], nInserted: 0, nUpserted: 0, nMatched: 0, nModified: 0, nRemoved: 0, upserted: [] };
}

describe('error classes', () => {
  it("have the official driver's parents and names", () => {
    for (const [name, parent] of HIERARCHY) {
      const Class = anymongo[name];
      assert.equal(typeof Class, 'function', `${name} is exported`);
      assert.equal(Object.getPrototypeOf(Class), parent === 'Error' ? Error : anymongo[parent], `${name} extends ${parent}`);
      const error = made(Class, 'what happened');
      assert.equal(error.name, name);
      assert.equal(error.message, 'what happened');
      assert.deepEqual(error.errorLabels, []);
    }
  });

  it('carry error labels', () => {
    const error = new anymongo.MongoNetworkError('reset', { errorLabels: [anymongo.MongoErrorLabel.RetryableWriteError] });
    assert.ok(error.hasErrorLabel('RetryableWriteError'));
    assert.ok(!error.hasErrorLabel(anymongo.MongoErrorLabel.TransientTransactionError));
    error.addErrorLabel('TransientTransactionError');
    error.addErrorLabel('TransientTransactionError');
    assert.deepEqual(error.errorLabels, ['RetryableWriteError', 'TransientTransactionError']);
  });

  it('raises a connection string the core refuses as MongoParseError', { timeout: 10_000 }, async () => {
    for (const uri of ['mongodb://127.0.0.1:99999/', 'mongodb://127.0.0.1:1,127.0.0.1:2/?directConnection=true']) {
      const client = new anymongo.MongoClient(uri);
      await assert.rejects(client.connect(), (error) => {
        assert.ok(error instanceof anymongo.MongoParseError, `${uri}: ${error.name}: ${error.message}`);
        assert.ok(error instanceof anymongo.MongoDriverError);
        assert.ok(!(error instanceof anymongo.MongoAPIError));
        assert.equal(error.name, 'MongoParseError');
        return true;
      });
      await client.close();
    }
  });
});
