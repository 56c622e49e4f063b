// A template for a Cloudflare Worker (module syntax) that serves JSON items from MongoDB
// through the npm package `anymongo`:
//   GET  /items/:id   the item whose _id is :id (an ObjectId's 24 hex digits, or a
//                     string, percent-encoded), as relaxed Extended JSON; 404 when
//                     there is none
//   POST /items       inserts the JSON object of the body (Extended JSON accepted); 201
//                     with {"insertedId": ...} and a Location header
// Every failure is a status with a body {"error": "..."}: 400 bad input, 404/405 unknown
// route or method, 409 duplicate _id, 503 when no server answers within
// serverSelectionTimeoutMS, 500 otherwise. Configured by the MONGODB_URI variable
// (`wrangler secret put MONGODB_URI`); the items live in the collection `items` of the
// connection string's database, or of `edge` when it names none.
//
// The MongoClient lives in a Durable Object (`Items`), not in the Worker's module scope:
// Workers refuse to use a socket opened by one request from another request ("Cannot
// perform I/O on behalf of a different request"), so a client shared by the requests of
// an isolate fails on every request after the first. A Durable Object's requests share
// its sockets: the first request connects, the later ones reuse its connections.
import { BSON, MongoClient, ObjectId } from 'anymongo';

/** The items collection, through the client of the Durable Object `holder` (made on first use). */
function items(holder) {
  const uri = holder.env.MONGODB_URI;
  if (!uri) {
    throw new HttpError(500, 'MONGODB_URI is not set: `wrangler secret put MONGODB_URI`, or a [vars] entry');
  }
  holder.client ??= new MongoClient(uri);
  // The path of the connection string names the database: mongodb://hosts/<database>?...
  const database = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/.exec(uri)?.[1];
  return holder.client.db(database ? decodeURIComponent(database) : 'edge').collection('items');
}

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function json(status, body, headers = {}) {
  return new Response(BSON.EJSON.stringify(body, { relaxed: true }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The driver's errors as statuses: an unreachable deployment is the upstream's 503. */
function statusOf(error) {
  if (error instanceof HttpError) return error.status;
  switch (error.name) {
    case 'MongoServerSelectionError':
    case 'MongoNetworkError':
    case 'MongoNetworkTimeoutError':
    case 'MongoPoolClearedError':
    case 'MongoWaitQueueTimeoutError':
      return 503;
    case 'MongoOperationTimeoutError':
      return 504;
    default:
      return error.code === 11000 ? 409 : 500;
  }
}

/** `GET /items/:id`: 24 hex digits are an ObjectId, or a string _id that looks like one. */
function idFilter(id) {
  return ObjectId.isValid(id) && id.length === 24 ? { _id: { $in: [new ObjectId(id), id] } } : { _id: id };
}

async function readObject(request) {
  let document;
  try {
    document = BSON.EJSON.parse(await request.text(), { relaxed: true });
  } catch (error) {
    throw new HttpError(400, `the body is not JSON: ${error.message}`);
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new HttpError(400, 'the body must be a JSON object');
  }
  return document;
}

async function route(request, holder) {
  const { pathname } = new URL(request.url);
  const segments = pathname.replace(/\/$/, '').split('/').slice(1);
  if (segments[0] !== 'items' || segments.length > 2) {
    throw new HttpError(404, `no route ${pathname}: use GET /items/:id or POST /items`);
  }
  if (segments.length === 1) {
    if (request.method !== 'POST') throw new HttpError(405, '/items takes POST');
    const document = await readObject(request);
    const { insertedId } = await items(holder).insertOne(document);
    const location = typeof insertedId === 'string' || insertedId instanceof ObjectId ? `/items/${encodeURIComponent(insertedId)}` : null;
    return json(201, { insertedId }, location ? { location } : {});
  }
  if (request.method !== 'GET') throw new HttpError(405, '/items/:id takes GET');
  let id;
  try {
    id = decodeURIComponent(segments[1]);
  } catch {
    throw new HttpError(400, `the id ${segments[1]} is not percent-encoded correctly`);
  }
  const item = await items(holder).findOne(idFilter(id));
  if (item === null) throw new HttpError(404, `no item with _id ${id}`);
  return json(200, item);
}

/** The Durable Object that holds the client; every request goes through one of them. */
export class Items {
  constructor(state, env) {
    this.env = env;
    this.client = null;
  }

  async fetch(request) {
    try {
      return await route(request, this);
    } catch (error) {
      return json(statusOf(error), { error: error.message });
    }
  }
}

export default {
  // One object for the whole Worker: it runs near where it was first used. To keep one
  // per region instead, name it after the request's colo (request.cf.colo).
  async fetch(request, env) {
    return env.ITEMS.get(env.ITEMS.idFromName('items')).fetch(request);
  },
};
