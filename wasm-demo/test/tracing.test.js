// OpenTelemetry spans through `@opentelemetry/api` (open-telemetry.md), as an
// application sees them: a tracer provider of `@opentelemetry/sdk-trace-base` with its
// in-memory exporter, against SecantusDB.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MongoClient, MongoServerError } from '../js/node.js';
import { startServer } from './server.js';

const BOUND = { timeout: 30_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

describe('OpenTelemetry spans', BOUND, () => {
  const exporter = new InMemorySpanExporter();
  let server;
  let client;
  let db;

  before(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    server = await startServer();
    client = new MongoClient(server.uri, { ...OPTIONS, tracing: { enabled: true, queryTextMaxLength: 1000 } });
    db = client.db('npm_tracing');
    await db.collection('orders').deleteMany({});
  });

  after(async () => {
    await client?.close();
    await server?.stop();
    trace.disable();
    context.disable();
  });

  beforeEach(() => exporter.reset());

  /** The finished spans named `name`. */
  const named = (name) => exporter.getFinishedSpans().filter((span) => span.name === name);
  const parentId = (span) => span.parentSpanContext?.spanId;

  it('traces an operation and its command, nested, with the spec attributes', BOUND, async () => {
    await db.collection('orders').insertOne({ _id: 1, item: 'tea' });
    const [operation] = named('insert npm_tracing.orders');
    assert.ok(operation, `spans: ${exporter.getFinishedSpans().map((span) => span.name)}`);
    assert.equal(operation.kind, SpanKind.CLIENT);
    assert.deepEqual(operation.attributes, {
      'db.system.name': 'mongodb',
      'db.namespace': 'npm_tracing',
      'db.collection.name': 'orders',
      'db.operation.name': 'insert',
      'db.operation.summary': 'insert npm_tracing.orders',
    });
    assert.equal(operation.instrumentationScope.name, 'anymongo');
    assert.match(operation.instrumentationScope.version, /^\d+\.\d+\.\d+/);
    const [command] = named('insert');
    assert.equal(command.kind, SpanKind.CLIENT);
    assert.equal(parentId(command), operation.spanContext().spanId);
    assert.equal(command.spanContext().traceId, operation.spanContext().traceId);
    const attributes = command.attributes;
    assert.equal(attributes['db.command.name'], 'insert');
    assert.equal(attributes['db.query.summary'], 'insert npm_tracing.orders');
    assert.equal(attributes['server.address'], '127.0.0.1');
    assert.equal(attributes['server.port'], Number(new URL(server.uri).port));
    assert.equal(attributes['network.transport'], 'tcp');
    assert.equal(typeof attributes['db.mongodb.driver_connection_id'], 'number');
    assert.match(attributes['db.mongodb.lsid'], /^\{"id":\{"\$binary"/);
    assert.equal(attributes['db.mongodb.txn_number'], 1);
    assert.equal(
      attributes['db.query.text'],
      '{"insert":"orders","ordered":true,"txnNumber":1,"documents":[{"_id":1,"item":"tea"}]}',
    );
    assert.equal(command.status.code, SpanStatusCode.UNSET);
  });

  it("nests in the application's active span, and records a cursor's getMore", BOUND, async () => {
    await db.collection('orders').insertMany([{ _id: 2 }, { _id: 3 }, { _id: 4 }]);
    exporter.reset();
    const tracer = trace.getTracer('app');
    await tracer.startActiveSpan('request', async (request) => {
      await db.collection('orders').find({}, { batchSize: 2 }).toArray();
      request.end();
    });
    const [request] = named('request');
    const [find] = named('find npm_tracing.orders');
    assert.equal(parentId(find), request.spanContext().spanId);
    const [findCommand] = named('find');
    const cursorId = findCommand.attributes['db.mongodb.cursor_id'];
    assert.ok(cursorId, 'the find reply opened a cursor');
    const [getMore] = named('getMore');
    assert.equal(getMore.attributes['db.mongodb.cursor_id'], cursorId);
    // The cursor's getMore is an operation of its own, in the application's span.
    const [getMoreOperation] = named('getMore npm_tracing.orders');
    assert.equal(parentId(getMore), getMoreOperation.spanContext().spanId);
    assert.equal(parentId(getMoreOperation), request.spanContext().spanId);
  });

  it('marks a failed command and its operation as errors', BOUND, async () => {
    await assert.rejects(db.command({ noSuchCommand: 1 }), MongoServerError);
    const [failed] = named('noSuchCommand');
    assert.equal(failed.status.code, SpanStatusCode.ERROR);
    assert.equal(failed.attributes['db.response.status_code'], '59');
    assert.match(failed.attributes['exception.type'], /ErrorKind::Command/);
    assert.equal(typeof failed.attributes['exception.stacktrace'], 'string');
    const [runCommand] = named('runCommand npm_tracing');
    assert.equal(runCommand.status.code, SpanStatusCode.ERROR);
  });

  it('traces a transaction, its operations nested in it', BOUND, async () => {
    const session = client.startSession();
    try {
      session.startTransaction();
      await db.collection('orders').insertOne({ _id: 10 }, { session });
      await session.commitTransaction();
    } finally {
      await session.endSession();
    }
    const [transaction] = named('transaction');
    assert.deepEqual(transaction.attributes, { 'db.system.name': 'mongodb' });
    const [insert] = named('insert npm_tracing.orders');
    const [commit] = named('commitTransaction admin');
    assert.equal(parentId(insert), transaction.spanContext().spanId);
    assert.equal(parentId(commit), transaction.spanContext().spanId);
    assert.equal(typeof named('insert')[0].attributes['db.mongodb.txn_number'], 'number');
  });

  it('follows OTEL_NODE_INSTRUMENTATION_MONGODB_ENABLED unless the client option says otherwise', BOUND, async () => {
    const find = async (options) => {
      const other = new MongoClient(server.uri, { ...OPTIONS, ...options });
      try {
        await other.db('npm_tracing').collection('orders').findOne({});
      } finally {
        await other.close();
      }
    };
    process.env.OTEL_NODE_INSTRUMENTATION_MONGODB_ENABLED = 'yes';
    try {
      await find({ tracing: { enabled: false } });
      assert.deepEqual(exporter.getFinishedSpans(), []);
      await find({});
    } finally {
      delete process.env.OTEL_NODE_INSTRUMENTATION_MONGODB_ENABLED;
    }
    const [command] = named('find');
    assert.ok(command, 'the environment variable enables tracing');
    // Query text is off by default.
    assert.equal(command.attributes['db.query.text'], undefined);
  });

  it('creates no span for a client that does not trace', BOUND, async () => {
    const quiet = new MongoClient(server.uri, OPTIONS);
    try {
      await quiet.db('npm_tracing').collection('orders').findOne({});
    } finally {
      await quiet.close();
    }
    assert.deepEqual(exporter.getFinishedSpans(), []);
  });
});
