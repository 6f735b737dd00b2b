//! TLS for the HTTP client, paid for only when used: the platform's root certificates
//! (on Linux one file per CA, about 150 of them) are read at the first certificate check
//! of the process — the first `https://` handshake — and then kept. A plain-`http://`
//! model on loopback (Ollama, llama.cpp, LM Studio, vLLM) never loads them.
//!
//! reqwest would otherwise build its verifier (and read every root) inside
//! `ClientBuilder::build`, whatever the URL. Here the client gets a preconfigured rustls
//! config whose verifier is [`LazyVerifier`]: the same checks as reqwest's default
//! (`rustls-platform-verifier`: the system roots, `SSL_CERT_FILE`/`SSL_CERT_DIR`, WebPKI
//! path validation), built on first use.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The process's roots: loaded at most once, at the first `https://` handshake.
static ROOTS: LazyLock<Arc<LazyRoots>> = LazyLock::new(|| Arc::new(LazyRoots::default()));

/// The platform verifier, built (roots read) at the first certificate check.
#[derive(Debug, Default)]
pub(crate) struct LazyRoots {
    /// The verifier, or why the roots could not be loaded (kept: one attempt per
    /// process, the error repeated on every handshake).
    verifier: OnceLock<Result<Arc<rustls_platform_verifier::Verifier>, rustls::Error>>,
    /// How many times the roots were read: 0 until the first `https://` handshake, then 1.
    loads: AtomicUsize,
}

impl LazyRoots {
    /// The process-wide roots.
    pub(crate) fn process() -> Arc<LazyRoots> {
        Arc::clone(&ROOTS)
    }

    /// How many times the roots were read.
    #[cfg(test)]
    pub(crate) fn loads(&self) -> usize {
        self.loads.load(Ordering::Relaxed)
    }

    fn verifier(
        &self,
        provider: &Arc<CryptoProvider>,
    ) -> Result<&Arc<rustls_platform_verifier::Verifier>, rustls::Error> {
        self.verifier
            .get_or_init(|| {
                self.loads.fetch_add(1, Ordering::Relaxed);
                rustls_platform_verifier::Verifier::new(Arc::clone(provider)).map(Arc::new)
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A certificate verifier that reads the roots when a certificate first needs checking.
#[derive(Debug)]
pub(crate) struct LazyVerifier {
    roots: Arc<LazyRoots>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.roots.verifier(&self.provider)?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    // The handshake signatures need no roots: checked with the provider's algorithms,
    // exactly as the platform verifier does.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A rustls client config (TLS 1.2 and 1.3 on ring, HTTP/1.1 by ALPN, as reqwest would
/// set it) whose roots come from `roots` on first use.
pub(crate) fn client_config(roots: Arc<LazyRoots>) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyVerifier { roots, provider }))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::time::Duration;

    use super::*;

    /// A loopback server answering one plain-HTTP request with `ok`.
    fn plain_http_server() -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                let read = stream.read(&mut buffer).unwrap();
                assert!(read > 0, "the client closed early");
                request.extend_from_slice(&buffer[..read]);
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .unwrap();
        });
        address
    }

    #[test]
    fn plain_http_never_loads_roots_and_https_loads_them_once() {
        let roots = Arc::new(LazyRoots::default());
        let client =
            crate::transport::client_with(Duration::from_secs(5), Arc::clone(&roots)).unwrap();
        let address = plain_http_server();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let body = runtime.block_on(async {
            let response = client
                .get(format!("http://{address}/v1/models"))
                .send()
                .await
                .unwrap();
            response.text().await.unwrap()
        });
        assert_eq!(body, "ok");
        assert_eq!(roots.loads(), 0, "a plain-http request read the TLS roots");
        assert!(roots.verifier.get().is_none());

        // The first certificate check (what an `https://` handshake does) reads them;
        // later ones reuse them. The certificate is garbage, so both checks fail.
        let verifier = LazyVerifier {
            roots: Arc::clone(&roots),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        };
        let name = ServerName::try_from("example.com").unwrap();
        for _ in 0..2 {
            let checked = verifier.verify_server_cert(
                &CertificateDer::from(vec![0x30, 0x00]),
                &[],
                &name,
                &[],
                UnixTime::now(),
            );
            assert!(checked.is_err());
        }
        assert_eq!(roots.loads(), 1);
    }

    #[test]
    fn offers_the_providers_signature_schemes_without_loading_roots() {
        let roots = Arc::new(LazyRoots::default());
        let config = client_config(Arc::clone(&roots)).unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        let verifier = LazyVerifier {
            roots: Arc::clone(&roots),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        };
        assert!(
            verifier
                .supported_verify_schemes()
                .contains(&SignatureScheme::ECDSA_NISTP256_SHA256)
        );
        assert_eq!(roots.loads(), 0);
    }
}
