// `client.topology`, as libraries read it on the Node.js driver's MongoClient
// (Mongoose reads `topology.description.type` to know a replica set, and
// `topology.s.description.heartbeatFrequencyMS` to tell a stale connection): the
// deployment's description as the core's monitoring last reported it, in the Node
// driver's shape (a `servers` Map, its TopologyType and ServerType strings).

/** One server as the monitor last saw it (`type`: 'RSPrimary', 'Standalone', 'Unknown'...). */
export class ServerDescription {
  constructor(fields) {
    Object.assign(this, fields);
  }
}

/** The deployment (`type`: 'Single', 'ReplicaSetWithPrimary', 'Sharded', 'LoadBalanced', 'Unknown'...). */
export class TopologyDescription {
  constructor({ servers = {}, ...fields }) {
    Object.assign(this, fields);
    /** Each server's description by its address (`host:port`). */
    this.servers = new Map(Object.entries(servers).map(([address, server]) => [address, new ServerDescription(server)]));
  }

  /** Whether a server of a version the driver cannot talk to is in the deployment. */
  get compatible() {
    return this.compatibilityError === null || this.compatibilityError === undefined;
  }

  /** Whether any server has answered its monitor. */
  get hasKnownServers() {
    return [...this.servers.values()].some((server) => server.type !== 'Unknown');
  }
}

/**
 * A connected client's view of its deployment: `description`, replaced on each
 * `topologyDescriptionChanged` event the client receives.
 */
export class Topology {
  /** `s.description` is where the Node driver keeps it too; libraries read either. */
  s;

  constructor(seeds, heartbeatFrequencyMS) {
    const servers = Object.fromEntries(seeds.map((address) => [address, { address, type: 'Unknown' }]));
    this.s = { description: new TopologyDescription({ type: 'Unknown', servers, setName: null, heartbeatFrequencyMS }) };
  }

  get description() {
    return this.s.description;
  }

  /** @internal Takes the description of a `topologyDescriptionChanged` event. */
  _update(description) {
    this.s.description = description instanceof TopologyDescription ? description : new TopologyDescription(description);
  }
}
