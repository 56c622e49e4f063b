//! Credentials from the cloud (issue 45): `anymongo::http` against scripted endpoints
//! on loopback (its deadline against a silent one, its size bound against a flooding
//! one), MONGODB-AWS's chain (STS `AssumeRoleWithWebIdentity`, the ECS endpoint, EC2
//! IMDSv2) and its cache, and MONGODB-OIDC's `azure` and `gcp` environments, each
//! authenticating against the scripted MongoDB server.
//!
//! The endpoints are reached through the variables of the environment that the
//! clouds' SDKs read (see `anymongo::auth::cloud`), set in each test's own host
//! environment (`runtime.host.env`), never the process's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anymongo::auth::oidc::OidcHost;
use anymongo::bson::spec::BinarySubtype;
use anymongo::bson::{doc, Binary, Bson, Document};
use anymongo::http::HttpClient;
use anymongo::rt::Runtime;
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::clock::AheadClock;
use anymongo_tests::harness::within;
use anymongo_tests::http_mock::{HttpReply, HttpRequest, MockHttp};
use anymongo_tests::mock::{is_hello, standalone_hello, MockServer};
use anymongo_tests::setup;

const WAIT: Duration = Duration::from_secs(20);

/// Each test's host environment, by test name: `runtime.host.env` is a plain `fn`, so
/// each test has one of its own (see [`host_env!`]) reading its entry here.
static ENVIRONMENTS: OnceLock<Mutex<HashMap<&'static str, HashMap<String, String>>>> =
    OnceLock::new();

fn set_env(test: &'static str, vars: &[(&str, String)]) {
    let vars = vars
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect();
    ENVIRONMENTS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .insert(test, vars);
}

fn get_env(test: &'static str, name: &str) -> Option<String> {
    ENVIRONMENTS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .get(test)?
        .get(name)
        .cloned()
}

/// A `fn(&str) -> Option<String>` reading the environment [`set_env`] gave `$test`.
macro_rules! host_env {
    ($test:literal) => {{
        fn env(name: &str) -> Option<String> {
            get_env($test, name)
        }
        env
    }};
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

fn payload(command: &Document) -> Document {
    Document::from_reader(&command.get_binary_generic("payload").unwrap()[..]).unwrap()
}

/// A MONGODB-AWS server that records, for each `saslContinue`, the access key ID the
/// signature names and the session token sent: which credentials the driver used.
fn aws_server(
    used: Arc<Mutex<Vec<(String, String)>>>,
) -> impl Fn(&Document) -> Document + Send + Sync {
    move |command| match command.keys().next().map(String::as_str) {
        _ if is_hello(command) => standalone_hello(),
        Some("saslStart") => {
            assert_eq!(command.get_str("mechanism").ok(), Some("MONGODB-AWS"));
            let mut nonce = payload(command).get_binary_generic("r").unwrap().clone();
            nonce.extend([7u8; 32]);
            let first = doc! { "s": binary(nonce), "h": "sts.amazonaws.com" };
            doc! {
                "conversationId": 1, "done": false, "ok": 1.0,
                "payload": binary(first.to_vec().unwrap()),
            }
        }
        Some("saslContinue") => {
            let last = payload(command);
            let header = last.get_str("a").unwrap();
            let key = header
                .strip_prefix("AWS4-HMAC-SHA256 Credential=")
                .and_then(|rest| rest.split('/').next())
                .unwrap()
                .to_owned();
            let token = last.get_str("t").unwrap_or_default().to_owned();
            used.lock().unwrap().push((key, token));
            doc! { "conversationId": 1, "done": true, "ok": 1.0, "payload": binary(Vec::new()) }
        }
        _ => doc! { "ok": 1.0 },
    }
}

/// The credentials document of the ECS and EC2 endpoints, expiring `in_secs` from now.
fn endpoint_credentials(key: &str, in_secs: u64) -> Vec<u8> {
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + in_secs;
    format!(
        r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"{key}","SecretAccessKey":"secret-{key}","Token":"token-{key}","Expiration":"{}"}}"#,
        iso8601(expires)
    )
    .into_bytes()
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix seconds.
fn iso8601(secs: u64) -> String {
    let days = secs / 86_400;
    let (mut year, mut day) = (1970, days);
    loop {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let length = if leap { 366 } else { 365 };
        if day < length {
            let months = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            let mut month = 0;
            while day >= months[month] {
                day -= months[month];
                month += 1;
            }
            let second = secs % 86_400;
            return format!(
                "{year:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                month + 1,
                day + 1,
                second / 3600,
                second % 3600 / 60,
                second % 60
            );
        }
        day -= length;
        year += 1;
    }
}

