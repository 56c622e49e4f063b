// Credentials from the cloud, from the npm package (issue 45): the core's HTTP client
// reaches the cloud endpoints (node:http servers on loopback standing in for EC2
// instance metadata, ECS, STS, Azure IMDS and the GCP metadata server) over the Node.js
// transport's sockets, the process environment naming them as the clouds' SDKs read
// it; the MongoDB server is scripted in this file, behind a transport that answers
// the driver's messages in-process (SecantusDB offers neither MONGODB-AWS nor
// MONGODB-OIDC), and records the credentials each authentication used.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Binary, deserialize, serialize } from 'bson';
import { MongoClient } from '../js/node.js';
import { nodeTransport } from '../js/transports/node.js';

const BOUND = { timeout: 30_000 };
const OPTIONS = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };
const HELLO = {
  isWritablePrimary: true, helloOk: true, maxWireVersion: 21, minWireVersion: 0,
  maxBsonObjectSize: 16 * 1024 * 1024, maxMessageSizeBytes: 48_000_000,
  maxWriteBatchSize: 100_000, connectionId: 1, ok: 1,
};

/** The environment variables a test set, restored afterwards. */
const VARIABLES = [
  'AWS_EC2_METADATA_SERVICE_ENDPOINT', 'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN', 'AWS_ENDPOINT_URL_STS', 'AZURE_POD_IDENTITY_AUTHORITY_HOST', 'GCE_METADATA_HOST',
  'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'OIDC_TOKEN_FILE', 'AZURE_FEDERATED_TOKEN_FILE',
];

/** A message: header (length, request id, response to, op code), then `body`. */
function message(responseTo, opCode, body) {
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + body.length, 0);
  header.writeInt32LE(1, 4);
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(opCode, 12);
  return new Uint8Array(Buffer.concat([header, body]));
}

/** The reply to one request message: OP_REPLY to OP_QUERY, OP_MSG to OP_MSG. */
function reply(request, answer) {
  const view = Buffer.from(request.buffer, request.byteOffset, request.byteLength);
  const requestId = view.readInt32LE(4);
  const opCode = view.readInt32LE(12);
  let body = 16;
  if (opCode === 2013) body += 5; // flagBits, then a kind-0 section
  else body = view.indexOf(0, body + 4) + 9; // OP_QUERY: flags, collection name, skip, return
  const command = deserialize(view.subarray(body, body + view.readInt32LE(body)));
  const document = Buffer.from(serialize(answer(command)));
  if (opCode === 2013) return message(requestId, 2013, Buffer.concat([Buffer.alloc(5), document]));
  const replyHeader = Buffer.alloc(20);
  replyHeader.writeInt32LE(1, 16); // numberReturned
  return message(requestId, 1, Buffer.concat([replyHeader, document]));
}

/**
 * A transport whose connections to `server` (host `mongo.test`) are answered by
 * `answer(command)` in-process; any other host (the cloud endpoints) is Node's.
 */
function scriptedTransport(answer) {
  return {
    async connect(host, port, tls) {
      if (host !== 'mongo.test') return nodeTransport.connect(host, port, tls);
      const replies = [];
      let waiting = null;
      return {
        read: () => (replies.length ? Promise.resolve(replies.shift()) : new Promise((resolve) => (waiting = resolve))),
        async write(bytes) {
          const bytesReply = reply(bytes, answer);
          if (waiting) {
            const resolve = waiting;
            waiting = null;
            resolve(bytesReply);
          } else replies.push(bytesReply);
        },
        close() {
          if (waiting) waiting(null);
        },
      };
    },
  };
}

