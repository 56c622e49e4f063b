// Tests of the unified-format runner itself (test/unified/): the matcher accepts and
// rejects what the spec's "Evaluating Matches" says, requirements and events are read
// as the spec says, and, against SecantusDB, a test that should fail fails: the
// runner's own self-test file and the spec's valid-fail files.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EJSON, Int32, Long, Double } from 'bson';
import { MongoClient } from '../js/node.js';
import { startServer } from './server.js';
import { Matcher, MatchError, exactlyEqual } from './unified/matcher.js';
import { EventRecorder, matchEvents, NODE_EVENTS } from './unified/events.js';
import { discover, runDirectory, schemaSupported, unmetRequirements } from './unified/runner.js';
import { corpusDir } from './unified/paths.js';
import { knownGap } from './unified/gaps.js';
import { matchSpans } from './unified/tracing.js';

/** Expected and actual as the runner sees them: expected from canonical Extended JSON, actual as the package returns it. */
const expected = (text) => EJSON.parse(text, { relaxed: false });

function matches(want, actual, { root = true } = {}) {
  const matcher = new Matcher({ value: () => 42, sessionLsid: () => ({ id: 1 }) });
  if (root) matcher.root(expected(want), actual);
  else matcher.root({ nested: expected(want) }, { nested: actual });
}

function rejects(want, actual, because, options) {
  assert.throws(() => matches(want, actual, options), (error) => error instanceof MatchError && error.message.includes(because));
}

describe('the matcher (spec "Evaluating Matches")', () => {
  test('a root-level document may have extra fields, a nested one may not', () => {
    matches('{"x": 1}', { x: 1, y: 2 });
    rejects('{"x": {"y": 1}}', { x: { y: 1, z: 1 } }, 'unexpected field "z"');
    rejects('{"x": 1}', { x: 1, y: 2 }, 'unexpected field "y"', { root: false });
  });

  test('a missing field fails', () => {
    rejects('{"x": 1, "y": 1}', { x: 1 }, 'at y: missing');
  });

  test('$$exists', () => {
    matches('{"x": {"$$exists": false}}', { y: 1 });
    rejects('{"x": {"$$exists": false}}', { x: 1 }, 'expected to be absent');
    matches('{"x": {"$$exists": true}}', { x: null });
    rejects('{"x": {"$$exists": true}}', {}, 'missing');
  });

  test('$$type with one type and with several', () => {
    matches('{"x": {"$$type": "string"}}', { x: 'a' });
    matches('{"x": {"$$type": ["int", "long"]}}', { x: 5 });
    matches('{"x": {"$$type": ["int", "long"]}}', { x: Long.fromNumber(2 ** 40) });
    matches('{"x": {"$$type": ["string", "object"]}}', { x: { a: 1 } });
    rejects('{"x": {"$$type": ["int", "long"]}}', { x: 'five' }, 'expected a value of type');
    rejects('{"x": {"$$type": "int"}}', { x: 1.5 }, 'expected a value of type');
    rejects('{"x": {"$$type": "objectId"}}', {}, 'missing');
  });

  test('$$unsetOrMatches', () => {
    matches('{"x": {"$$unsetOrMatches": 1}}', {});
    matches('{"x": {"$$unsetOrMatches": 1}}', { x: 1 });
    rejects('{"x": {"$$unsetOrMatches": 1}}', { x: 2 }, 'expected 1, got 2');
    matches('{"$$unsetOrMatches": {"insertedId": 1}}', { insertedId: 1, acknowledged: true });
  });

  test('numbers compare by value across int32, int64 and double', () => {
    matches('{"x": 1}', { x: 1 });
    matches('{"x": {"$numberLong": "1"}}', { x: 1 });
    matches('{"x": {"$numberDouble": "1.0"}}', { x: new Int32(1) });
    matches('{"x": 1}', { x: Long.fromNumber(1) });
    matches('{"x": {"$numberLong": "9007199254740993"}}', { x: Long.fromString('9007199254740993') });
    rejects('{"x": 1}', { x: 2 }, 'expected 1, got 2');
    rejects('{"x": 1}', { x: '1' }, 'expected 1');
    assert.ok(exactlyEqual(expected('{"a": 1, "b": {"$numberLong": "2"}}'), { b: new Double(2), a: 1 }), 'key order and numeric types do not matter');
    assert.ok(!exactlyEqual(expected('{"a": 1}'), { a: 1, b: 2 }), 'outcome documents match exactly');
  });

  test('arrays must have the same number of elements', () => {
    matches('{"x": [1, 2]}', { x: [1, 2] });
    rejects('{"x": [1, 2]}', { x: [1, 2, 3] }, 'expected 2 elements, got 3');
    rejects('{"x": [1, 2, 3]}', { x: [1, 2] }, 'expected 3 elements, got 2');
    // Documents in arrays are not root-level.
    rejects('{"x": [{"a": 1}]}', { x: [{ a: 1, b: 1 }] }, 'unexpected field "b"');
  });

  test('$$lte, $$matchesEntity, $$matchesHexBytes, $$sessionLsid, $$matchAsDocument, $$matchAsRoot', () => {
    matches('{"x": {"$$lte": 5}}', { x: 5 });
    rejects('{"x": {"$$lte": 5}}', { x: 6 }, 'expected at most 5');
    matches('{"x": {"$$matchesEntity": "saved"}}', { x: 42 });
    matches('{"x": {"$$matchesHexBytes": "0aff"}}', { x: Buffer.from([10, 255]) });
    rejects('{"x": {"$$matchesHexBytes": "0aff"}}', { x: Buffer.from([10]) }, 'expected the bytes');
    matches('{"lsid": {"$$sessionLsid": "session0"}}', { lsid: { id: 1 } });
    matches('{"j": {"$$matchAsDocument": {"a": {"$$type": "int"}}}}', { j: '{"a": 1}' });
    rejects('{"j": {"$$matchAsDocument": {"a": 1}}}', { j: '{"a": 1, "b": 2}' }, 'unexpected field "b"');
    matches('{"x": {"$$matchAsRoot": {"a": 1}}}', { x: { a: 1, b: 2 } });
    // The Node driver's Maps (client bulk write results) match as documents keyed by index.
    matches('{"r": {"0": {"a": 1}}}', { r: new Map([[0, { a: 1 }]]) });
    rejects('{"r": {"0": {"a": 1}}}', { r: new Map([[1, { a: 1 }]]) }, 'at r.0: missing');
  });
});

