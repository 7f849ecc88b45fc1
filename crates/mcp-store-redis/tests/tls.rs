//! `rediss://` and Redis ACL users (security review X10): a `redis-server` (Debian's is built
//! with TLS) that listens on TLS only, with a certificate from a CA made here (rcgen), and an
//! ACL user allowed the fleet's prefix only. The stores connect over TLS as that user and
//! work; a plain connection, an unknown CA, a wrong password and a URL without TLS are each
//! refused with an error that says so.

use std::path::Path;
use std::time::Duration;

use mcp_server_core::fleet::{Bus, SessionStore};
use mcp_server_core::tasks::{TaskRecord, TaskStore};
use mcp_state_seal::SeenStore;
use mcp_store_redis::{RedisConfig, RedisStores};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};

/// A certificate authority: its certificate (PEM) and what signs with it.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca() -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "fleet test CA");
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, key }
}

#[path = "support/redis_server.rs"]
mod redis_server;
use redis_server::{RedisServer, free_port};

/// A `redis-server` listening on TLS only (loopback, no persistence), killed on drop.
struct TlsRedis(RedisServer);

impl TlsRedis {
    fn start(dir: &Path, ca: &Ca) -> TlsRedis {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
        let file = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_owned()
        };
        let (cert, key, ca) = (
            file("redis.crt", cert.pem()),
            file("redis.key", key.serialize_pem()),
            file("ca.crt", ca.cert.pem()),
        );
        let port = free_port();
        let port_arg = port.to_string();
        let args = [
            "--port",
            "0",
            "--tls-port",
            &port_arg,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            "no",
            // The default user may do nothing; `fleet` may use the `forge:` keys and
            // channels only.
            "--user",
            "default",
            "off",
            "--user",
            "fleet",
            "on",
            ">fleet-secret",
            "~forge:*",
            "&forge:*",
            "+@all",
            "-@dangerous",
            "+info",
        ];
        TlsRedis(RedisServer::spawn(
            port,
            &args,
            Some(&dir.join("redis.log")),
        ))
    }
}

async fn refused(config: RedisConfig) -> String {
    let config = config
        .command_timeout(Duration::from_millis(500))
        .reconnect_attempts(0);
    match RedisStores::connect(config).await {
        Ok(_) => panic!("connected"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn the_stores_work_over_rediss_as_an_acl_user_and_nothing_else_connects() {
    let dir = std::env::temp_dir().join(format!("keel-rediss-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = ca();
    let redis = TlsRedis::start(&dir, &ca);
    let url = |scheme: &str, user: &str| format!("{scheme}://{user}@127.0.0.1:{}/", redis.0.port);

    let config = RedisConfig::new(url("rediss", "fleet:fleet-secret"))
        .prefix("forge")
        .tls_root_certificate(ca.cert.pem());
    let stores = RedisStores::connect(config).await.unwrap();
    let sessions = stores.session_store();
    let idle = Duration::from_secs(60);
    sessions.put("s1", b"record", idle).await.unwrap();
    assert_eq!(
        sessions.get("s1", idle).await.unwrap(),
        Some(b"record".to_vec())
    );
    let bus = stores.bus();
    let mut heard = bus.listen("c");
    let mut waited = 0;
    while bus.publish("c", b"hello").await.unwrap() == 0 {
        waited += 1;
        assert!(waited < 200, "the listener never subscribed over TLS");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let message = tokio::time::timeout(Duration::from_secs(2), heard.recv()).await;
    assert_eq!(message.unwrap(), Some(b"hello".to_vec()));

    // The stores' scripts run as that user too: a single-use mark, a task created and read.
    let seen = stores.seen_store();
    let expires = (mcp_server_core::tasks::system_now_ms() / 1000 + 60) as f64;
    assert!(seen.spend("jti-1", expires).await);
    assert!(!seen.spend("jti-1", expires).await, "spent once");
    let tasks = stores.task_store();
    let now = mcp_server_core::tasks::system_now_ms();
    tasks
        .create(TaskRecord {
            id: "t1".into(),
            owner: Some("alice".into()),
            client_support: Default::default(),
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(100),
            outstanding: Default::default(),
            answers: Default::default(),
            used_keys: Default::default(),
            cancel_requested: false,
            terminal: None,
            lease: None,
        })
        .await
        .unwrap();
    let read = tasks.get("t1").await.unwrap().unwrap();
    assert_eq!(read.owner.as_deref(), Some("alice"));

    // The ACL user reaches its prefix only: another prefix is refused by Redis itself.
    let other = RedisConfig::new(url("rediss", "fleet:fleet-secret"))
        .prefix("other")
        .tls_root_certificate(ca.cert.pem());
    let other = RedisStores::connect(other).await.unwrap().session_store();
    let denied = other.put("s1", b"x", idle).await.unwrap_err();
    assert!(denied.0.contains("no permissions"), "{denied}");

    // A wrong password, a CA the server's certificate is not from, plain TCP to the TLS
    // port, and a root certificate given for a URL without TLS.
    let wrong =
        refused(RedisConfig::new(url("rediss", "fleet:wrong")).tls_root_certificate(ca.cert.pem()))
            .await;
    assert!(wrong.contains("Password authentication failed"), "{wrong}");
    let stranger = refused(
        RedisConfig::new(url("rediss", "fleet:fleet-secret"))
            .tls_root_certificate(self::ca().cert.pem()),
    )
    .await;
    assert!(
        stranger.starts_with("cannot connect to Redis: invalid peer certificate"),
        "{stranger}"
    );
    let plain = refused(RedisConfig::new(url("redis", "fleet:fleet-secret"))).await;
    assert!(
        plain.starts_with("cannot connect to Redis")
            || plain.starts_with("Redis did not accept a connection"),
        "{plain}"
    );
    let mixed = refused(
        RedisConfig::new(url("redis", "fleet:fleet-secret")).tls_root_certificate(ca.cert.pem()),
    )
    .await;
    assert_eq!(
        mixed,
        "a TLS root certificate is configured for a URL without TLS: use rediss://"
    );
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
