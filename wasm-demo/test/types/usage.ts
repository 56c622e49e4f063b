// Type-checked, never run (test/types.test.js runs `tsc --strict --noEmit` over it):
// every class and method of the package's public API used once at least, with a
// typed schema, as an application would, and `@ts-expect-error` lines that must fail
// to compile, so that declarations too loose to catch a mistake fail the test.
// The package imports itself by its name (its package.json's `exports`, `types`
// condition), as an application imports it.
import MongoClientDefault, {
  Admin,
  AggregationCursor,
  Binary,
  BSON,
  BulkOperation,
  BulkWriteResult,
  ChangeStream,
  ClientBulkWriteResult,
  ClientSession,
  Collection,
  CommandFailedEvent,
  CommandStartedEvent,
  CommandSucceededEvent,
  ConnectionCheckedInEvent,
  ConnectionCheckedOutEvent,
  ConnectionCheckOutFailedEvent,
  ConnectionCheckOutStartedEvent,
  ConnectionClosedEvent,
  ConnectionCreatedEvent,
  ConnectionPoolClearedEvent,
  ConnectionPoolClosedEvent,
  ConnectionPoolCreatedEvent,
  ConnectionPoolMonitoringEvent,
  ConnectionPoolReadyEvent,
  ConnectionReadyEvent,
  Db,
  Decimal128,
  dnsOverHttps,
  Double,
  EventEmitter,
  FindCursor,
  GridFSBucket,
  Int32,
  ListCollectionsCursor,
  ListIndexesCursor,
  Long,
  MaxKey,
  MinKey,
  MongoAPIError,
  MongoAWSError,
  MongoAzureError,
  MongoBatchReExecutionError,
  MongoBulkWriteError,
  MongoChangeStreamError,
  MongoClient,
  MongoClientBulkWriteCursorError,
  MongoClientBulkWriteError,
  MongoClientBulkWriteExecutionError,
  MongoClientClosedError,
  MongoCompatibilityError,
  MongoCursorExhaustedError,
  MongoCursorInUseError,
  MongoDecompressionError,
  MongoDriverError,
  MongoError,
  MongoErrorLabel,
  MongoExpiredSessionError,
  MongoGCPError,
  MongoGridFSChunkError,
  MongoGridFSStreamError,
  MongoInvalidArgumentError,
  MongoKerberosError,
  MongoMissingCredentialsError,
  MongoMissingDependencyError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoNotConnectedError,
  MongoOIDCError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoPoolClearedError,
  MongoRuntimeError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoStalePrimaryError,
  MongoSystemError,
  MongoTailableCursorError,
  MongoTopologyClosedError,
  MongoTransactionError,
  MongoUnexpectedServerResponseError,
  MongoWaitQueueTimeoutError,
  MongoWriteConcernError,
  ObjectId,
  ReadConcern,
  ReadPreference,
  RunCommandCursor,
  ServerClosedEvent,
  ServerDescriptionChangedEvent,
  ServerHeartbeatFailedEvent,
  ServerHeartbeatStartedEvent,
  ServerHeartbeatSucceededEvent,
  ServerOpeningEvent,
  Timestamp,
  TopologyClosedEvent,
  TopologyDescriptionChangedEvent,
  TopologyOpeningEvent,
  UUID,
  WriteConcern,
  WriteError,
} from 'anymongo';
import type {
  ChangeStreamDocument,
  CollectionInfo,
  Document,
  Filter,
  GridFSFile,
  IndexDescriptionInfo,
  InsertOneResult,
  ModifyResult,
  MongoClientOptions,
  OptionalUnlessRequiredId,
  Transport,
  UpdateFilter,
  WithId,
} from 'anymongo';

interface Order {
  _id?: ObjectId;
  item: string;
  qty: number;
  tags?: string[];
  total?: Decimal128;
  placedAt?: Date;
  shipping?: { city: string; zip: string };
}

/** A schema whose `_id` is required and not an ObjectId. */
interface Sku {
  _id: string;
  name: string;
}

/** `expectType<T>()(value)` fails to compile unless `value` is exactly of type T. */
type Equal<A, B> = (<V>() => V extends A ? 1 : 2) extends <V>() => V extends B ? 1 : 2 ? true : false;
function expectType<T>() {
  return <V>(value: V & (Equal<T, V> extends true ? unknown : never)): V => value;
}