/** A MONGODB-AWS and MONGODB-OIDC server recording what each authentication used. */
function cloudServer() {
  const used = [];
  const answer = (command) => {
    if ('isMaster' in command || 'ismaster' in command || 'hello' in command) return HELLO;
    const payload = command.payload ? deserialize(command.payload.buffer) : {};
    if (command.saslStart && command.mechanism === 'MONGODB-OIDC') {
      used.push(payload.jwt);
      return { conversationId: 1, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 };
    }
    if (command.saslStart) {
      const nonce = Buffer.concat([Buffer.from(payload.r.buffer), Buffer.alloc(32, 7)]);
      const first = serialize({ s: new Binary(nonce), h: 'sts.amazonaws.com' });
      return { conversationId: 1, done: false, payload: new Binary(first), ok: 1 };
    }
    if (command.saslContinue) {
      const key = /Credential=([^/]+)\//.exec(payload.a)[1];
      used.push(`${key}/${payload.t}`);
      return { conversationId: 1, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 };
    }
    return { ok: 1 };
  };
  return { used, transport: scriptedTransport(answer) };
}

/** An HTTP endpoint on loopback answering `handle(request, body)` → [status, body]. */
async function endpoint(handle) {
  const requests = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      requests.push({ method: request.method, url: request.url, headers: request.headers, body });
      const [status, text] = handle(request, body);
      response.writeHead(status, { 'Content-Type': 'application/json' }).end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${server.address().port}`;
  return { requests, address, url: `http://${address}`, close: () => new Promise((done) => server.close(done)) };
}

function credentials(key) {
  return JSON.stringify({
    AccessKeyId: key, SecretAccessKey: `secret-${key}`, Token: `token-${key}`,
    Expiration: new Date(Date.now() + 3600_000).toISOString(),
  });
}

async function ping(uri, transport) {
  const client = new MongoClient(uri, { ...OPTIONS, transport });
  try {
    await client.db('admin').command({ ping: 1 });
  } finally {
    await client.close();
  }
}