describe('requirements and schema versions', () => {
  const info = { version: [8, 2, 11], topology: 'replicaset', parameters: { enableTestCommands: true }, auth: false };

  test('one met requirement is enough', () => {
    assert.equal(unmetRequirements([{ topologies: ['sharded'] }, { minServerVersion: '4.0' }], info), null);
    assert.match(unmetRequirements([{ maxServerVersion: '4.4.99' }], info), /> maxServerVersion 4.4.99/);
    assert.match(unmetRequirements([{ topologies: ['single', 'load-balanced'] }], info), /topology replicaset/);
    assert.match(unmetRequirements([{ auth: true }], info), /authentication/);
    assert.match(unmetRequirements([{ csfle: true }], info), /csfle/);
    assert.equal(unmetRequirements([{ serverParameters: { enableTestCommands: true } }], info), null);
  });

  test('schema versions up to the runner\'s are read', () => {
    assert.ok(schemaSupported('1.0'));
    assert.ok(schemaSupported('1.27'));
    assert.ok(!schemaSupported('1.28'));
    assert.ok(!schemaSupported('2.0'));
    assert.ok(!schemaSupported('one'));
  });

  test('known gaps name a test or a whole file', () => {
    const gaps = [['crud', 'a.json', 'the test', 'why'], ['crud', 'b.json', '', 'all']];
    assert.equal(knownGap('crud', 'a.json', 'the test', gaps), 'why');
    assert.equal(knownGap('crud', 'a.json', 'another', gaps), null);
    assert.equal(knownGap('crud', 'b.json', 'anything', gaps), 'all');
  });
});

describe('events (spec "expectedEventsForClient")', () => {
  /** A client stand-in with the Node driver's EventEmitter `on`. */
  function emitter() {
    const listeners = {};
    return {
      on: (name, listener) => (listeners[name] ??= []).push(listener),
      emit: (name, event) => (listeners[name] ?? []).forEach((listener) => listener(event)),
    };
  }

  test('observed command events match, ignoring configureFailPoint and sensitive commands', () => {
    const client = emitter();
    const recorder = new EventRecorder({ observeEvents: ['commandStartedEvent', 'commandSucceededEvent'], ignoreCommandMonitoringEvents: ['killCursors'] });
    recorder.attach(client, NODE_EVENTS);
    client.emit('commandStarted', { commandName: 'configureFailPoint', command: { configureFailPoint: 'x' }, databaseName: 'admin' });
    client.emit('commandStarted', { commandName: 'saslStart', command: {}, databaseName: 'admin' });
    client.emit('commandStarted', { commandName: 'hello', command: {}, requestId: 7, databaseName: 'admin' });
    client.emit('commandSucceeded', { commandName: 'hello', reply: {}, requestId: 7, databaseName: 'admin' });
    client.emit('commandStarted', { commandName: 'killCursors', command: { killCursors: 'c' }, databaseName: 'd' });
    client.emit('commandStarted', { commandName: 'find', command: { find: 'c', filter: {}, lsid: {} }, databaseName: 'd', serverConnectionId: 3 });
    client.emit('commandFailed', { commandName: 'find', databaseName: 'd' });
    client.emit('connectionCheckedOut', {});
    const matcher = new Matcher();
    const expectation = (events, extra = {}) => ({ client: 'client0', events: events.map(expected), ...extra });
    matchEvents(
      expectation(['{"commandStartedEvent": {"commandName": "find", "databaseName": "d", "command": {"find": "c"}, "hasServerConnectionId": true, "hasServiceId": false}}']),
      recorder,
      matcher,
    );
    assert.throws(() => matchEvents(expectation(['{"commandStartedEvent": {"commandName": "insert"}}']), recorder, matcher), /expected "insert"/);
    assert.throws(() => matchEvents(expectation([]), recorder, matcher), /expected 0 command events, got 1/);
    matchEvents(expectation([], { ignoreExtraEvents: true }), recorder, matcher);
    assert.equal(recorder.count(expected('{"commandStartedEvent": {"commandName": "find"}}'), matcher), 1);
  });
});