export async function clientApi(transport: Transport): Promise<void> {
  const options: MongoClientOptions = {
    appName: 'usage',
    serverSelectionTimeoutMS: 2000,
    retryWrites: true,
    tls: false,
    maxPoolSize: 10,
    timeoutMS: 0,
    monitorCommands: true,
    serverApi: { version: '1', strict: true, deprecationErrors: false },
    readPreference: new ReadPreference('secondaryPreferred', [{ dc: 'east' }], { maxStalenessSeconds: 90 }),
    readConcern: new ReadConcern('majority'),
    writeConcern: new WriteConcern('majority', 5000, true),
    auth: { username: 'u', password: 'p' },
    transport: { ...transport, ...dnsOverHttps({ endpoint: 'https://dns.example/resolve' }) },
    backgroundMonitoring: false,
  };
  const addresses: (host: string) => Promise<string[]> = dnsOverHttps({ endpoint: 'https://dns.example/resolve', addresses: true }).lookup;
  void addresses;
  // @ts-expect-error: without addresses, the hosts are the platform's to resolve
  void dnsOverHttps({ endpoint: 'https://dns.example/resolve' }).lookup.name;
  // @ts-expect-error: a misspelt option is not an option
  const misspelt: MongoClientOptions = { appname: 'x' };
  void misspelt;
  const stringly: MongoClientOptions = { serverApi: '1', readPreference: 'nearest', readConcern: { level: 'local' }, writeConcern: { w: 1 } };
  void stringly;

  const client = new MongoClient('mongodb://localhost:27017/shop', options);
  const same: MongoClient = await client.connect();
  const other: MongoClient = await MongoClient.connect('mongodb://localhost');
  const viaDefault = new MongoClientDefault('mongodb://localhost');
  expectType<MongoClientOptions>()(client.options);
  void [same, other, viaDefault];

  // Monitoring events: the listener's argument is the event's class.
  client.on('commandStarted', (event) => {
    expectType<CommandStartedEvent>()(event);
    const name: 'commandStarted' = event.name;
    const command: Document = event.command;
    const hasServiceId: boolean = event.hasServiceId;
    void [name, command, hasServiceId, event.commandName, event.databaseName, event.requestId, event.address, event.connectionId];
  });
  client.once('commandSucceeded', (event: CommandSucceededEvent) => void [event.duration, event.reply]);
  const onFailed = (event: CommandFailedEvent) => void [event.duration, event.failure.message];
  client.addListener('commandFailed', onFailed);
  client.off('commandFailed', onFailed);
  client.removeListener('commandFailed', onFailed);
  client.on('connectionPoolCreated', (event: ConnectionPoolCreatedEvent) => void event.options.maxPoolSize);
  client.on('connectionPoolReady', (event: ConnectionPoolReadyEvent) => void event.address);
  client.on('connectionPoolCleared', (event: ConnectionPoolClearedEvent) => void event.interruptInUseConnections);
  client.on('connectionPoolClosed', (event: ConnectionPoolClosedEvent) => void event.address);
  client.on('connectionCreated', (event: ConnectionCreatedEvent) => void event.connectionId);
  client.on('connectionReady', (event: ConnectionReadyEvent) => void event.durationMS);
  client.on('connectionClosed', (event: ConnectionClosedEvent) => void event.reason);
  client.on('connectionCheckOutStarted', (event: ConnectionCheckOutStartedEvent) => void event.address);
  client.on('connectionCheckOutFailed', (event: ConnectionCheckOutFailedEvent) => void [event.reason, event.durationMS, event.error]);
  client.on('connectionCheckedOut', (event: ConnectionCheckedOutEvent) => void event.durationMS);
  client.on('connectionCheckedIn', (event: ConnectionCheckedInEvent) => {
    const base: ConnectionPoolMonitoringEvent = event;
    void base;
  });
  client.on('topologyOpening', (event: TopologyOpeningEvent) => void event.topologyId);
  client.on('topologyClosed', (event: TopologyClosedEvent) => void event.topologyId);
  client.on('topologyDescriptionChanged', (event: TopologyDescriptionChangedEvent) => {
    const types: string[] = [...event.newDescription.servers.values()].map((server) => server.type);
    void [types, event.previousDescription.type];
  });
  client.on('serverOpening', (event: ServerOpeningEvent) => void event.address);
  client.on('serverClosed', (event: ServerClosedEvent) => void event.address);
  client.on('serverDescriptionChanged', (event: ServerDescriptionChangedEvent) => void event.newDescription.roundTripTime);
  client.on('serverHeartbeatStarted', (event: ServerHeartbeatStartedEvent) => void event.awaited);
  client.on('serverHeartbeatSucceeded', (event: ServerHeartbeatSucceededEvent) => void event.reply);
  client.on('serverHeartbeatFailed', (event: ServerHeartbeatFailedEvent) => void event.failure);
  // @ts-expect-error: the listener of commandStarted gets a CommandStartedEvent
  client.on('commandStarted', (event: ServerHeartbeatFailedEvent) => void event);
  // @ts-expect-error: no such event
  client.on('commandStarterd', () => {});
  const emitted: boolean = client.emit('serverOpening', new ServerOpeningEvent());
  const listeners: ((event: CommandStartedEvent) => void)[] = client.listeners('commandStarted');
  const count: number = client.listenerCount('commandStarted');
  const names: string[] = client.eventNames();
  client.removeAllListeners('commandStarted').removeAllListeners();
  void [emitted, listeners, count, names];

  const emitter = new EventEmitter<{ tick(n: number): void }>();
  emitter.on('tick', (n) => expectType<number>()(n)).emit('tick', 1);
  // @ts-expect-error: tick takes a number
  emitter.emit('tick', 'one');

  // Sessions.
  const session: ClientSession = client.startSession({ causalConsistency: true, defaultTimeoutMS: 1000, defaultTransactionOptions: { readConcern: 'snapshot' } });
  const result: number = await client.withSession(async (s) => {
    expectType<ClientSession>()(s);
    return 1;
  });
  const withOptions: string = await client.withSession({ snapshot: true }, async () => 'x');
  void [result, withOptions];

  // Client bulk write, typed by namespace.
  const bulk: ClientBulkWriteResult = await client.bulkWrite<{ 'shop.orders': Order; 'shop.skus': Sku }>(
    [
      { namespace: 'shop.orders', name: 'insertOne', document: { item: 'a', qty: 1 } },
      { namespace: 'shop.orders', name: 'updateMany', filter: { qty: { $lt: 5 } }, update: { $inc: { qty: 1 } } },
      { namespace: 'shop.skus', name: 'replaceOne', filter: { _id: 'x' }, replacement: { name: 'y' }, upsert: true },
      { namespace: 'shop.skus', name: 'updateOne', filter: { _id: 'x' }, update: { $set: { name: 'z' } } },
      { namespace: 'shop.skus', name: 'deleteOne', filter: { _id: 'x' } },
      { namespace: 'shop.orders', name: 'deleteMany', filter: {} },
    ],
    { ordered: false, verboseResults: true, session },
  );
  const inserted = bulk.insertResults?.get(0)?.insertedId;
  void [inserted, bulk.insertedCount, bulk.matchedCount, bulk.modifiedCount, bulk.deletedCount, bulk.upsertedCount, bulk.acknowledged];
  void bulk.updateResults?.get(1)?.didUpsert;
  void bulk.deleteResults?.get(4)?.deletedCount;
  await client.bulkWrite([{ namespace: 'shop.any', name: 'insertOne', document: { whatever: true } }]);
  // @ts-expect-error: qty is a number in shop.orders
  await client.bulkWrite<{ 'shop.orders': Order }>([{ namespace: 'shop.orders', name: 'insertOne', document: { item: 'a', qty: 'one' } }]);

  // Change streams of the deployment and of a database.
  const everything = client.watch([{ $match: { operationType: 'insert' } }], { fullDocument: 'updateLookup', maxAwaitTimeMS: 100 });
  expectType<ChangeStream<Document, ChangeStreamDocument<Document>>>()(everything);
  await everything.close();

  const db: Db = client.db('shop', { readPreference: 'primary', writeConcern: { w: 'majority' } });
  await db.watch<Order>().close();
  await client[Symbol.asyncDispose]();
  await client.close();
  {
    await using disposed = new MongoClient('mongodb://localhost');
    void disposed;
  }
}

