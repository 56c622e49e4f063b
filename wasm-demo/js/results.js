// Result classes shaped like the official Node.js driver's.
import { EJSON } from 'bson';

/**
 * The result of `collection.bulkWrite` (and the `result` of its MongoBulkWriteError).
 * Made, as the Node driver's, from the raw bulk result (`result`: `ok`, `nInserted`,
 * `nUpserted`, `nMatched`, `nModified`, `nRemoved`, `insertedIds` and `upserted` as
 * `[{ index, _id }]`, `writeErrors`, `writeConcernErrors`) and whether the writes were
 * ordered, which tells which inserts a write error stopped.
 */
export class BulkWriteResult {
  constructor(bulkResult, isOrdered) {
    Object.defineProperty(this, 'result', { value: bulkResult, enumerable: false });
    this.insertedCount = bulkResult.nInserted ?? 0;
    this.matchedCount = bulkResult.nMatched ?? 0;
    this.modifiedCount = bulkResult.nModified ?? 0;
    this.deletedCount = bulkResult.nRemoved ?? 0;
    this.upsertedCount = bulkResult.upserted.length;
    this.upsertedIds = idMap(bulkResult.upserted);
    this.insertedIds = idMap(insertedIds(bulkResult, isOrdered));
  }

  /** The raw result's `ok`: 1 when the bulk write completed. */
  get ok() {
    return this.result.ok;
  }

  isOk() {
    return this.result.ok === 1;
  }

  /** The raw result. */
  getRawResponse() {
    return this.result;
  }

  /** The `index`-th upsert, `{ index, _id }` (`index`: the write's). */
  getUpsertedIdAt(index) {
    return this.result.upserted[index];
  }

  hasWriteErrors() {
    return this.result.writeErrors.length > 0;
  }

  getWriteErrorCount() {
    return this.result.writeErrors.length;
  }

  getWriteErrorAt(index) {
    return this.result.writeErrors[index];
  }

  getWriteErrors() {
    return this.result.writeErrors;
  }

  /** The write concern error, the errors combined into one if several batches had one. */
  getWriteConcernError() {
    const errors = this.result.writeConcernErrors;
    if (errors.length <= 1) return errors[0];
    // 64: WriteConcernTimeout, as the Node driver reports several.
    return new WriteConcernError({ errmsg: errors.map((error) => error.errmsg).join(' and '), code: 64 });
  }

  toString() {
    return `BulkWriteResult(${EJSON.stringify(this.result)})`;
  }
}

/** `{ index: _id }` of `[{ index, _id }]`. */
function idMap(entries) {
  return Object.fromEntries(entries.map(({ index, _id }) => [index, _id]));
}

/** The inserts of `bulkResult.insertedIds` that no write error stopped. */
function insertedIds(bulkResult, isOrdered) {
  const { insertedIds: ids, writeErrors } = bulkResult;
  if (writeErrors.length === 0) return ids;
  if (isOrdered) return ids.slice(0, writeErrors[0].index);
  return ids.filter(({ index }) => !writeErrors.some((error) => error.index === index));
}

/**
 * The raw bulk result of what the WebAssembly module reports of a bulk write (counts
 * and `{ index: _id }` maps), with its write errors (WriteError objects).
 * @internal
 */
export function bulkResult(fields = {}, writeErrors = []) {
  const entries = (ids) => Object.entries(ids ?? {}).map(([index, _id]) => ({ index: Number(index), _id }));
  return {
    ok: 1,
    writeErrors,
    writeConcernErrors: [],
    insertedIds: entries(fields.insertedIds),
    nInserted: fields.insertedCount ?? 0,
    nUpserted: fields.upsertedCount ?? 0,
    nMatched: fields.matchedCount ?? 0,
    nModified: fields.modifiedCount ?? 0,
    nRemoved: fields.deletedCount ?? 0,
    upserted: entries(fields.upsertedIds),
  };
}

/** A write concern error of a bulk write (the server's `writeConcernError`). */
export class WriteConcernError {
  constructor(error) {
    Object.defineProperty(this, 'serverError', { value: error, enumerable: false });
  }

  get code() {
    return this.serverError.code;
  }

  get errmsg() {
    return this.serverError.errmsg;
  }

  get errInfo() {
    return this.serverError.errInfo;
  }

  toJSON() {
    return this.serverError;
  }

  toString() {
    return `WriteConcernError(${this.errmsg})`;
  }
}

/**
 * The result of `client.bulkWrite`: the counts, and with `verboseResults: true` the
 * result of each write by index of its model (`insertResults`, `updateResults`,
 * `deleteResults`, Maps).
 */
export class ClientBulkWriteResult {
  /** @internal `fields`: what the WebAssembly module reports. */
  constructor(fields = {}) {
    this.acknowledged = fields.acknowledged ?? true;
    for (const name of ['insertedCount', 'upsertedCount', 'matchedCount', 'modifiedCount', 'deletedCount']) {
      this[name] = fields[name] ?? 0;
    }
    for (const name of ['insertResults', 'updateResults', 'deleteResults']) {
      if (fields[name]) {
        this[name] = new Map(Object.entries(fields[name]).map(([index, result]) => [Number(index), result]));
      }
    }
  }
}
