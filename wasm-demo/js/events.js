// Monitoring events, as the Node.js driver emits them on its MongoClient: the
// runtime's `node:events` EventEmitter where it has one (Node.js, Deno, Bun, Workers
// with their Node.js compatibility flag), else a small portable one, and the Node
// driver's event classes. monitoring.js delivers the core's events as these.

/**
 * The subset of Node's EventEmitter that applications and libraries use on a
 * MongoClient, for a runtime without `node:events`.
 */
export class PortableEventEmitter {
  #listeners = new Map();
  #maxListeners = 10;

  /** Kept for Node's API (libraries call it); this emitter never warns about leaks. */
  setMaxListeners(count) {
    this.#maxListeners = count;
    return this;
  }

  getMaxListeners() {
    return this.#maxListeners;
  }

  prependListener(name, listener) {
    this.on(name, listener);
    const listeners = this.#listeners.get(name);
    this.#listeners.set(name, [listeners.at(-1), ...listeners.slice(0, -1)]);
    return this;
  }

  rawListeners(name) {
    return [...(this.#listeners.get(name) ?? [])];
  }

  on(name, listener) {
    if (typeof listener !== 'function') {
      throw new TypeError('The "listener" argument must be a function');
    }
    const listeners = this.#listeners.get(name) ?? [];
    this.#listeners.set(name, [...listeners, listener]);
    return this;
  }

  addListener(name, listener) {
    return this.on(name, listener);
  }

  once(name, listener) {
    const once = (...args) => {
      this.off(name, once);
      listener.apply(this, args);
    };
    once.listener = listener;
    return this.on(name, once);
  }

  off(name, listener) {
    const listeners = this.#listeners.get(name) ?? [];
    const index = listeners.findLastIndex((each) => each === listener || each.listener === listener);
    if (index >= 0) {
      const rest = listeners.toSpliced(index, 1);
      if (rest.length === 0) this.#listeners.delete(name);
      else this.#listeners.set(name, rest);
    }
    return this;
  }

  removeListener(name, listener) {
    return this.off(name, listener);
  }

  removeAllListeners(name) {
    if (name === undefined) this.#listeners.clear();
    else this.#listeners.delete(name);
    return this;
  }

  listeners(name) {
    return (this.#listeners.get(name) ?? []).map((each) => each.listener ?? each);
  }

  listenerCount(name) {
    return this.#listeners.get(name)?.length ?? 0;
  }

  eventNames() {
    return [...this.#listeners.keys()];
  }

  /** Calls each listener of `name` in order; true if there was one. */
  emit(name, ...args) {
    const listeners = this.#listeners.get(name);
    if (!listeners) return false;
    for (const listener of listeners) {
      listener.apply(this, args);
    }
    return true;
  }
}

/**
 * The runtime's `node:events` EventEmitter (reached without an import, which a
 * runtime without it would fail to load), else the portable one.
 */
export const EventEmitter =
  globalThis.process?.getBuiltinModule?.('node:events')?.EventEmitter ?? PortableEventEmitter;

/** An event: its fields as the core sent them, on an object of the Node driver's class. */
class MonitoringEvent {
  constructor(fields) {
    Object.assign(this, fields);
  }
}

/** Command monitoring (`monitorCommands: true`). */
class CommandEvent extends MonitoringEvent {
  /** Whether the command went to a load balancer's service (`serviceId`). */
  get hasServiceId() {
    return Boolean(this.serviceId);
  }
}
export class CommandStartedEvent extends CommandEvent {}
export class CommandSucceededEvent extends CommandEvent {}
export class CommandFailedEvent extends CommandEvent {}

// Connection pools (CMAP).
export class ConnectionPoolMonitoringEvent extends MonitoringEvent {}
export class ConnectionPoolCreatedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionPoolReadyEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionPoolClearedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionPoolClosedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionCreatedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionReadyEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionClosedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionCheckOutStartedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionCheckOutFailedEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionCheckedOutEvent extends ConnectionPoolMonitoringEvent {}
export class ConnectionCheckedInEvent extends ConnectionPoolMonitoringEvent {}

// Server discovery and monitoring.
export class TopologyOpeningEvent extends MonitoringEvent {}
export class TopologyClosedEvent extends MonitoringEvent {}
export class TopologyDescriptionChangedEvent extends MonitoringEvent {}
export class ServerOpeningEvent extends MonitoringEvent {}
export class ServerClosedEvent extends MonitoringEvent {}
export class ServerDescriptionChangedEvent extends MonitoringEvent {}
export class ServerHeartbeatStartedEvent extends MonitoringEvent {}
export class ServerHeartbeatSucceededEvent extends MonitoringEvent {}
export class ServerHeartbeatFailedEvent extends MonitoringEvent {}