export async function dbApi(db: Db): Promise<void> {
  const name: string = db.databaseName;
  const client: MongoClient = db.client;
  const preference: ReadPreference | undefined = db.readPreference;
  const concern: ReadConcern | undefined = db.readConcern;
  const writeConcern: WriteConcern | undefined = db.writeConcern;
  void [name, client, preference, concern, writeConcern];

  const reply: Document = await db.command({ ping: 1 }, { timeoutMS: 500, readPreference: ReadPreference.primary });
  const cursor: RunCommandCursor = db.runCursorCommand({ find: 'orders', filter: {} }).setBatchSize(10).setMaxTimeMS(50).setComment('tail');
  const documents: Document[] = await cursor.toArray();
  void [reply, documents, cursor.clone()];
  const aggregated = db.aggregate<{ n: number }>([{ $documents: [{ n: 1 }] }]);
  expectType<AggregationCursor<{ n: number }>>()(aggregated);
  const dropped: boolean = await db.dropDatabase();

  const names = await db.listCollections({}, { nameOnly: true }).toArray();
  expectType<Pick<CollectionInfo, 'name' | 'type'>[]>()(names);
  const infos: ListCollectionsCursor = db.listCollections();
  const full = await db.listCollections({ name: 'orders' }, { nameOnly: false, batchSize: 10 }).next();
  void [infos, full?.options];
  const collections: Collection[] = await db.collections();
  const created: Collection<Order> = await db.createCollection<Order>('orders', { capped: true, size: 1 << 20, validator: { qty: { $gte: 0 } } });
  const droppedCollection: boolean = await db.dropCollection('old', { timeoutMS: 100 });
  const renamed: Collection<Order> = await db.renameCollection<Order>('orders', 'orders2', { dropTarget: true });
  void [dropped, collections, created, droppedCollection, renamed];

  const admin: Admin = db.admin();
  await admin.command({ ping: 1 });
  await admin.ping();
  await admin.buildInfo();
  await admin.serverStatus();
  const { databases } = await admin.listDatabases({ nameOnly: true });
  const dbNames: string[] = databases.map((each) => each.name);
  void dbNames;
}

