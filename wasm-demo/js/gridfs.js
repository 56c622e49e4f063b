// GridFSBucket, as the Node.js driver's: files stored in chunks in `<bucket>.chunks`,
// described in `<bucket>.files`, over the core's GridFS (which checks every chunk's
// number and size on the way back). Uploads and downloads are Web Streams on every
// runtime, and Node.js streams where the entry point supplies them (Node.js, Bun).
import { ObjectId } from 'bson';
import { concernsOf } from './concerns.js';
import { MongoInvalidArgumentError } from './errors.js';
import { EventEmitter } from './events.js';
import { host } from './host.js';

const DEFAULT_CHUNK_SIZE_BYTES = 255 * 1024;

/** The bytes of a chunk written to an upload stream (a string is UTF-8). */
function bytesOf(chunk) {
  if (chunk instanceof Uint8Array) return chunk;
  if (typeof chunk === 'string') return new TextEncoder().encode(chunk);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new MongoInvalidArgumentError('a GridFS upload takes bytes (Uint8Array, Buffer, ArrayBuffer) or strings');
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A bucket of GridFS files: `new GridFSBucket(db, { bucketName, chunkSizeBytes })`. */
export class GridFSBucket extends EventEmitter {
  #db;
  #bucket;
  #streams;

  constructor(db, options = {}) {
    super();
    this.#db = db;
    const chunkSizeBytes = options.chunkSizeBytes ?? DEFAULT_CHUNK_SIZE_BYTES;
    this.#bucket = { bucketName: options.bucketName ?? 'fs', chunkSizeBytes };
    // The entry point's Node.js stream adapters, if any.
    this.#streams = host()?.streams ?? null;
    // The bucket's concerns over the database's, as its collections have them.
    this._concerns = concernsOf(options, db._concerns);
  }

  async #run(op, args) {
    const { client, databaseName } = this.#db;
    const concerns = this._concerns ? { concerns: this._concerns } : {};
    return client._run(op, databaseName, '', { bucket: this.#bucket, ...args, ...concerns });
  }

  /** A stream to write a new file named `filename` to; its `id` is the file's. */
  openUploadStream(filename, options = {}) {
    return this.openUploadStreamWithId(options.id ?? new ObjectId(), filename, options);
  }

  /** `openUploadStream` with the file's id given. */
  openUploadStreamWithId(id, filename, options = {}) {
    if (typeof filename !== 'string') {
      throw new MongoInvalidArgumentError('a GridFS file name must be a string');
    }
    const parts = [];
    const upload = { id };
    if (options.chunkSizeBytes !== undefined) upload.chunkSizeBytes = options.chunkSizeBytes;
    if (options.metadata !== undefined) upload.metadata = options.metadata;
    const web = new WritableStream({
      write: (chunk) => {
        parts.push(bytesOf(chunk));
      },
      close: async () => {
        await this.#run('gridfsUpload', { filename, content: concat(parts), options: upload });
      },
    });
    const stream = this.#streams ? this.#streams.writable(web) : web;
    stream.id = id;
    stream.filename = filename;
    return stream;
  }

  /** A stream of the content of the file with `id` (`options.start`, `options.end`: a byte range). */
  openDownloadStream(id, options = {}) {
    return this.#download('gridfsDownload', { id }, options);
  }

  /** A stream of a revision of the file named `filename` (`options.revision`: 0 the first, -1 the latest). */
  openDownloadStreamByName(filename, options = {}) {
    return this.#download('gridfsDownloadByName', { filename, revision: options.revision ?? -1 }, options);
  }

  #download(op, args, { start, end } = {}) {
    const web = new ReadableStream({
      start: async (controller) => {
        try {
          const { content } = await this.#run(op, args);
          const bytes = content.buffer.subarray(start ?? 0, end ?? content.buffer.length);
          if (bytes.length > 0) controller.enqueue(bytes);
          controller.close();
        } catch (error) {
          controller.error(error);
        }
      },
    });
    return this.#streams ? this.#streams.readable(web) : web;
  }

  /** A cursor over the files documents matching `filter`. */
  find(filter = {}, options = {}) {
    return this.#files().find(filter, options);
  }

  /** Deletes the file with `id` and its chunks. */
  async delete(id) {
    await this.#run('gridfsDelete', { id });
  }

  /** Renames the file with `id`. */
  async rename(id, filename) {
    await this.#run('gridfsRename', { id, newFilename: filename });
  }

  /** Deletes every revision of the file named `filename` (GridFS spec; not in the Node driver 7.x). */
  async deleteByName(filename) {
    await this.#run('gridfsDeleteByName', { filename });
  }

  /** Renames every revision of the file named `filename` (GridFS spec; not in the Node driver 7.x). */
  async renameByName(filename, newFilename) {
    await this.#run('gridfsRenameByName', { filename, newFilename });
  }

  /** Drops the bucket's collections. */
  async drop() {
    await this.#run('gridfsDrop', {});
  }

  #files() {
    const files = this.#db.collection(`${this.#bucket.bucketName}.files`);
    files._concerns = this._concerns;
    return files;
  }
}
