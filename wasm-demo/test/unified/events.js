// The events of client entities (spec "entity" observeEvents, "expectedEventsForClient",
// "expectedEvent"): recorded from the Node driver's EventEmitter events, under the
// unified format's names, and matched against the expected ones.
import { MatchError, show } from './matcher.js';

/** Node driver event name → the unified format's name, and its category (eventType). */
export const NODE_EVENTS = {
  commandStarted: ['commandStartedEvent', 'command'],
  commandSucceeded: ['commandSucceededEvent', 'command'],
  commandFailed: ['commandFailedEvent', 'command'],
  connectionPoolCreated: ['poolCreatedEvent', 'cmap'],
  connectionPoolReady: ['poolReadyEvent', 'cmap'],
  connectionPoolCleared: ['poolClearedEvent', 'cmap'],
  connectionPoolClosed: ['poolClosedEvent', 'cmap'],
  connectionCreated: ['connectionCreatedEvent', 'cmap'],
  connectionReady: ['connectionReadyEvent', 'cmap'],
  connectionClosed: ['connectionClosedEvent', 'cmap'],
  connectionCheckOutStarted: ['connectionCheckOutStartedEvent', 'cmap'],
  connectionCheckOutFailed: ['connectionCheckOutFailedEvent', 'cmap'],
  connectionCheckedOut: ['connectionCheckedOutEvent', 'cmap'],
  connectionCheckedIn: ['connectionCheckedInEvent', 'cmap'],
  serverDescriptionChanged: ['serverDescriptionChangedEvent', 'sdam'],
  topologyDescriptionChanged: ['topologyDescriptionChangedEvent', 'sdam'],
  serverHeartbeatStarted: ['serverHeartbeatStartedEvent', 'sdam'],
  serverHeartbeatSucceeded: ['serverHeartbeatSucceededEvent', 'sdam'],
  serverHeartbeatFailed: ['serverHeartbeatFailedEvent', 'sdam'],
  topologyOpening: ['topologyOpeningEvent', 'sdam'],
  topologyClosed: ['topologyClosedEvent', 'sdam'],
};

const CATEGORY = Object.fromEntries(Object.values(NODE_EVENTS));

/** The category (command, cmap, sdam) of a unified event name. */
export function eventCategory(name) {
  return CATEGORY[name];
}

// Command Logging and Monitoring, "Security": commands whose events are left out unless
// observeSensitiveCommands (hello and legacy hello only with speculativeAuthenticate,
// seen as a redacted, empty command or reply).
const SENSITIVE = new Set(['authenticate', 'saslstart', 'saslcontinue', 'getnonce', 'createuser', 'updateuser', 'copydbgetnonce', 'copydbsaslstart', 'copydb']);
const HELLO = new Set(['hello', 'ismaster']);

function isEmpty(document) {
  return document !== null && typeof document === 'object' && Object.keys(document).length === 0;
}

/** Records the events a client entity observes (spec "entity": observeEvents, ignoreCommandMonitoringEvents...). */
export class EventRecorder {
  /** [{ name, category, event }] in the order they came. */
  events = [];
  #observe;
  #ignored;
  #sensitive;
  #stores = [];
  #sensitiveRequests = new Set();

  constructor(spec) {
    this.#observe = new Set(spec.observeEvents ?? []);
    this.#ignored = new Set(['configureFailPoint', ...(spec.ignoreCommandMonitoringEvents ?? [])]);
    this.#sensitive = Boolean(spec.observeSensitiveCommands);
  }