export async function collectionApi(db: Db, session: ClientSession): Promise<void> {
  const orders = db.collection<Order>('orders', { readConcern: 'majority' });
  const skus = db.collection<Sku>('skus');
  const untyped: Collection = db.collection('anything');
  void [orders.collectionName, orders.dbName, orders.namespace, orders.readPreference, orders.readConcern, orders.writeConcern];

  // Inserts: `_id` optional for Order (the driver adds an ObjectId), required for Sku.
  const one: InsertOneResult<Order> = await orders.insertOne({ item: 'a', qty: 1 }, { session, writeConcern: { w: 1 } });
  expectType<ObjectId>()(one.insertedId);
  const sku = await skus.insertOne({ _id: 'abc', name: 'thing' });
  expectType<string>()(sku.insertedId);
  // @ts-expect-error: Sku requires its _id
  await skus.insertOne({ name: 'thing' });
  // @ts-expect-error: qty is a number
  await orders.insertOne({ item: 'a', qty: '1' });
  const many = await orders.insertMany([{ item: 'b', qty: 2 }, { item: 'c', qty: 3, tags: ['x'] }], { ordered: false });
  const firstId: ObjectId = many.insertedIds[0];
  void [firstId, many.insertedCount];
  await untyped.insertOne({ anything: 1 });
  const insertable: OptionalUnlessRequiredId<Order> = { item: 'd', qty: 4 };
  void insertable;

  // Filters: fields checked against the schema, operators against the field's type.
  const filter: Filter<Order> = { qty: { $gte: 1, $in: [1, 2] }, item: /^a/, tags: 'x', 'shipping.city': 'Paris' };
  const combined: Filter<Order> = { $or: [{ qty: 1 }, { item: { $regex: 'a' } }], _id: new ObjectId() };
  // @ts-expect-error: qty is a number, not a string
  const wrongType: Filter<Order> = { qty: 'five' };
  // @ts-expect-error: $gt of a number field takes a number
  const wrongOperator: Filter<Order> = { qty: { $gt: 'five' } };
  void [combined, wrongType, wrongOperator];

  // As with the Node driver: dotted paths and unknown fields are not checked, and an
  // untyped collection takes any filter and update.
  await orders.updateOne(
    { 'shipping.zip': { $in: ['75001'] }, tags: { $elemMatch: { $eq: 'x' } } },
    { $set: { 'shipping.city': 'Lyon' }, $push: { tags: { $each: ['a', 'b'], $slice: -5 } }, $addToSet: { tags: 'c' }, $pull: { tags: 'd' } },
  );
  await untyped.updateMany({ 'a.b.c': { $exists: true } }, { $rename: { a: 'b' }, $unset: { c: '' } });
  await skus.deleteOne({ _id: { $in: ['abc', 'def'] } });
  await orders.find({}, { sort: [['qty', -1], ['item', 'asc']] }).toArray();

  // Reads: documents come back WithId.
  const found = await orders.findOne({ item: 'a' }, { projection: { item: 1 }, sort: { qty: -1 }, session, readPreference: 'secondary' });
  expectType<WithId<Order> | null>()(found);
  if (found) {
    const id: ObjectId = found._id;
    void id;
  }
  const anyOne = await orders.findOne();
  void anyOne;
  const projected = await orders.findOne<{ item: string }>({}, { projection: { item: 1, _id: 0 } });
  expectType<{ item: string } | null>()(projected);
  const cursor = orders.find(filter, { limit: 10, batchSize: 5, readConcern: { level: 'local' } });
  expectType<FindCursor<WithId<Order>>>()(cursor);
  const all: WithId<Order>[] = await orders.find().toArray();
  const typed: FindCursor<{ qty: number }> = orders.find<{ qty: number }>({}, { projection: { qty: 1 } });
  void [all, typed];
  const skuFound = await skus.findOne({ _id: 'abc' });
  if (skuFound) expectType<string>()(skuFound._id);
  // @ts-expect-error: no such method
  orders.findAll();

  // Updates.
  const update: UpdateFilter<Order> = { $set: { item: 'b' }, $inc: { qty: 1 }, $push: { tags: 'new' }, $unset: { shipping: '' }, $currentDate: { placedAt: true } };
  const updated = await orders.updateOne({ item: 'a' }, update, { upsert: true, session, hint: { item: 1 } });
  expectType<ObjectId | null>()(updated.upsertedId);
  await orders.updateMany({}, [{ $set: { qty: { $add: ['$qty', 1] } } }], { arrayFilters: [{ x: 1 }] });
  // @ts-expect-error: $inc takes numbers
  await orders.updateOne({}, { $inc: { qty: 'one' } });
  // @ts-expect-error: $set's values have their fields' types
  await orders.updateOne({}, { $set: { qty: 'one' } });
  await orders.replaceOne({ item: 'a' }, { item: 'a2', qty: 9 }, { upsert: true });
  const deleted = await orders.deleteOne({ item: 'a2' }, { collation: { locale: 'en', strength: 2 } });
  const deletedMany = await orders.deleteMany();
  void [deleted.deletedCount, deletedMany.acknowledged];

  // findOneAndX: the document, or a ModifyResult with includeResultMetadata.
  const before = await orders.findOneAndUpdate({ item: 'a' }, { $inc: { qty: 1 } }, { returnDocument: 'after', upsert: true });
  expectType<WithId<Order> | null>()(before);
  const withMetadata = await orders.findOneAndUpdate({ item: 'a' }, { $inc: { qty: 1 } }, { includeResultMetadata: true });
  expectType<ModifyResult<Order>>()(withMetadata);
  const replaced = await orders.findOneAndReplace({ item: 'a' }, { item: 'b', qty: 2 });
  expectType<WithId<Order> | null>()(replaced);
  const replacedMeta = await orders.findOneAndReplace({ item: 'a' }, { item: 'b', qty: 2 }, { includeResultMetadata: true, session });
  expectType<ModifyResult<Order>>()(replacedMeta);
  const removed = await orders.findOneAndDelete({ item: 'b' });
  expectType<WithId<Order> | null>()(removed);
  const removedMeta = await orders.findOneAndDelete({ item: 'b' }, { includeResultMetadata: true });
  const value: WithId<Order> | null = removedMeta.value;
  void value;

  // Bulk writes.
  const result: BulkWriteResult = await orders.bulkWrite(
    [
      { insertOne: { document: { item: 'x', qty: 1 } } },
      { updateOne: { filter: { item: 'x' }, update: { $set: { qty: 2 } }, upsert: true } },
      { updateMany: { filter: { qty: { $gt: 0 } }, update: { $inc: { qty: 1 } } } },
      { replaceOne: { filter: { item: 'x' }, replacement: { item: 'y', qty: 3 } } },
      { deleteOne: { filter: { item: 'y' } } },
      { deleteMany: { filter: {} } },
    ],
    { ordered: true, session },
  );
  void [result.ok, result.isOk(), result.getUpsertedIdAt(0), result.getRawResponse(), result.result.nInserted, result.toString()];
  void [result.hasWriteErrors(), result.getWriteErrorCount(), result.getWriteErrorAt(0), result.getWriteErrors(), result.getWriteConcernError()];
  const made: BulkWriteResult = new BulkWriteResult(
    { ok: 1, writeErrors: [], writeConcernErrors: [], insertedIds: [], nInserted: 0, nUpserted: 0, nMatched: 0, nModified: 0, nRemoved: 0, upserted: [] },
    false,
  );
  void made;
  void [result.insertedCount, result.matchedCount, result.modifiedCount, result.deletedCount, result.upsertedCount, result.insertedIds, result.upsertedIds];
  // @ts-expect-error: qty is a number
  await orders.bulkWrite([{ insertOne: { document: { item: 'x', qty: 'one' } } }]);

  const ordered: BulkOperation<Order> = orders.initializeOrderedBulkOp();
  ordered.insert({ item: 'z', qty: 1 });
  ordered.find({ item: 'z' }).upsert().collation({ locale: 'en' }).hint({ item: 1 }).updateOne({ $set: { qty: 2 } });
  ordered.find({ item: 'z' }).arrayFilters([{ x: 1 }]).update({ $inc: { qty: 1 } });
  ordered.find({ item: 'z' }).replaceOne({ item: 'z2', qty: 3 });
  ordered.find({ item: 'z2' }).deleteOne();
  ordered.find({}).delete().raw({ insertOne: { document: { item: 'raw', qty: 0 } } });
  const length: number = ordered.length;
  const executed: BulkWriteResult = await ordered.execute({ writeConcern: { w: 1 } });
  await orders.initializeUnorderedBulkOp({ bypassDocumentValidation: true }).insert({ item: 'u', qty: 1 }).execute();
  void [length, executed];

  // Aggregation, counts, distinct.
  const grouped = orders.aggregate<{ _id: string; total: number }>([{ $group: { _id: '$item', total: { $sum: '$qty' } } }], { allowDiskUse: true, session });
  for await (const group of grouped) {
    const total: number = group.total;
    void total;
  }
  const counted: number = await orders.countDocuments({ qty: { $gt: 1 } }, { limit: 10 });
  const legacyCount: number = await orders.count({ qty: 1 });
  void legacyCount;
  const estimated: number = await orders.estimatedDocumentCount({ maxTimeMS: 100 });
  const items = await orders.distinct('item', { qty: 1 });
  expectType<string[]>()(items);
  // An optional array field: its elements, and undefined (as the Node driver types it).
  const tags = await orders.distinct('tags');
  expectType<(string | undefined)[]>()(tags);
  const cities: any[] = await orders.distinct('shipping.city');
  void [counted, estimated, cities];

  // Indexes.
  const indexName: string = await orders.createIndex({ item: 1, qty: -1 }, { unique: true, name: 'item_qty' });
  await orders.createIndex('item');
  const indexNames: string[] = await orders.createIndexes([{ key: { placedAt: 1 }, expireAfterSeconds: 3600 }, { key: { item: 'text' } }]);
  // @ts-expect-error: unique is a boolean
  await orders.createIndexes([{ key: { item: 1 }, unique: 'yes' }]);
  const listed: ListIndexesCursor = orders.listIndexes({ batchSize: 10 });
  const described: IndexDescriptionInfo[] = await listed.toArray();
  const full: IndexDescriptionInfo[] = await orders.indexes();
  const compact = await orders.indexes({ full: false });
  const information = await orders.indexInformation();
  expectType<Record<string, [name: string, direction: import('anymongo').IndexDirection][]>>()(compact);
  expectType<typeof compact>()(information);
  const fullInformation: IndexDescriptionInfo[] = await orders.indexInformation({ full: true });
  const exists: boolean = await orders.indexExists(['item_qty', 'item_1']);
  const droppedIndex: Document = await orders.dropIndex('item_qty');
  const droppedIndexes: boolean = await orders.dropIndexes();
  void [indexName, indexNames, described, full, fullInformation, exists, droppedIndex, droppedIndexes];

  // Change streams of the collection: the change's fullDocument is the schema.
  const stream = orders.watch([], { fullDocument: 'updateLookup' });
  expectType<ChangeStream<Order, ChangeStreamDocument<Order>>>()(stream);
  stream.on('change', (change) => {
    if (change.operationType === 'insert') {
      const qty: number = change.fullDocument.qty;
      const id: ObjectId = change.documentKey._id;
      void [qty, id];
    }
  });
  stream.once('error', (error: Error) => void error.message).on('close', () => {});
  stream.on('resumeTokenChanged', (resumeToken) => void resumeToken);
  orders.find().once('close', () => {});
  const capped: boolean = await orders.isCapped();
  const collectionOptions: Document = await orders.options();
  void [capped, collectionOptions];
  // @ts-expect-error: a change listener gets the change, not a string
  stream.on('change', (change: string) => void change);
  const next: ChangeStreamDocument<Order> = await stream.next();
  const maybe: ChangeStreamDocument<Order> | null = await stream.tryNext();
  const hasNext: boolean = await stream.hasNext();
  const token: unknown = stream.resumeToken;
  const closed: boolean = stream.closed;
  for await (const change of stream) {
    if (change.operationType === 'update') void change.updateDescription.updatedFields?.qty;
  }
  await stream[Symbol.asyncDispose]();
  await stream.close();
  void [next, maybe, hasNext, token, closed];
  const local = orders.watch<Sku>();
  expectType<ChangeStream<Sku, ChangeStreamDocument<Sku>>>()(local);

  const renamedCollection: Collection<Order> = await orders.rename('orders_old', { dropTarget: false });
  const droppedCollection: boolean = await orders.drop();
  void [renamedCollection, droppedCollection];
}

