// The CommonJS side of the package's types (pkg/node.d.cts, the copy of index.d.ts
// that build.sh makes): `require('anymongo')` from a CommonJS module, type-checked by
// test/types.test.js. usage.ts exercises the API itself; this checks that the same
// declarations are reached, and typed, through the `require` condition.
import anymongo = require('anymongo');
import { MongoClient, MongoServerError, ObjectId } from 'anymongo';

interface Order {
  _id?: ObjectId;
  item: string;
  qty: number;
}

export async function main(): Promise<void> {
  const client = new MongoClient('mongodb://localhost');
  const viaDefault: MongoClient = new anymongo.default('mongodb://localhost');
  const orders = client.db('shop').collection<Order>('orders');
  const result = await orders.insertOne({ item: 'a', qty: 1 });
  const id: ObjectId = result.insertedId;
  const found = await orders.findOne({ qty: { $gte: 1 } });
  const qty: number | undefined = found?.qty;
  // @ts-expect-error: qty is a number
  await orders.findOne({ qty: 'one' });
  client.on('commandStarted', (event) => void event.commandName);
  try {
    await client.close();
  } catch (error) {
    if (error instanceof MongoServerError) void error.codeName;
  }
  void [viaDefault, id, qty];
}
