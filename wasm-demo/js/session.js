// ClientSession and ChangeStream, shaped like the Node.js driver's, over the core's
// sessions (transactions, causal consistency, snapshot reads) and change streams.
import { BSON } from 'bson';
import { toError } from './error_documents.js';
import { MongoAPIError, MongoExpiredSessionError, MongoTransactionError } from './errors.js';
import { concernsOf } from './concerns.js';
import { EventEmitter } from './events.js';

/** The Node driver's names of the transaction states (`session.transaction.state`). */
const TRANSACTION_STATES = {
  none: 'NO_TRANSACTION',
  starting: 'STARTING_TRANSACTION',
  in_progress: 'TRANSACTION_IN_PROGRESS',
  committed: 'TRANSACTION_COMMITTED',
  aborted: 'TRANSACTION_ABORTED',
};

/** BSON of `value`, or undefined. */
function optional(value) {
  return value === undefined || value === null ? undefined : BSON.deserialize(value);
}

/**
 * A session (`client.startSession()`): pass it as `{ session }` to operations. Its
 * core session is taken when it is first used or a transaction starts on a connected
 * client, so a session can be started before the client connects, and a transaction
 * too (checked then when its first operation runs).
 */
export class ClientSession {
  #client;
  #options;
  #native = null;
  #id;
  /** The options of a transaction started before the session had a server session. */
  #pendingTransaction = null;
  #ended = false;

  /** @internal `client.startSession(options)`. */
  constructor(client, options = {}) {
    this.#client = client;
    this.#options = { ...options };
  }

  /** The client that started the session. */
  get client() {
    return this.#client;
  }

  /** Whether the session was started by the application (always, for this class). */
  get explicit() {
    return true;
  }

  /** Whether the session is a snapshot session. */
  get snapshotEnabled() {
    return this.#options.snapshot === true;
  }