export async function cursorApi(orders: Collection<Order>): Promise<void> {
  const cursor = orders
    .find({})
    .filter({ qty: { $gt: 1 } })
    .sort({ qty: -1 })
    .sort('item', 1)
    .limit(10)
    .skip(1)
    .batchSize(100)
    .maxTimeMS(1000)
    .maxAwaitTimeMS(100)
    .hint({ qty: 1 })
    .comment('usage')
    .collation({ locale: 'en' })
    .allowDiskUse()
    .min({ qty: 0 })
    .max({ qty: 100 })
    .returnKey(false)
    .showRecordId(false)
    .addCursorFlag('noCursorTimeout', true);
  expectType<FindCursor<WithId<Order>>>()(cursor);
  const closed: boolean = cursor.closed;
  const hasNext: boolean = await cursor.hasNext();
  const next: WithId<Order> | null = await cursor.next();
  const tried: WithId<Order> | null = await cursor.tryNext();
  const buffered: number = cursor.bufferedCount();
  const documents: WithId<Order>[] = cursor.readBufferedDocuments(2);
  await cursor.forEach((document) => {
    expectType<WithId<Order>>()(document);
    return document.qty < 5;
  });
  cursor.rewind();
  const clone: FindCursor<WithId<Order>> = cursor.clone();
  const plan: Document = await cursor.explain('queryPlanner');
  const stream: ReadableStream<WithId<Order>> = cursor.stream();
  const mapped: FindCursor<string> = cursor.map((document) => document.item);
  const strings: string[] = await mapped.toArray();
  const projected: FindCursor<{ item: string }> = orders.find().project<{ item: string }>({ item: 1, _id: 0 });
  for await (const document of orders.find()) {
    const item: string = document.item;
    void item;
  }
  await cursor[Symbol.asyncDispose]();
  await cursor.close();
  {
    await using disposed = orders.find();
    void disposed;
  }
  // @ts-expect-error: no such method on a cursor
  cursor.count();
  void [closed, hasNext, next, tried, buffered, documents, clone, plan, stream, strings, projected];

  const pipeline = orders
    .aggregate<Order>()
    .match({ qty: { $gt: 1 } })
    .sort({ qty: 1 })
    .skip(1)
    .limit(10)
    .lookup({ from: 'skus', localField: 'item', foreignField: 'name', as: 'skus' })
    .redact({ $cond: [true, '$$KEEP', '$$PRUNE'] })
    .geoNear({ near: [0, 0], distanceField: 'distance' })
    .batchSize(10)
    .maxTimeMS(1000);
  expectType<AggregationCursor<Order>>()(pipeline);
  const grouped: AggregationCursor<{ _id: string; n: number }> = pipeline.group<{ _id: string; n: number }>({ _id: '$item', n: { $sum: 1 } });
  const unwound: AggregationCursor<Document> = pipeline.clone().unwind('$tags');
  const projected2: AggregationCursor<{ item: string }> = pipeline.clone().project<{ item: string }>({ item: 1 });
  const staged: AggregationCursor<{ x: number }> = pipeline.clone().addStage<{ x: number }>({ $project: { x: 1 } });
  pipeline.clone().addStage({ $limit: 1 }).out('archive');
  pipeline.clone().out({ db: 'other', coll: 'archive' });
  const explained: Document = await pipeline.explain();
  const mapped2: AggregationCursor<number> = pipeline.map((order) => order.qty);
  void [grouped, unwound, projected2, staged, explained, mapped2];
}