  /** Listens to `events` (NODE_EVENTS) of `client`. */
  attach(client, events) {
    for (const [nodeName, [name, category]] of Object.entries(events)) {
      client.on(nodeName, (event) => this.#record(name, category, event));
    }
  }

  /** Also appends the events named in `names` to `list`, as storeEventsAsEntities asks. */
  store(names, list) {
    this.#stores.push([new Set(names), list]);
  }

  #record(name, category, event) {
    for (const [names, list] of this.#stores) {
      if (names.has(name)) list.push({ name, observedAt: Date.now() / 1000, ...event });
    }
    if (category === 'command' && this.#ignoredCommand(name, event)) return;
    if (this.#observe.has(name)) this.events.push({ name, category, event });
  }

  #ignoredCommand(name, event) {
    const command = String(event.commandName ?? '');
    if (this.#ignored.has(command)) return true;
    if (this.#sensitive) return false;
    const lower = command.toLowerCase();
    if (SENSITIVE.has(lower)) return true;
    if (HELLO.has(lower)) {
      // The started event's command tells; its reply's event follows by requestId.
      if (name === 'commandStartedEvent') {
        if (isEmpty(event.command) || event.command?.speculativeAuthenticate !== undefined) {
          this.#sensitiveRequests.add(event.requestId);
          return true;
        }
        return false;
      }
      return this.#sensitiveRequests.has(event.requestId) || isEmpty(event.reply);
    }
    return false;
  }

  /** How many events match `expected` (`{ <name>: { fields } }`), as waitForEvent and assertEventCount count. */
  count(expected, matcher) {
    return this.events.filter(({ name, event }) => matchesEvent(expected, name, event, matcher)).length;
  }

  /** Connections checked out and not checked in yet (assertNumberConnectionsCheckedOut). */
  checkedOut() {
    let out = 0;
    for (const { name } of this.events) {
      if (name === 'connectionCheckedOutEvent') out += 1;
      if (name === 'connectionCheckedInEvent') out -= 1;
    }
    return out;
  }
}

/** Whether an observed event matches an expected one, without throwing. */
export function matchesEvent(expected, name, event, matcher) {
  try {
    matchEvent(expected, name, event, matcher);
    return true;
  } catch (error) {
    if (error instanceof MatchError) return false;
    throw error;
  }
}

const isSet = (value) => value !== undefined && value !== null;

/** Matches one observed event against `expected` (spec "expectedEvent"); throws MatchError. */
export function matchEvent(expected, name, event, matcher) {
  const [expectedName] = Object.keys(expected);
  const fields = expected[expectedName] ?? {};
  if (expectedName !== name) throw new MatchError(`expected a ${expectedName}, got a ${name} (${show(event.commandName ?? '')})`);
  for (const [field, value] of Object.entries(fields)) {
    const place = `${name}.${field}`;
    switch (field) {
      case 'command':
      case 'reply':
        // Spec: the command and the reply are root-level documents.
        matcher.root(value, event[field], place);
        break;
      case 'commandName':
      case 'databaseName':
      case 'reason':
        if (event[field] !== value) throw new MatchError(`${place}: expected ${show(value)}, got ${show(event[field])}`);
        break;
      case 'hasServiceId':
        if (isSet(event.serviceId) !== value) throw new MatchError(`${place}: expected ${value}`);
        break;
      case 'hasServerConnectionId':
        if (isSet(event.serverConnectionId) !== value) throw new MatchError(`${place}: expected ${value}`);
        break;
      case 'interruptInUseConnections':
        if (Boolean(event.interruptInUseConnections) !== value) throw new MatchError(`${place}: expected ${value}`);
        break;
      case 'previousDescription':
      case 'newDescription':
        // Spec "expectedSdamEvent": only the server or topology `type` is named.
        matcher.root(value, { type: event[field]?.type }, place);
        break;
      case 'awaited':
        if (Boolean(event.awaited) !== value) throw new MatchError(`${place}: expected ${value}`);
        break;
      default:
        matcher.root(value, event[field], place);
    }
  }
}

/** Checks one `expectEvents` entry against what `recorder` observed (spec "expectedEventsForClient"). */
export function matchEvents(expected, recorder, matcher) {
  const category = expected.eventType ?? 'command';
  const actual = recorder.events.filter((event) => event.category === category);
  const wanted = expected.events;
  const enough = expected.ignoreExtraEvents ? actual.length >= wanted.length : actual.length === wanted.length;
  if (!enough) {
    const names = actual.map(({ name, event }) => `${name}${event.commandName ? `(${event.commandName})` : ''}`);
    throw new MatchError(`expected ${wanted.length} ${category} events, got ${actual.length}: ${names.join(', ')}`);
  }
  wanted.forEach((expectedEvent, i) => {
    try {
      matchEvent(expectedEvent, actual[i].name, actual[i].event, matcher);
    } catch (error) {
      if (error instanceof MatchError) throw new MatchError(`event ${i}: ${error.message}`);
      throw error;
    }
  });
}
