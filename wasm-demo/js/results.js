// Result classes shaped like the official Node.js driver's.

/** The result of `collection.bulkWrite` (and the `result` of its MongoBulkWriteError). */
export class BulkWriteResult {
  /** @internal `fields`: the counts and id maps the WebAssembly module reports. */
  constructor(fields = {}, writeErrors = []) {
    this.insertedCount = fields.insertedCount ?? 0;
    this.matchedCount = fields.matchedCount ?? 0;
    this.modifiedCount = fields.modifiedCount ?? 0;
    this.deletedCount = fields.deletedCount ?? 0;
    this.upsertedCount = fields.upsertedCount ?? 0;
    this.upsertedIds = fields.upsertedIds ?? {};
    this.insertedIds = fields.insertedIds ?? {};
    Object.defineProperty(this, 'writeErrors', { value: writeErrors, enumerable: false });
  }

  /** 1, as the server's `ok`. */
  get ok() {
    return 1;
  }

  /** Whether the bulk write completed (this result is only created when it did). */
  isOk() {
    return this.ok === 1;
  }

  getInsertedIdAt(index) {
    return this.insertedIds[index];
  }

  getUpsertedIdAt(index) {
    const _id = this.upsertedIds[index];
    return _id === undefined ? undefined : { index, _id };
  }

  getUpsertedIds() {
    return Object.entries(this.upsertedIds).map(([index, _id]) => ({ index: Number(index), _id }));
  }

  hasWriteErrors() {
    return this.writeErrors.length > 0;
  }

  getWriteErrorCount() {
    return this.writeErrors.length;
  }

  getWriteErrorAt(index) {
    return this.writeErrors[index];
  }

  getWriteErrors() {
    return this.writeErrors;
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