export async function sessionApi(client: MongoClient, orders: Collection<Order>): Promise<void> {
  const session = client.startSession({ snapshot: false });
  const owner: MongoClient = session.client;
  const explicit: boolean = session.explicit;
  const snapshot: boolean = session.snapshotEnabled;
  const id: { id: Binary } | undefined = session.id;
  const clusterTime = session.clusterTime;
  const operationTime: Timestamp | undefined = session.operationTime;
  const serverSession = session.serverSession;
  const ended: boolean = session.hasEnded;
  const pinned: boolean = session.isPinned;
  const state: string = session.transaction.state;
  const active: boolean = session.transaction.isActive;
  if (clusterTime) session.advanceClusterTime(clusterTime);
  if (operationTime) session.advanceOperationTime(operationTime);
  session.startTransaction({ readConcern: { level: 'snapshot' }, writeConcern: { w: 'majority' }, readPreference: 'primary', maxCommitTimeMS: 1000 });
  const inTransaction: boolean = session.inTransaction();
  await orders.insertOne({ item: 't', qty: 1 }, { session });
  await session.commitTransaction();
  session.startTransaction();
  await session.abortTransaction();
  const inserted: ObjectId = await session.withTransaction(async (s) => {
    const result = await orders.insertOne({ item: 'u', qty: 2 }, { session: s });
    return result.insertedId;
  }, { maxCommitTimeMS: 500 });
  await session.endSession();
  await session[Symbol.asyncDispose]();
  {
    await using disposed = client.startSession();
    void disposed;
  }
  // @ts-expect-error: a session is a ClientSession, not a string
  await orders.insertOne({ item: 'v', qty: 3 }, { session: 'abc' });
  void [owner, explicit, snapshot, id, serverSession?.isDirty, ended, pinned, state, active, inTransaction, inserted];
}