describe('credentials from the cloud', BOUND, () => {
  const saved = {};
  before(() => VARIABLES.forEach((name) => (saved[name] = process.env[name])));
  after(() => VARIABLES.forEach((name) => (saved[name] === undefined ? delete process.env[name] : (process.env[name] = saved[name]))));
  const setEnv = (vars) => {
    VARIABLES.forEach((name) => delete process.env[name]);
    Object.assign(process.env, vars);
  };

  it('MONGODB-AWS from EC2 instance metadata (IMDSv2)', BOUND, async () => {
    const imds = await endpoint((request) => {
      const token = request.headers['x-aws-ec2-metadata-token'];
      if (request.method === 'PUT' && request.url === '/latest/api/token') return [200, 'imds-session'];
      if (token !== 'imds-session') return [401, 'no'];
      if (request.url === '/latest/meta-data/iam/security-credentials/') return [200, 'the-role'];
      return [200, credentials('EC2KEY')];
    });
    setEnv({ AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url });
    const server = cloudServer();
    await ping('mongodb://mongo.test/?authMechanism=MONGODB-AWS', server.transport);
    await imds.close();
    assert.deepEqual(server.used, ['EC2KEY/token-EC2KEY']);
    assert.deepEqual(imds.requests.map((r) => `${r.method} ${r.url}`), [
      'PUT /latest/api/token',
      'GET /latest/meta-data/iam/security-credentials/',
      'GET /latest/meta-data/iam/security-credentials/the-role',
    ]);
    assert.equal(imds.requests[0].headers['x-aws-ec2-metadata-token-ttl-seconds'], '30');
  });

  it('MONGODB-AWS from the ECS endpoint', BOUND, async () => {
    const ecs = await endpoint(() => [200, credentials('ECSKEY')]);
    setEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${ecs.url}/v2/credentials/task` });
    const server = cloudServer();
    await ping('mongodb://mongo.test/?authMechanism=MONGODB-AWS', server.transport);
    await ecs.close();
    assert.deepEqual(server.used, ['ECSKEY/token-ECSKEY']);
  });

  it('MONGODB-AWS from AssumeRoleWithWebIdentity, the token read from its file', BOUND, async () => {
    const sts = await endpoint((request, body) => {
      const form = new URLSearchParams(body);
      if (form.get('WebIdentityToken') !== 'the-web-identity-token') return [403, ''];
      return [200, JSON.stringify({ AssumeRoleWithWebIdentityResponse: { AssumeRoleWithWebIdentityResult: { Credentials: {
        AccessKeyId: 'STSKEY', SecretAccessKey: 'secret-STSKEY', SessionToken: 'token-STSKEY',
        Expiration: Math.floor(Date.now() / 1000) + 3600,
      } } } })];
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'anymongo-token-'));
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'the-web-identity-token\n');
    try {
      setEnv({ AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: 'arn:aws:iam::1:role/app', AWS_ENDPOINT_URL_STS: sts.url });
      const server = cloudServer();
      await ping('mongodb://mongo.test/?authMechanism=MONGODB-AWS', server.transport);
      assert.deepEqual(server.used, ['STSKEY/token-STSKEY']);
      assert.equal(new URLSearchParams(sts.requests[0].body).get('RoleArn'), 'arn:aws:iam::1:role/app');

      // A missing file: the error names it, and STS is not asked.
      const missing = path.join(dir, 'missing');
      setEnv({ AWS_WEB_IDENTITY_TOKEN_FILE: missing, AWS_ROLE_ARN: 'arn:aws:iam::1:role/app', AWS_ENDPOINT_URL_STS: sts.url });
      await assert.rejects(ping('mongodb://mongo.test/?authMechanism=MONGODB-AWS', cloudServer().transport), (error) => {
        assert.match(error.message, /could not read the token file/);
        assert.ok(error.message.includes(`'${missing}'`), error.message);
        assert.match(error.message, /ENOENT/);
        return true;
      });
      assert.equal(sts.requests.length, 1);
    } finally {
      await sts.close();
      await rm(dir, { recursive: true });
    }
  });

  it('MONGODB-OIDC test and k8s environments read their token files', BOUND, async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'anymongo-token-'));
    try {
      await writeFile(path.join(dir, 'test'), 'test-jwt');
      await writeFile(path.join(dir, 'k8s'), 'k8s-jwt\n');
      setEnv({ OIDC_TOKEN_FILE: path.join(dir, 'test'), AZURE_FEDERATED_TOKEN_FILE: path.join(dir, 'k8s') });
      const server = cloudServer();
      for (const environment of ['test', 'k8s']) {
        await ping(`mongodb://mongo.test/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:${environment}`, server.transport);
      }
      assert.deepEqual(server.used, ['test-jwt', 'k8s-jwt']);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('MONGODB-OIDC azure and gcp environments', BOUND, async () => {
    const azure = await endpoint((request) => {
      assert.equal(request.headers.metadata, 'true');
      return [200, JSON.stringify({ access_token: 'azure-jwt', expires_in: '3599' })];
    });
    const gcp = await endpoint((request) => {
      assert.equal(request.headers['metadata-flavor'], 'Google');
      return [200, 'gcp-jwt'];
    });
    setEnv({ AZURE_POD_IDENTITY_AUTHORITY_HOST: azure.url, GCE_METADATA_HOST: gcp.address });
    const server = cloudServer();
    for (const environment of ['azure', 'gcp']) {
      await ping(`mongodb://mongo.test/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:${environment},TOKEN_RESOURCE:api://app`, server.transport);
    }
    await azure.close();
    await gcp.close();
    assert.deepEqual(server.used, ['azure-jwt', 'gcp-jwt']);
    assert.equal(azure.requests[0].url, '/metadata/identity/oauth2/token?api-version=2018-02-01&resource=api%3A%2F%2Fapp');
    assert.equal(gcp.requests[0].url, '/computeMetadata/v1/instance/service-accounts/default/identity?audience=api%3A%2F%2Fapp');
  });
});