fn aws_client(server: &MockServer, runtime: Runtime, extra: &str) -> Client {
    let uri = format!(
        "mongodb://{}/?authMechanism=MONGODB-AWS{extra}",
        server.address()
    );
    Client::with_runtime(ClientOptions::parse_uri(&uri).unwrap(), runtime).unwrap()
}

async fn ping(client: &Client) -> anymongo::Result<Document> {
    within(
        WAIT,
        client.database("admin").run_command(doc! { "ping": 1 }),
    )
    .await
}

/// EC2 instance metadata (IMDSv2): a session token by PUT, the role, its credentials
/// (key `EC2KEY`), each request checked.
async fn ec2_endpoint() -> MockHttp {
    MockHttp::start(|request: &HttpRequest| {
        let token = request.header("X-aws-ec2-metadata-token");
        match (request.method.as_str(), request.target.as_str(), token) {
            ("PUT", "/latest/api/token", None) => {
                assert_eq!(
                    request.header("X-aws-ec2-metadata-token-ttl-seconds"),
                    Some("30")
                );
                HttpReply::ok("imds-session")
            }
            ("GET", "/latest/meta-data/iam/security-credentials/", Some("imds-session")) => {
                HttpReply::ok("the-role\n")
            }
            (
                "GET",
                "/latest/meta-data/iam/security-credentials/the-role",
                Some("imds-session"),
            ) => HttpReply::ok(endpoint_credentials("EC2KEY", 3600)),
            _ => HttpReply::Respond(401, b"no".to_vec()),
        }
    })
    .await
}

/// The ECS endpoint at `/v2/credentials/task` (key `ECSKEY`).
async fn ecs_endpoint() -> MockHttp {
    MockHttp::start(|request: &HttpRequest| match request.target.as_str() {
        "/v2/credentials/task" => HttpReply::ok(endpoint_credentials("ECSKEY", 3600)),
        _ => HttpReply::Respond(404, Vec::new()),
    })
    .await
}

/// STS answering `AssumeRoleWithWebIdentity` as STS does (key `STSKEY`).
async fn sts_endpoint() -> MockHttp {
    MockHttp::start(|request: &HttpRequest| {
        assert_eq!(
            (request.method.as_str(), request.target.as_str()),
            ("POST", "/")
        );
        assert_eq!(request.header("accept"), Some("application/json"));
        HttpReply::ok(
            r#"{"AssumeRoleWithWebIdentityResponse":{"AssumeRoleWithWebIdentityResult":{"Credentials":
               {"AccessKeyId":"STSKEY","SecretAccessKey":"s","SessionToken":"token-STSKEY","Expiration":4102444799}}}}"#,
        )
    })
    .await
}