export async function gridfsApi(db: Db): Promise<void> {
  const bucket = new GridFSBucket(db, { bucketName: 'photos', chunkSizeBytes: 1024, writeConcern: { w: 1 } });
  const upload = bucket.openUploadStream('a.txt', { metadata: { owner: 'me' }, chunkSizeBytes: 512 });
  const fileId: ObjectId = upload.id;
  const filename: string = upload.filename;
  // The stream is a Web WritableStream or a Node.js Writable, depending on the runtime.
  if ('getWriter' in upload) {
    const writer = upload.getWriter();
    await writer.write(new TextEncoder().encode('hello'));
    await writer.close();
  } else {
    upload.write('hello');
    upload.end();
  }
  const withId = bucket.openUploadStreamWithId(new ObjectId(), 'b.txt');
  void withId.id;
  const download = bucket.openDownloadStream(fileId, { start: 0, end: 5 });
  if ('getReader' in download) {
    const { value } = await download.getReader().read();
    const bytes: Uint8Array | undefined = value;
    void bytes;
  } else {
    for await (const chunk of download) void chunk;
  }
  const byName = bucket.openDownloadStreamByName('a.txt', { revision: -1 });
  void byName;
  const files: GridFSFile[] = await bucket.find({ filename: 'a.txt' }, { limit: 1 }).toArray();
  // @ts-expect-error: a file's length is a number
  bucket.find({ length: 'long' });
  await bucket.rename(fileId, 'c.txt');
  await bucket.deleteByName('old.txt');
  await bucket.renameByName('a.txt', 'b.txt');
  await bucket.delete(fileId);
  await bucket.drop();
  void [filename, files];
}