describe('spans (spec "expectedTracingMessages")', () => {
  const spans = [
    { name: 'runCommand admin', attributes: {}, parent: null },
    { name: 'find d.c', attributes: { 'db.namespace': 'd', extra: 1 }, parent: null },
    { name: 'find', attributes: { 'db.command.name': 'find' }, parent: 1 },
    { name: 'find', attributes: { 'db.command.name': 'find' }, parent: 1 },
  ];
  const find = (nested) => ({
    name: 'find d.c',
    attributes: { 'db.namespace': 'd', missing: { $$exists: false } },
    nested: Array.from({ length: nested }, () => ({ name: 'find', attributes: { 'db.command.name': 'find' } })),
  });
  const check = (ignoreExtraSpans, expected) =>
    matchSpans({ client: 'client0', ignoreExtraSpans, spans: expected }, spans, new Matcher({ get: () => undefined }));

  test('spans match by name, attributes and nesting; extra spans only with ignoreExtraSpans', () => {
    check(true, [find(1)]);
    assert.throws(() => check(false, [find(2)]), /expected 1 spans, got 2/);
    check(false, [{ name: 'runCommand admin', attributes: {} }, find(2)]);
    assert.throws(() => check(true, [find(3)]), /no span "find"/);
    assert.throws(() => check(true, [{ name: 'find d.c', attributes: { 'db.namespace': 'e' } }]), /no span "find d.c"/);
    assert.throws(() => check(true, [{ name: 'find d.e', attributes: {} }]), /no span "find d.e"/);
  });
});

describe('the runner against SecantusDB', { timeout: 180_000 }, () => {
  let server;
  let deployment;

  before(async () => {
    server = await startServer();
    const internal = new MongoClient(server.uri);
    deployment = { uri: server.uri, internal, info: await discover(internal, server.uri) };
  });

  after(async () => {
    await deployment?.internal.close();
    await server?.stop();
  });

  test('passes, fails and skips the tests of its self-test file as written', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-unified-'));
    try {
      cpSync(new URL('./unified/self-test.json', import.meta.url), path.join(dir, 'self-test.json'));
      const result = await runDirectory(dir, 'self-test', deployment);
      const descriptions = (records) => records.map(({ test }) => test);
      assert.equal(result.passed, 3, JSON.stringify(result, null, 2));
      assert.deepEqual(descriptions(result.failed), [
        'fails on the outcome',
        'fails on an unexpected error',
        'fails on a result',
        'fails on an error that did not come',
        'fails on a nested extra field',
      ]);
      assert.match(result.failed[0].why, /outcome: npm-unified-runner.coll holds 1 documents, expected 2/);
      assert.match(result.failed[1].why, /noSuchCommand/);
      assert.match(result.failed[4].why, /unexpected field "b"/);
      assert.deepEqual(descriptions(result.skipped), ['skipped for its requirements', 'skipped for its skipReason', 'skipped for its operation']);
      assert.match(result.skipped[0].why, /^runOnRequirements not met/);
      assert.match(result.skipped[2].why, /mapReduce/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('checks the events of client entities, or skips them without MongoClient.on', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'anymongo-unified-'));
    try {
      cpSync(new URL('./unified/self-test-events.json', import.meta.url), path.join(dir, 'self-test-events.json'));
      const result = await runDirectory(dir, 'self-test', deployment);
      if (typeof MongoClient.prototype.on !== 'function') {
        assert.equal(result.skipped.length, 3);
        assert.ok(result.skipped.every(({ why }) => why.includes('MongoClient.on')));
        return;
      }
      assert.equal(result.passed, 1, JSON.stringify(result, null, 2));
      const failed = Object.fromEntries(result.failed.map(({ test, why }) => [test, why]));
      assert.deepEqual(Object.keys(failed), ['fails on an extra event', "fails on a command's field"]);
      assert.match(failed['fails on an extra event'], /expected 2 command events, got 4/);
      assert.match(failed["fails on a command's field"], /comment: missing/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const validFail = path.join(corpusDir(), 'unified-test-format', 'valid-fail');
  test('fails or refuses every test of the spec\'s valid-fail files', { skip: !existsSync(validFail) && `no ${validFail}` }, async () => {
    const result = await runDirectory(validFail, 'unified-test-format', deployment, { expectFailure: true });
    assert.deepEqual(result.failed, [], 'a valid-fail test the runner passed');
    assert.ok(result.passed >= 10, `only ${result.passed} valid-fail tests failed as written`);
  });
});
