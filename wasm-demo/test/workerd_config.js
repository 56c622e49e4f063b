// The workerd configuration of a Worker that uses the package, shared by the tests'
// serveWorker (server.js) and the cold-request measurement's workerd child
// (tests/cold_request/workerd.mjs). No import of the package itself: writing a
// configuration loads no WebAssembly.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes `config.capnp` (and the 'anymongo' module) into `dir` for the Worker module
 * `workerFile`, as a bundler (wrangler) would give it to the runtime: every module the
 * Worker imports, the package's from `packageDir` (its js/ and pkg/) and bson's from
 * `bsonFile`, and the .wasm as a WebAssembly module. The Worker imports the package as
 * 'anymongo' (the package's `workerd` export, as wrangler resolves it) or as
 * 'anymongo/js/workers.js', and its Workers transport as 'anymongo/transports/workers'; bare `bson` imports resolve next to the importing module.
 * `bindings` are the Worker's text variables (`env.NAME`, wrangler's [vars]);
 * `durableObjects` maps binding names to the Durable Object classes the Worker exports
 * (wrangler's [[durable_objects.bindings]]), kept in memory. Outbound connections may go
 * to loopback only, and TLS trusts `trustedCertificates` (PEM files) besides the
 * platform's store.
 */
export function writeWorkerdConfig(dir, workerFile, { packageDir, bsonFile, bindings = {}, durableObjects = {}, trustedCertificates = [] }) {
  const embed = (file) => JSON.stringify(path.relative(dir, file));
  // The module 'anymongo' stands for the package's workerd entry point, and
  // 'anymongo/transports/workers' for its export of that name (whose imports resolve
  // from its folder, 'anymongo/transports/').
  writeFileSync(path.join(dir, 'anymongo.js'), "export * from 'anymongo/js/workers.js';\n");
  writeFileSync(path.join(dir, 'transports-workers.js'), "export * from '../js/transports/workers.js';\n");
  const modules = [
    ['worker.js', 'esModule', workerFile],
    ['anymongo', 'esModule', path.join(dir, 'anymongo.js')],
    ['anymongo/transports/workers', 'esModule', path.join(dir, 'transports-workers.js')],
    ...['workers.js', 'client.js', 'host.js', 'errors.js', 'error_documents.js', 'events.js', 'monitoring.js', 'session.js', 'concerns.js', 'gridfs.js', 'results.js', 'doh.js', 'bson_options.js', 'topology.js', 'tracing.js', 'transports/workers.js'].map((file) => [
      `anymongo/js/${file}`,
      'esModule',
      path.join(packageDir, 'js', file),
    ]),
    ['anymongo/pkg/anymongo_wasm.js', 'esModule', path.join(packageDir, 'pkg', 'anymongo_wasm.js')],
    ['anymongo/pkg/anymongo_wasm_bg.wasm', 'wasm', path.join(packageDir, 'pkg', 'anymongo_wasm_bg.wasm')],
    ['anymongo/js/bson', 'esModule', bsonFile],
  ];
  const trust = trustedCertificates.length
    ? `, tlsOptions = (trustedCertificates = [${trustedCertificates.map((file) => `embed ${embed(file)}`).join(', ')}])`
    : '';
  writeFileSync(
    path.join(dir, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
    const config :Workerd.Config = (
      services = [
        (name = "main", worker = .worker),
        (name = "loopback", network = (allow = ["local"]${trust})),
      ],
      sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "main")],
    );
    const worker :Workerd.Worker = (
      modules = [${modules.map(([name, kind, file]) => `(name = "${name}", ${kind} = embed ${embed(file)})`).join(', ')}],
      bindings = [${[
        ...Object.entries(bindings).map(([name, text]) => `(name = ${JSON.stringify(name)}, text = ${JSON.stringify(text)})`),
        ...Object.entries(durableObjects).map(([name, className]) => `(name = "${name}", durableObjectNamespace = "${className}")`),
      ].join(', ')}],
      durableObjectNamespaces = [${Object.values(durableObjects).map((className) => `(className = "${className}", uniqueKey = "${className}")`).join(', ')}],
      durableObjectStorage = (inMemory = void),
      compatibilityDate = "2025-01-01",
      globalOutbound = "loopback",
    );
    `,
  );
}