export function concernsApi(): void {
  const preference = new ReadPreference(ReadPreference.SECONDARY, [{ dc: 'ny' }], { maxStalenessSeconds: 120, hedge: { enabled: true } });
  const valid: boolean = ReadPreference.isValid('nearest') && preference.isValid();
  const fromString: ReadPreference = ReadPreference.fromString('primaryPreferred');
  const fromOptions: ReadPreference | undefined = ReadPreference.fromOptions({ readPreference: { mode: 'secondary', tags: [] } });
  const secondaryOk: boolean = preference.secondaryOk();
  const equal: boolean = preference.equals(ReadPreference.nearest);
  const json: Document = preference.toJSON();
  // @ts-expect-error: not a read preference mode
  new ReadPreference('anywhere');
  void [valid, fromString, fromOptions, secondaryOk, equal, json, preference.mode, preference.tags];
  void [ReadPreference.PRIMARY, ReadPreference.PRIMARY_PREFERRED, ReadPreference.SECONDARY_PREFERRED, ReadPreference.NEAREST];
  void [ReadPreference.primary, ReadPreference.primaryPreferred, ReadPreference.secondary, ReadPreference.secondaryPreferred];

  const concern = new ReadConcern(ReadConcern.MAJORITY);
  const fromConcernOptions: ReadConcern | undefined = ReadConcern.fromOptions({ readConcern: 'local' });
  void [concern.level, concern.toJSON(), fromConcernOptions, ReadConcern.LOCAL, ReadConcern.AVAILABLE, ReadConcern.LINEARIZABLE, ReadConcern.SNAPSHOT];

  const writeConcern = new WriteConcern('majority', 1000, true);
  const fromWriteOptions: WriteConcern | undefined = WriteConcern.fromOptions({ w: 1, wtimeoutMS: 10 });
  void [writeConcern.w, writeConcern.wtimeoutMS, writeConcern.journal, writeConcern.j, writeConcern.wtimeout, fromWriteOptions];
}

export function errorsApi(error: unknown): void {
  if (error instanceof MongoServerError) {
    const code: number = error.code;
    const codeName: string | undefined = error.codeName;
    const errmsg: string = error.errmsg;
    const response: Document = error.errorResponse;
    const made = new MongoServerError({ code: 112, errmsg: 'conflict', errorLabels: ['TransientTransactionError'] });
    void made.hasErrorLabel('TransientTransactionError');
    const retryable: boolean = error.hasErrorLabel(MongoErrorLabel.RetryableWriteError);
    error.addErrorLabel('Mine');
    const labels: string[] = error.errorLabels;
    void [code, codeName, errmsg, response, retryable, labels, error.errInfo];
  }
  if (error instanceof MongoBulkWriteError) {
    const result: BulkWriteResult = error.result;
    const first: WriteError | undefined = error.writeErrors[0];
    const index: number | undefined = first?.index;
    const operation: Document | undefined = first?.getOperation();
    void [result, index, operation, first?.err.errmsg, first?.toJSON(), error.keyValue, error.insertedCount, error.matchedCount, error.modifiedCount, error.deletedCount, error.upsertedCount, error.insertedIds, error.upsertedIds];
  }
  if (error instanceof MongoClientBulkWriteError) {
    const first = error.writeErrors.get(0);
    const partial: ClientBulkWriteResult | undefined = error.partialResult;
    void [first?.code, first?.message, partial, error.writeConcernErrors];
  }
  if (error instanceof MongoOperationTimeoutError) {
    const cause: MongoError | undefined = error.cause;
    void cause;
  }
  const label: MongoErrorLabel = 'TransientTransactionError';
  void label;
  // Each class, with its parent as the Node driver has it (the server errors are made
  // from an error document, the others from a message).
  const classes: (new (...args: never[]) => MongoError)[] = [
    MongoError,
    MongoServerError,
    MongoBulkWriteError,
    MongoClientBulkWriteError,
    MongoWriteConcernError,
    MongoDriverError,
    MongoAPIError,
    MongoInvalidArgumentError,
    MongoCompatibilityError,
    MongoMissingCredentialsError,
    MongoMissingDependencyError,
    MongoTopologyClosedError,
    MongoClientClosedError,
    MongoServerClosedError,
    MongoNotConnectedError,
    MongoTransactionError,
    MongoExpiredSessionError,
    MongoBatchReExecutionError,
    MongoTailableCursorError,
    MongoCursorInUseError,
    MongoCursorExhaustedError,
    MongoRuntimeError,
    MongoStalePrimaryError,
    MongoDecompressionError,
    MongoUnexpectedServerResponseError,
    MongoKerberosError,
    MongoAWSError,
    MongoOIDCError,
    MongoAzureError,
    MongoGCPError,
    MongoClientBulkWriteCursorError,
    MongoClientBulkWriteExecutionError,
    MongoChangeStreamError,
    MongoGridFSStreamError,
    MongoGridFSChunkError,
    MongoParseError,
    MongoWaitQueueTimeoutError,
    MongoOperationTimeoutError,
    MongoNetworkError,
    MongoNetworkTimeoutError,
    MongoPoolClearedError,
    MongoSystemError,
    MongoServerSelectionError,
  ];
  const api: MongoAPIError = new MongoInvalidArgumentError('bad');
  const network: MongoNetworkError = new MongoPoolClearedError('cleared');
  const runtime: MongoRuntimeError = new MongoAzureError('azure');
  const system: MongoSystemError = new MongoServerSelectionError('none');
  void [classes, api, network, runtime, system];
}

export function bsonApi(): void {
  const values = [new Binary(), new Decimal128('1.5'), new Double(1), new Int32(1), Long.fromNumber(1), new MaxKey(), new MinKey(), new ObjectId(), new Timestamp({ t: 1, i: 1 }), new UUID()];
  const bytes: Uint8Array = BSON.serialize({ values });
  void bytes;
}