/// The Azure Instance Metadata Service, giving `azure-jwt`.
async fn azure_endpoint() -> MockHttp {
    MockHttp::start(|request: &HttpRequest| {
        assert_eq!(request.header("Metadata"), Some("true"));
        assert_eq!(request.header("Accept"), Some("application/json"));
        HttpReply::ok(r#"{"access_token":"azure-jwt","expires_in":"3599","token_type":"Bearer"}"#)
    })
    .await
}

/// The Google Cloud metadata server, giving `gcp-jwt`, or a 403 for audience `denied`.
async fn gcp_endpoint() -> MockHttp {
    MockHttp::start(|request: &HttpRequest| {
        assert_eq!(request.header("Metadata-Flavor"), Some("Google"));
        match request.target.contains("audience=denied") {
            true => HttpReply::Respond(403, b"the audience is not allowed".to_vec()),
            false => HttpReply::ok("gcp-jwt\n"),
        }
    })
    .await
}

#[tokio::test]
async fn http_client_reads_bodies_and_keeps_its_bounds() {
    let endpoint = MockHttp::start(|request: &HttpRequest| match request.target.as_str() {
        "/chunked" => HttpReply::Chunked(200, b"a chunked body of some length".to_vec()),
        "/echo" => HttpReply::ok(request.body.clone()),
        "/silent" => HttpReply::Silent,
        _ => HttpReply::Flood,
    })
    .await;
    let runtime = anymongo_native::runtime();
    let http = HttpClient::new(runtime.transport.clone(), runtime.clock.clone())
        .with_max_response_bytes(64 * 1024);
    let deadline = || runtime.clock.now() + Duration::from_secs(10);
    let url = |path: &str| format!("{}{path}", endpoint.url());

    let response = http.get(&url("/chunked"), &[], deadline()).await.unwrap();
    assert_eq!(response.body, b"a chunked body of some length");
    let response = http
        .post(
            &url("/echo"),
            &[("Content-Type", "text/plain")],
            b"posted",
            deadline(),
        )
        .await
        .unwrap();
    assert_eq!(
        (response.status, response.body.as_slice()),
        (200, &b"posted"[..])
    );
    let posted = &endpoint.requests()[1];
    assert_eq!(posted.method, "POST");
    assert_eq!(posted.header("content-type"), Some("text/plain"));
    assert_eq!(posted.header("host"), Some(endpoint.address()));

    // A silent endpoint: the request ends at its deadline, not later.
    let started = Instant::now();
    let error = within(
        WAIT,
        http.get(
            &url("/silent"),
            &[],
            runtime.clock.now() + Duration::from_millis(300),
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut, "{error}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // A flooding endpoint: the client stops at its bound.
    let error = within(WAIT, http.get(&url("/flood"), &[], deadline()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{error}");
    assert!(
        error.to_string().contains("longer than 65536 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn mongodb_aws_from_ec2_instance_metadata_with_imdsv2() {
    let imds = ec2_endpoint().await;
    set_env("ec2", &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url())]);
    let used = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(aws_server(used.clone())).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("ec2");
    let client = aws_client(&server, runtime, "");
    ping(&client).await.unwrap();
    assert_eq!(
        *used.lock().unwrap(),
        [("EC2KEY".to_owned(), "token-EC2KEY".to_owned())]
    );
    let requests: Vec<(String, String)> = imds
        .requests()
        .into_iter()
        .map(|request| (request.method, request.target))
        .collect();
    assert_eq!(requests.len(), 3, "{requests:?}");
}

#[tokio::test]
async fn mongodb_aws_from_the_ecs_endpoint() {
    let ecs = ecs_endpoint().await;
    set_env(
        "ecs",
        &[(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            format!("{}/v2/credentials/task", ecs.url()),
        )],
    );
    let used = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(aws_server(used.clone())).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("ecs");
    ping(&aws_client(&server, runtime, "")).await.unwrap();
    assert_eq!(
        *used.lock().unwrap(),
        [("ECSKEY".to_owned(), "token-ECSKEY".to_owned())]
    );
    assert_eq!(ecs.requests()[0].header("accept"), Some("application/json"));
}

/// Token files, as a host reads them.
struct Files(HashMap<String, String>);

impl OidcHost for Files {
    fn env_var(&self, _: &str) -> Option<String> {
        None
    }
    fn read_file(&self, path: &str) -> std::io::Result<String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }
}

#[tokio::test]
async fn mongodb_aws_from_assume_role_with_web_identity() {
    let sts = sts_endpoint().await;
    set_env(
        "web_identity",
        &[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/token".into()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123:role/app".into()),
            ("AWS_ROLE_SESSION_NAME", "app1".into()),
            ("AWS_ENDPOINT_URL_STS", sts.url()),
        ],
    );
    let used = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(aws_server(used.clone())).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("web_identity");
    let uri = format!("mongodb://{}/?authMechanism=MONGODB-AWS", server.address());
    let mut options = ClientOptions::parse_uri(&uri).unwrap();
    options.credential.as_mut().unwrap().oidc_host = Some(Arc::new(Files(HashMap::from([(
        "/var/token".to_owned(),
        "web.identity.jwt\n".to_owned(),
    )]))));
    ping(&Client::with_runtime(options, runtime).unwrap())
        .await
        .unwrap();
    assert_eq!(
        *used.lock().unwrap(),
        [("STSKEY".to_owned(), "token-STSKEY".to_owned())]
    );
    let body = String::from_utf8(sts.requests()[0].body.clone()).unwrap();
    assert_eq!(
        body,
        "Action=AssumeRoleWithWebIdentity&RoleSessionName=app1\
         &RoleArn=arn%3Aaws%3Aiam%3A%3A123%3Arole%2Fapp&WebIdentityToken=web.identity.jwt\
         &Version=2011-06-15"
    );
}

/// Without an `OidcHost` on the credential, the native runtime reads the web identity
/// token file itself (`HostInfo::read_file`), as the official drivers do: an EKS pod's
/// connection string needs no application code.
#[tokio::test]
async fn mongodb_aws_reads_the_web_identity_token_file_through_the_runtime() {
    let token_file =
        std::env::temp_dir().join(format!("anymongo-web-identity-{}.jwt", std::process::id()));
    std::fs::write(&token_file, "file.identity.jwt\n").unwrap();
    let sts = sts_endpoint().await;
    set_env(
        "web_identity_file",
        &[
            (
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                token_file.to_str().unwrap().into(),
            ),
            ("AWS_ROLE_ARN", "arn:aws:iam::123:role/app".into()),
            ("AWS_ROLE_SESSION_NAME", "app1".into()),
            ("AWS_ENDPOINT_URL_STS", sts.url()),
        ],
    );
    let used = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(aws_server(used.clone())).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("web_identity_file");
    let uri = format!("mongodb://{}/?authMechanism=MONGODB-AWS", server.address());
    let options = ClientOptions::parse_uri(&uri).unwrap();
    let result = ping(&Client::with_runtime(options, runtime).unwrap()).await;
    std::fs::remove_file(&token_file).unwrap();
    result.unwrap();
    let body = String::from_utf8(sts.requests()[0].body.clone()).unwrap();
    assert!(
        body.contains("&WebIdentityToken=file.identity.jwt&"),
        "{body}"
    );
}

/// Endpoint credentials are cached for the client until five minutes before they
/// expire (Authentication spec, "Caching Credentials"): new connections (each after
/// the last sat idle past `maxIdleTimeMS`, on a clock the test puts ahead) reuse them,
/// then fetch new ones. The environment's credentials are never cached, but cached
/// ones come first.
#[tokio::test]
async fn mongodb_aws_caches_endpoint_credentials_until_shortly_before_they_expire() {
    let fetched = Arc::new(Mutex::new(0));
    let count = fetched.clone();
    let ecs = MockHttp::start(move |_: &HttpRequest| {
        let mut count = count.lock().unwrap();
        *count += 1;
        // Valid for ten minutes.
        HttpReply::ok(endpoint_credentials(&format!("KEY{count}"), 600))
    })
    .await;
    set_env(
        "cache",
        &[(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            format!("{}/creds", ecs.url()),
        )],
    );
    let used = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(aws_server(used.clone())).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("cache");
    let clock = Arc::new(AheadClock::new(runtime.clock.clone()));
    runtime.clock = clock.clone();
    let client = aws_client(
        &server,
        runtime,
        "&maxIdleTimeMS=60000&directConnection=true",
    );
    let keys = || -> Vec<String> {
        used.lock()
            .unwrap()
            .iter()
            .map(|(key, _)| key.clone())
            .collect()
    };

    ping(&client).await.unwrap();
    // Two minutes later: a new connection, the cached credentials (8 minutes left).
    clock.put_ahead(Duration::from_secs(120));
    ping(&client).await.unwrap();
    assert_eq!(keys(), ["KEY1", "KEY1"]);
    assert_eq!(*fetched.lock().unwrap(), 1);
    // Four more: 4 minutes left, under the 5-minute margin: new credentials.
    clock.put_ahead(Duration::from_secs(240));
    ping(&client).await.unwrap();
    assert_eq!(keys(), ["KEY1", "KEY1", "KEY2"]);
    assert_eq!(*fetched.lock().unwrap(), 2);
    client.shutdown().await;
}

/// A failed authentication clears the cache ("If AWS authentication fails for any
/// reason, the cache MUST be cleared"): the next connection fetches again.
#[tokio::test]
async fn mongodb_aws_refetches_after_a_failed_authentication() {
    let ecs =
        MockHttp::start(|_: &HttpRequest| HttpReply::ok(endpoint_credentials("KEY", 3600))).await;
    set_env(
        "refetch",
        &[(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            format!("{}/creds", ecs.url()),
        )],
    );
    let attempts = Arc::new(Mutex::new(0));
    let seen = attempts.clone();
    let server = MockServer::start(move |command: &Document| {
        match command.keys().next().map(String::as_str) {
            _ if is_hello(command) => standalone_hello(),
            Some("saslStart") => {
                *seen.lock().unwrap() += 1;
                doc! { "ok": 0.0, "code": 18, "codeName": "AuthenticationFailed", "errmsg": "no" }
            }
            _ => doc! { "ok": 1.0 },
        }
    })
    .await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("refetch");
    let client = aws_client(&server, runtime, "&directConnection=true");
    for _ in 0..2 {
        let error = ping(&client).await.unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::Authentication {
                    mechanism: "MONGODB-AWS",
                    ..
                }
            ),
            "{error}"
        );
    }
    assert_eq!(*attempts.lock().unwrap(), 2);
    assert_eq!(
        ecs.requests().len(),
        2,
        "the cache was cleared after the failure"
    );
}

/// A MONGODB-OIDC server recording the `jwt` of each `saslStart`.
fn oidc_server(tokens: Arc<Mutex<Vec<String>>>) -> impl Fn(&Document) -> Document + Send + Sync {
    move |command| match command.keys().next().map(String::as_str) {
        _ if is_hello(command) => standalone_hello(),
        Some("saslStart") => {
            assert_eq!(command.get_str("mechanism").ok(), Some("MONGODB-OIDC"));
            tokens
                .lock()
                .unwrap()
                .push(payload(command).get_str("jwt").unwrap().to_owned());
            doc! { "conversationId": 1, "done": true, "ok": 1.0, "payload": binary(Vec::new()) }
        }
        _ => doc! { "ok": 1.0 },
    }
}

#[tokio::test]
async fn mongodb_oidc_azure_environment() {
    let imds = azure_endpoint().await;
    set_env(
        "azure",
        &[("AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.url())],
    );
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(oidc_server(tokens.clone())).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("azure");
    let uri = format!(
        "mongodb://client-id@{}/?authMechanism=MONGODB-OIDC\
         &authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:api://the-app",
        server.address()
    );
    let client = Client::with_runtime(ClientOptions::parse_uri(&uri).unwrap(), runtime).unwrap();
    ping(&client).await.unwrap();
    assert_eq!(*tokens.lock().unwrap(), ["azure-jwt"]);
    assert_eq!(
        imds.requests()[0].target,
        "/metadata/identity/oauth2/token?api-version=2018-02-01\
         &resource=api%3A%2F%2Fthe-app&client_id=client-id"
    );
}

#[tokio::test]
async fn mongodb_oidc_gcp_environment_and_its_errors() {
    let metadata = gcp_endpoint().await;
    set_env(
        "gcp",
        &[("GCE_METADATA_HOST", metadata.address().to_owned())],
    );
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(oidc_server(tokens.clone())).await;
    let client = |resource: &str| {
        let mut runtime = anymongo_native::runtime();
        runtime.host.env = host_env!("gcp");
        let uri = format!(
            "mongodb://{}/?authMechanism=MONGODB-OIDC\
             &authMechanismProperties=ENVIRONMENT:gcp,TOKEN_RESOURCE:{resource}",
            server.address()
        );
        Client::with_runtime(ClientOptions::parse_uri(&uri).unwrap(), runtime).unwrap()
    };
    ping(&client("https://the-app")).await.unwrap();
    assert_eq!(*tokens.lock().unwrap(), ["gcp-jwt"]);
    assert_eq!(
        metadata.requests()[0].target,
        "/computeMetadata/v1/instance/service-accounts/default/identity?audience=https%3A%2F%2Fthe-app"
    );
    // "If the response does not return a status code of 200, the driver MUST raise an
    // error including the HTTP response body."
    let error = ping(&client("denied")).await.unwrap_err();
    assert!(
        error.to_string().contains("the audience is not allowed"),
        "{error}"
    );
}

/// Each source authenticates from the wasm32-wasip2 build too: the `cloud_ping` program
/// under wasmtime, its environment naming the endpoints, over wasi:sockets.
#[tokio::test]
async fn every_source_authenticates_under_wasip2() {
    let used = Arc::new(Mutex::new(Vec::new()));
    let aws = MockServer::start(aws_server(used.clone())).await;
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let oidc = MockServer::start(oidc_server(tokens.clone())).await;
    let (ec2, ecs, sts, azure, gcp) = (
        ec2_endpoint().await,
        ecs_endpoint().await,
        sts_endpoint().await,
        azure_endpoint().await,
        gcp_endpoint().await,
    );
    let files = tempfile::tempdir().unwrap();
    let token_file = files.path().join("token");
    std::fs::write(&token_file, "web.identity.jwt").unwrap();
    let aws_uri = format!("mongodb://{}/?authMechanism=MONGODB-AWS", aws.address());
    let oidc_uri = |environment: &str| {
        format!(
            "mongodb://{}/?authMechanism=MONGODB-OIDC\
             &authMechanismProperties=ENVIRONMENT:{environment},TOKEN_RESOURCE:api://app",
            oidc.address()
        )
    };
    let runs: [(String, Vec<(&str, String)>); 5] = [
        (
            aws_uri.clone(),
            vec![("AWS_EC2_METADATA_SERVICE_ENDPOINT", ec2.url())],
        ),
        (
            aws_uri.clone(),
            vec![(
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{}/v2/credentials/task", ecs.url()),
            )],
        ),
        (
            aws_uri,
            vec![
                (
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                    token_file.display().to_string(),
                ),
                ("AWS_ROLE_ARN", "arn:aws:iam::123:role/app".into()),
                ("AWS_ENDPOINT_URL_STS", sts.url()),
            ],
        ),
        (
            oidc_uri("azure"),
            vec![("AZURE_POD_IDENTITY_AUTHORITY_HOST", azure.url())],
        ),
        (
            oidc_uri("gcp"),
            vec![("GCE_METADATA_HOST", gcp.address().to_owned())],
        ),
    ];
    let program =
        tokio::task::spawn_blocking(|| setup::wasip2_binary("anymongo-tests", "cloud_ping"))
            .await
            .unwrap();
    for (uri, env) in runs {
        let mut command = std::process::Command::new(setup::wasmtime());
        command.args(["run", "-S", "inherit-network=y"]);
        command
            .arg("--dir")
            .arg(format!("{0}::{0}", files.path().display()));
        for (name, value) in &env {
            command.arg("--env").arg(format!("{name}={value}"));
        }
        command.arg(&program).arg(&uri);
        let output = within(
            WAIT * 3,
            tokio::task::spawn_blocking(move || command.output()),
        )
        .await
        .unwrap()
        .expect("wasmtime runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("outcome: ok"),
            "{env:?}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let keys: Vec<String> = used
        .lock()
        .unwrap()
        .iter()
        .map(|(key, _)| key.clone())
        .collect();
    assert_eq!(keys, ["EC2KEY", "ECSKEY", "STSKEY"]);
    assert_eq!(*tokens.lock().unwrap(), ["azure-jwt", "gcp-jwt"]);
}

/// An endpoint that never answers holds a connection no longer than its
/// establishment's bound (`connectTimeoutMS`): the request ends with it.
#[tokio::test]
async fn a_silent_endpoint_fails_authentication_at_the_connect_timeout() {
    let ecs = MockHttp::start(|_: &HttpRequest| HttpReply::Silent).await;
    set_env(
        "silent",
        &[(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            format!("{}/creds", ecs.url()),
        )],
    );
    let server = MockServer::start(aws_server(Arc::new(Mutex::new(Vec::new())))).await;
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = host_env!("silent");
    let client = aws_client(
        &server,
        runtime,
        "&connectTimeoutMS=500&directConnection=true",
    );
    let started = Instant::now();
    let error = ping(&client).await.unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(5),
        "{took:?}: {error}"
    );
    assert_eq!(ecs.requests().len(), 1, "{error}");
    client.shutdown().await;
}
