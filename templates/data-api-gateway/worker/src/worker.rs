//! The class the Worker's Durable Object holds (`index.js`).

use std::rc::Rc;

use anymongo::Client;
use data_api_gateway::{Config, Gateway, Request, Response};
use futures::lock::Mutex;
use js_sys::{Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// The gateway of one Durable Object, and the client it keeps between requests.
///
/// In JavaScript: `new DataApiGateway(env.MONGODB_URI, env.DATA_API_CONFIG, transport)`,
/// then `await gateway.handle(method, path, headers, body)` for each request.
#[wasm_bindgen]
pub struct DataApiGateway {
    inner: Rc<Inner>,
}

struct Inner {
    /// The gateway, or the 500 every request answers when the configuration is not
    /// valid (as the wasi:http runtime answers).
    gateway: Result<Gateway, Response>,
    /// The connection string; empty when not set.
    uri: String,
    /// The JavaScript transport object (`workersTransport`, see `anymongo_wasm::host`).
    transport: JsValue,
    /// The client, made by the first request that reaches the database and shared by
    /// the later ones. A lock rather than a cell: a Durable Object takes a request while
    /// another waits on I/O, and the second must wait for the first one's client, not
    /// make (and connect) its own.
    client: Mutex<Option<Client>>,
}

#[wasm_bindgen]
impl DataApiGateway {
    /// A gateway for the connection string `uri` and the JSON configuration `config`
    /// (`data_api_gateway::Config`, the same the wasi:http runtime reads), whose sockets
    /// come from `transport`. Never fails: a missing or invalid setting is the 500 of
    /// every request, which the Worker's logs (not its callers) explain.
    #[wasm_bindgen(constructor)]
    pub fn new(uri: Option<String>, config: Option<String>, transport: JsValue) -> DataApiGateway {
        let gateway = Config::from_json(config.as_deref().unwrap_or_default())
            .map(Gateway::new)
            .map_err(|error| Gateway::misconfigured(format!("DATA_API_CONFIG: {error}")));
        DataApiGateway {
            inner: Rc::new(Inner {
                gateway,
                uri: uri.unwrap_or_default(),
                transport,
                client: Mutex::new(None),
            }),
        }
    }

    /// The largest body the gateway accepts: the Worker reads at most one byte more,
    /// and the core answers 413 to a body longer than this.
    #[wasm_bindgen(getter, js_name = maxBodyBytes)]
    pub fn max_body_bytes(&self) -> f64 {
        match &self.inner.gateway {
            Ok(gateway) => gateway.max_body_bytes() as f64,
            Err(_) => 0.0,
        }
    }

    /// Answers one request: `headers` is an array of `[name, value]` pairs, `body` its
    /// bytes. Resolves to `{ status, headers, body }` (`headers` an object of header
    /// names to values, `body` text); never rejects.
    pub fn handle(&self, method: String, path: String, headers: Array, body: Vec<u8>) -> Promise {
        let request = Request {
            method,
            path,
            headers: headers
                .iter()
                .filter_map(|pair| {
                    let pair = Array::from(&pair);
                    Some((pair.get(0).as_string()?, pair.get(1).as_string()?))
                })
                .collect(),
            body,
        };
        let inner = self.inner.clone();
        future_to_promise(async move {
            let response = inner.answer(&request).await;
            Ok(into_js(&response))
        })
    }
}

impl Inner {
    async fn answer(&self, request: &Request) -> Response {
        let gateway = match &self.gateway {
            Ok(gateway) => gateway,
            Err(misconfigured) => return misconfigured.clone(),
        };
        if self.uri.is_empty() {
            return Gateway::misconfigured("MONGODB_URI is not set");
        }
        gateway.handle(request, || self.client(gateway)).await
    }

    /// The Durable Object's client, made on first use.
    async fn client(&self, gateway: &Gateway) -> anymongo::Result<Client> {
        let mut slot = self.client.lock().await;
        if let Some(client) = &*slot {
            return Ok(client.clone());
        }
        // Single-threaded monitoring (no spawner): a Worker keeps no task running
        // between requests, so the core checks servers on demand.
        let runtime = anymongo_wasm::host::runtime(
            self.transport.clone(),
            false,
            "Cloudflare Workers".into(),
        );
        let client = gateway.connect_with(&self.uri, runtime).await?;
        *slot = Some(client.clone());
        Ok(client)
    }
}

/// `{ status, headers: { 'content-type': … }, body }`.
fn into_js(response: &Response) -> JsValue {
    let object = Object::new();
    let headers = Object::new();
    // Setting properties of fresh plain objects cannot fail.
    let _ = Reflect::set(
        &headers,
        &"content-type".into(),
        &response.content_type.into(),
    );
    let _ = Reflect::set(&object, &"status".into(), &response.status.into());
    let _ = Reflect::set(&object, &"headers".into(), &headers);
    let _ = Reflect::set(&object, &"body".into(), &response.body.as_str().into());
    object.into()
}
