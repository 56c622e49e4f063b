// The core's monitoring events delivered to a MongoClient (an EventEmitter) as the
// Node driver's event objects. Internal: the package exports the classes (events.js).
//
// The core builds an event only while someone listens to its family (see
// `listening`), so a client nobody listens to pays nothing for them.
import { BSON } from 'bson';
import { errorFromDocument } from './error_documents.js';
import { ServerDescription, TopologyDescription } from './topology.js';
import {
  CommandFailedEvent,
  CommandStartedEvent,
  CommandSucceededEvent,
  ConnectionCheckOutFailedEvent,
  ConnectionCheckOutStartedEvent,
  ConnectionCheckedInEvent,
  ConnectionCheckedOutEvent,
  ConnectionClosedEvent,
  ConnectionCreatedEvent,
  ConnectionPoolClearedEvent,
  ConnectionPoolClosedEvent,
  ConnectionPoolCreatedEvent,
  ConnectionPoolReadyEvent,
  ConnectionReadyEvent,
  ServerClosedEvent,
  ServerDescriptionChangedEvent,
  ServerHeartbeatFailedEvent,
  ServerHeartbeatStartedEvent,
  ServerHeartbeatSucceededEvent,
  ServerOpeningEvent,
  TopologyClosedEvent,
  TopologyDescriptionChangedEvent,
  TopologyOpeningEvent,
} from './events.js';

/** Each event's class and family (the core's `events::Family`), by its name. */
const EVENTS = {
  commandStarted: [CommandStartedEvent, 'command'],
  commandSucceeded: [CommandSucceededEvent, 'command'],
  commandFailed: [CommandFailedEvent, 'command'],
  connectionPoolCreated: [ConnectionPoolCreatedEvent, 'pool'],
  connectionPoolReady: [ConnectionPoolReadyEvent, 'pool'],
  connectionPoolCleared: [ConnectionPoolClearedEvent, 'pool'],
  connectionPoolClosed: [ConnectionPoolClosedEvent, 'pool'],
  connectionCreated: [ConnectionCreatedEvent, 'pool'],
  connectionReady: [ConnectionReadyEvent, 'pool'],
  connectionClosed: [ConnectionClosedEvent, 'pool'],
  connectionCheckOutStarted: [ConnectionCheckOutStartedEvent, 'pool'],
  connectionCheckOutFailed: [ConnectionCheckOutFailedEvent, 'pool'],
  connectionCheckedOut: [ConnectionCheckedOutEvent, 'pool'],
  connectionCheckedIn: [ConnectionCheckedInEvent, 'pool'],
  topologyOpening: [TopologyOpeningEvent, 'topology'],
  topologyClosed: [TopologyClosedEvent, 'topology'],
  topologyDescriptionChanged: [TopologyDescriptionChangedEvent, 'topology'],
  serverOpening: [ServerOpeningEvent, 'topology'],
  serverClosed: [ServerClosedEvent, 'topology'],
  serverDescriptionChanged: [ServerDescriptionChangedEvent, 'topology'],
  serverHeartbeatStarted: [ServerHeartbeatStartedEvent, 'topology'],
  serverHeartbeatSucceeded: [ServerHeartbeatSucceededEvent, 'topology'],
  serverHeartbeatFailed: [ServerHeartbeatFailedEvent, 'topology'],
};

/**
 * What the core calls for a client's events: `listening(family)`, whether `emitter`
 * has a listener for an event of the family, and `emit(bson)`, which emits one event
 * on `emitter` as an object of its class. A listener that throws does not reach the
 * core (as the Node driver, which emits outside its operations' error handling).
 * `topology` (a Topology), when given, takes each new topology description first:
 * the client then always listens to the (rare) SDAM events.
 */
export function eventSink(emitter, topology) {
  return {
    // Asked before each event is built: a client nobody listens to has no event
    // names, so this costs one call and an empty loop.
    listening(family) {
      if (topology && family === 'topology') return true;
      for (const name of emitter.eventNames()) {
        if (EVENTS[name]?.[1] === family) return true;
      }
      return false;
    },
    emit(bytes) {
      const { name, ...fields } = BSON.deserialize(bytes);
      // An event this package does not know stays a plain object.
      const [Class] = EVENTS[name] ?? [Object];
      if (fields.failure && typeof fields.failure.name === 'string') {
        fields.failure = errorFromDocument(fields.failure);
      }
      if (fields.error && typeof fields.error.name === 'string') {
        fields.error = errorFromDocument(fields.error);
      }
      // The Node driver's descriptions: servers in a Map, the types as its strings.
      for (const key of ['previousDescription', 'newDescription']) {
        if (name === 'topologyDescriptionChanged') fields[key] = new TopologyDescription(fields[key]);
        else if (name === 'serverDescriptionChanged') fields[key] = new ServerDescription(fields[key]);
      }
      if (name === 'topologyDescriptionChanged') topology?._update(fields.newDescription);
      const event = new Class(fields);
      // The Node driver's events carry their name too (`event.name`).
      Object.defineProperty(event, 'name', { value: name, enumerable: false });
      try {
        emitter.emit(name, event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    },
  };
}