  /**
   * A snapshot session's snapshot time (a Timestamp): the `snapshotTime` it was started
   * with, else the `atClusterTime` of its first read; undefined before that, and for
   * other sessions.
   */
  get snapshotTime() {
    return optional(this.#native?.snapshotTime())?.t ?? this.#options.snapshotTime ?? undefined;
  }

  /** The session id, `{ id: UUID }`, once the session was used. */
  get id() {
    // One object for the session's life, as the Node driver's (`session.serverSession.id
    // === session.id`): the id, once the core took a server session, never changes.
    this.#id ??= optional(this.#native?.id());
    return this.#id;
  }

  /** The last `$clusterTime` the session saw. */
  get clusterTime() {
    return optional(this.#native?.clusterTime());
  }

  /** The last operation time the session saw. */
  get operationTime() {
    return optional(this.#native?.operationTime())?.t;
  }

  /** The server session: its `id`, and whether a network error made it dirty. */
  get serverSession() {
    const native = this.#native;
    return native ? { id: this.id, isDirty: native.isDirty() } : undefined;
  }

  get hasEnded() {
    return this.#ended;
  }

  /** Whether the session's transaction is pinned to a mongos or a load balancer's connection. */
  get isPinned() {
    return Boolean(this.#native?.pinnedServer());
  }

  /** The transaction: its `state` (the Node driver's names), `isActive`, `options`. */
  get transaction() {
    const state = this.#native ? this.#native.transactionState() : this.#pendingTransaction ? 'starting' : 'none';
    return {
      state: TRANSACTION_STATES[state],
      isActive: state === 'starting' || state === 'in_progress',
      isPinned: this.isPinned,
    };
  }

  advanceClusterTime(clusterTime) {
    this.#session().advanceClusterTime(BSON.serialize(clusterTime));
  }

  advanceOperationTime(operationTime) {
    this.#session().advanceOperationTime(BSON.serialize({ t: operationTime }));
  }

  inTransaction() {
    return this.#native ? this.#native.inTransaction() : this.#pendingTransaction !== null;
  }

  /** Starts a transaction; its first operation sends `startTransaction`. */
  startTransaction(options = {}) {
    this.#checkNotEnded();
    this.#attachIfConnected();
    if (!this.#native) {
      if (this.#pendingTransaction) {
        throw new MongoTransactionError('Transaction already in progress');
      }
      this.#pendingTransaction = options;
      return;
    }
    try {
      this.#native.startTransaction(BSON.serialize(transactionOptions(options)));
    } catch (error) {
      throw toError(error);
    }
  }

  async commitTransaction() {
    return this.#end('commitTransaction');
  }

  async abortTransaction() {
    return this.#end('abortTransaction');
  }

  async #end(name) {
    this.#checkNotEnded();
    this.#attachIfConnected();
    if (!this.#native) {
      if (!this.#pendingTransaction) {
        throw new MongoTransactionError('No transaction started');
      }
      // Nothing was sent in it: committing or aborting sends nothing either.
      this.#pendingTransaction = null;
      return;
    }
    try {
      await this.#native[name]();
    } catch (error) {
      throw toError(error);
    }
  }

  /**
   * Runs `fn(session)` in a transaction and commits it, retrying both on the errors
   * the Convenient Transactions API spec names, for up to 120 seconds (or the
   * session's timeoutMS); resolves to what `fn` resolved to.
   */
  async withTransaction(fn, options = {}) {
    this.#checkNotEnded();
    const native = this._attach(await this.#client._connected());
    try {
      return await native.withTransaction(() => fn(this), BSON.serialize(transactionOptions(options)));
    } catch (error) {
      throw toError(error);
    }
  }

  /** Ends the session (aborting an open transaction); its server session is pooled again. */
  async endSession() {
    if (this.#ended) return;
    this.#ended = true;
    this.#pendingTransaction = null;
    const native = this.#native;
    if (native) {
      await native.endSession();
    }
  }

  async [Symbol.asyncDispose]() {
    await this.endSession();
  }

  /** Takes the server session now if the client is connected: the core checks transactions. */
  #attachIfConnected() {
    const nativeClient = this.#client._nativeIfConnected();
    if (!this.#native && nativeClient) this._attach(nativeClient);
  }

  #checkNotEnded() {
    if (this.#ended) {
      throw new MongoExpiredSessionError('Cannot use a session that has ended');
    }
  }

  #session() {
    if (!this.#native) {
      throw new MongoAPIError('the session has not been used yet');
    }
    return this.#native;
  }

  /**
   * @internal The session's native session on `nativeClient`, taken on first use;
   * a transaction started before then starts now.
   */
  _attach(nativeClient) {
    this.#checkNotEnded();
    if (!this.#native) {
      try {
        this.#native = nativeClient.startSession(BSON.serialize(sessionOptions(this.#options)));
        const pending = this.#pendingTransaction;
        this.#pendingTransaction = null;
        if (pending) {
          this.#native.startTransaction(BSON.serialize(transactionOptions(pending)));
        }
      } catch (error) {
        throw toError(error);
      }
    }
    return this.#native;
  }

  /** @internal A handle on the native session, moved into one call of the module. */
  _handle(nativeClient) {
    return this._attach(nativeClient).handle();
  }
}

/** Whether two byte arrays (either may be null) hold the same bytes. */
function sameBytes(a, b) {
  return a !== null && b !== null && a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Options of a transaction (`readConcern`, `writeConcern`, `readPreference`, `maxCommitTimeMS`). */
function transactionOptions(options) {
  const out = concernsOf(options) ?? {};
  if (typeof options.maxCommitTimeMS === 'number') out.maxCommitTimeMS = options.maxCommitTimeMS;
  return out;
}

function sessionOptions(options) {
  const out = {};
  for (const name of ['causalConsistency', 'snapshot', 'snapshotTime', 'defaultTimeoutMS']) {
    if (options[name] !== undefined && options[name] !== null) out[name] = options[name];
  }
  if (options.defaultTransactionOptions) {
    out.defaultTransactionOptions = transactionOptions(options.defaultTransactionOptions);
  }
  return out;
}

/**
 * The changes to a collection, a database or the deployment (`watch()`): read with
 * `next()`, `tryNext()`, `for await`, or `on('change', listener)`. The aggregate that
 * opens it is sent on the first read.
 */
export class ChangeStream extends EventEmitter {
  #client;
  #db;
  #collection;
  #args;
  #native = null;
  #opening = null;
  #buffered = null;
  #closed = false;
  #streaming = false;
  /** The BSON of the resume token last emitted with `resumeTokenChanged` (the token once closed). */
  #emittedToken = null;

  /** @internal */
  constructor(client, db, collection, pipeline, options, concerns) {
    super();
    if (!Array.isArray(pipeline)) {
      throw new MongoAPIError('a change stream pipeline must be an array of stages');
    }
    this.#client = client;
    this.#db = db;
    this.#collection = collection;
    this.#args = { pipeline, options: { ...options } };
    if (concerns) this.#args.concerns = concerns;
  }

  get closed() {
    return this.#closed;
  }

  /** The token to resume after the last change returned (or a later one of the server's). */
  get resumeToken() {
    const token = this.#native?.resumeToken() ?? this.#emittedToken;
    if (token) return BSON.deserialize(token);
    return this.#args.options.startAfter ?? this.#args.options.resumeAfter ?? null;
  }

  async #open() {
    if (this.#closed) {
      throw new MongoAPIError('ChangeStream is closed');
    }
    this.#opening ??= this.#client._watch(this.#db, this.#collection, this.#args).then((native) => {
      this.#native = native;
      this.#noteResumeToken();
    });
    try {
      await this.#opening;
    } catch (error) {
      this.#opening = null;
      throw error;
    }
    return this.#native;
  }

  /**
   * @internal Sends the aggregate that opens the stream, without reading: what the
   * unified tests' createChangeStream asks (the Node driver's runner calls a private
   * cursor method for the same).
   */
  async _open() {
    await this.#open();
    return this;
  }

  /** The next change if the server has one now (one getMore), else null. */
  async tryNext() {
    if (this.#buffered) {
      const change = this.#buffered;
      this.#buffered = null;
      return change;
    }
    const native = await this.#open();
    let change;
    try {
      change = await native.tryNext();
    } catch (error) {
      throw toError(error);
    }
    if (change === undefined) {
      await this.close();
      return null;
    }
    this.#noteResumeToken();
    return change === null ? null : BSON.deserialize(change);
  }

  /**
   * Emits `resumeTokenChanged` with the token if it changed: a change's `_id`, or
   * the server's `postBatchResumeToken` of a batch it has read to its end.
   */
  #noteResumeToken() {
    const token = this.#native?.resumeToken();
    if (!token || sameBytes(token, this.#emittedToken)) return;
    this.#emittedToken = token;
    this.emit('resumeTokenChanged', BSON.deserialize(token));
  }

  /** Whether there is a next change, waiting for one. */
  async hasNext() {
    while (!this.#buffered) {
      if (this.#closed) return false;
      this.#buffered = await this.tryNext();
    }
    return true;
  }

  /** The next change, waiting for one. */
  async next() {
    if (!(await this.hasNext())) {
      throw new MongoAPIError('ChangeStream is closed');
    }
    return this.tryNext();
  }

  async *[Symbol.asyncIterator]() {
    try {
      while (await this.hasNext()) {
        yield await this.tryNext();
      }
    } finally {
      await this.close();
    }
  }

  /** `on('change', listener)` reads the stream and emits each change (`'error'` on failure). */
  on(name, listener) {
    super.on(name, listener);
    if (name === 'change' && !this.#streaming) {
      this.#streaming = true;
      this.#stream();
    }
    return this;
  }

  async #stream() {
    try {
      while (this.listenerCount('change') > 0 && (await this.hasNext())) {
        this.emit('change', await this.tryNext());
      }
    } catch (error) {
      if (!this.#closed) this.emit('error', error);
    } finally {
      this.#streaming = false;
    }
  }

  /** Kills the server cursor (if open); emits `'close'`. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const native = this.#native;
    this.#native = null;
    try {
      await native?.close();
    } catch (error) {
      throw toError(error);
    } finally {
      native?.free();
      this.emit('close');
    }
  }

  async [Symbol.asyncDispose]() {
    await this.close();
  }
}
