// The demo from the npm package under Node.js: the steps of the native and WASI demo
// (tests/src/demo.rs) through the Node-driver-shaped API: insert a few documents, read
// them back, print what happened. `./run.sh demo` runs it after the other two.
//
//   node wasm-demo/demo.js [URI] [COLLECTION]     (URI: else MONGODB_URI, else localhost)
//
// Exits 0 on success; otherwise prints one line saying why and exits 1.
import { BSON, MongoClient } from './js/node.js';

const DATABASE = 'anymongo_demo';
const NAMESPACE_NOT_FOUND = 26;

/** Runs the demo in `collectionName`, tagging every document with `runtime`; returns the lines to print. */
export async function demo(client, collectionName, runtime) {
  const db = client.db(DATABASE);
  const report = [];

  const hello = await db.command({ hello: 1 });
  const deployment = hello.setName ? `replica set '${hello.setName}'` : 'standalone';
  report.push(`connected from ${runtime}: wire version ${hello.maxWireVersion}, ${deployment}`);

  // Start from an empty collection; "ns not found" just means there was none.
  try {
    await db.command({ drop: collectionName });
  } catch (error) {
    if (error.code !== NAMESPACE_NOT_FOUND) throw error;
  }

  const collection = db.collection(collectionName);
  const fruits = ['apple', 'banana', 'cherry'].map((name, i) => ({ _id: i + 1, name, runtime }));
  const { insertedCount } = await collection.insertMany(fruits);
  report.push(`inserted ${insertedCount} documents into ${DATABASE}.${collectionName}`);

  const found = await collection.find({}).sort({ _id: 1 }).toArray();
  report.push(`read back ${found.length} documents:`);
  for (const document of found) report.push(`  ${BSON.EJSON.stringify(document)}`);
  return report;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [uri = process.env.MONGODB_URI || 'mongodb://127.0.0.1:27017', collectionName = 'npm'] = process.argv.slice(2);
  const client = new MongoClient(uri);
  try {
    await client.connect();
    for (const line of await demo(client, collectionName, 'npm')) console.log(line);
  } catch (error) {
    console.error(`demo failed: ${error.message}`);
    process.exitCode = 1;
  } finally {
    await client.close();
  }
}
