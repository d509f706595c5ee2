//! Reading one entry from another bookie for a repair (docs/scrub.md, "Repair"): a fresh
//! connection, one v2 READ_ENTRY, its answer. In plaintext, or, with `PeerTls::On`, inside
//! TLS asked for as the Java client does: a v3 START_TLS answered in plaintext, the
//! handshake, then the v2 frames inside TLS. A peer that answers START_TLS with an error has
//! no TLS: the read goes on in plaintext on the same connection, unless this bookie has
//! --tls-required, whose data then never leaves in plaintext for a repair either.
//! rustls is driven by hand over the tokio socket: no second TLS stack for one read.

use crate::limits::REPAIR_PEER_READ_SIZE;
use crate::tls::PeerTls;
use rustls::pki_types::ServerName;
use rustls::ClientConnection;
use std::io::{Read, Write};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads `(ledger, entry)` from `peer` (`host:port`): the entry's body (module doc).
pub(super) async fn entry_read(
    peer: &str,
    tls: &PeerTls,
    ledger: i64,
    entry: i64,
) -> Result<Vec<u8>, String> {
    let mut stream = TcpStream::connect(peer)
        .await
        .map_err(|error| format!("connect: {error}"))?;
    let mut session = match tls {
        PeerTls::Off => None,
        PeerTls::On { config, required } => {
            tls_start(&mut stream, peer, Arc::clone(config), *required).await?
        }
    };
    let mut request = Vec::new();
    wire::client::encode_read_request(&mut request, 0, ledger, entry, None);
    match session.as_mut() {
        Some(session) => {
            // An unbounded writer takes everything; the bytes leave in `flush`.
            let _ = session.writer().write_all(&request);
            flush(session, &mut stream).await?;
        }
        None => stream
            .write_all(&request)
            .await
            .map_err(|error| format!("send: {error}"))?,
    }
    let mut received = Vec::new();
    let mut chunk = vec![0u8; REPAIR_PEER_READ_SIZE];
    loop {
        let decoded = wire::client::decode_response(&received, wire::FRAME_SIZE_MAX_DEFAULT)
            .map_err(|error| format!("answer: {error}"))?;
        if let wire::client::DecodedResponse::Frame { response, .. } = decoded {
            return match response {
                wire::client::Response::Read { code, body, .. } if code == wire::code::EOK => {
                    Ok(body.to_vec())
                }
                wire::client::Response::Read { code, .. } => Err(format!("answered rc {code}")),
                _ => Err("answered another request".to_owned()),
            };
        }
        let count = stream
            .read(&mut chunk)
            .await
            .map_err(|error| format!("receive: {error}"))?;
        if count == 0 {
            return Err("closed the connection".to_owned());
        }
        match session.as_mut() {
            Some(session) => records_open(session, &chunk[..count], &mut received)?,
            None => received.extend_from_slice(&chunk[..count]),
        }
    }
}

/// START_TLS and the handshake; `None` when the peer has no TLS and this bookie lets the
/// read go on in plaintext.
async fn tls_start(
    stream: &mut TcpStream,
    peer: &str,
    config: Arc<rustls::ClientConfig>,
    required: bool,
) -> Result<Option<ClientConnection>, String> {
    let mut frame = Vec::new();
    wire::client::v3::encode_start_tls_request(&mut frame, 1);
    stream
        .write_all(&frame)
        .await
        .map_err(|error| format!("START_TLS: {error}"))?;
    let mut prefix = [0u8; 4];
    stream
        .read_exact(&mut prefix)
        .await
        .map_err(|error| format!("START_TLS answer: {error}"))?;
    let length = u32::from_be_bytes(prefix) as usize;
    if length > REPAIR_PEER_READ_SIZE {
        return Err(format!("START_TLS answer of {length} bytes"));
    }
    let mut message = vec![0u8; length];
    stream
        .read_exact(&mut message)
        .await
        .map_err(|error| format!("START_TLS answer: {error}"))?;
    let status = wire::client::v3::decode_start_tls_response(&message)
        .ok_or("the answer to START_TLS is not a START_TLS response")?;
    if status != wire::v3::Status::Eok as i32 {
        return if required {
            Err(format!(
                "no TLS there (START_TLS answered status {status}), and --tls-required keeps \
                 this bookie's repairs off plaintext"
            ))
        } else {
            Ok(None)
        };
    }
    let host = peer.rsplit_once(':').map_or(peer, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_owned())
        .map_err(|error| format!("server name {host}: {error}"))?;
    let mut session =
        ClientConnection::new(config, name).map_err(|error| format!("tls: {error}"))?;
    session.set_buffer_limit(None);
    let mut chunk = vec![0u8; REPAIR_PEER_READ_SIZE];
    let mut early = Vec::new();
    while session.is_handshaking() {
        flush(&mut session, stream).await?;
        if !session.is_handshaking() {
            break;
        }
        let count = stream
            .read(&mut chunk)
            .await
            .map_err(|error| format!("tls handshake: {error}"))?;
        if count == 0 {
            return Err("closed the connection during the TLS handshake".to_owned());
        }
        records_open(&mut session, &chunk[..count], &mut early)?;
    }
    flush(&mut session, stream).await?;
    if !early.is_empty() {
        return Err("data before the request".to_owned());
    }
    Ok(Some(session))
}

/// Sends what the session has queued (handshake messages, sealed records).
async fn flush(session: &mut ClientConnection, stream: &mut TcpStream) -> Result<(), String> {
    let mut out = Vec::new();
    while session.wants_write() {
        // Writing into a Vec does not fail.
        let _ = session.write_tls(&mut out);
    }
    if out.is_empty() {
        return Ok(());
    }
    stream
        .write_all(&out)
        .await
        .map_err(|error| format!("send: {error}"))
}

/// Feeds received ciphertext to the session and appends the plaintext to `plain`.
fn records_open(
    session: &mut ClientConnection,
    mut ciphertext: &[u8],
    plain: &mut Vec<u8>,
) -> Result<(), String> {
    while !ciphertext.is_empty() {
        session
            .read_tls(&mut ciphertext)
            .map_err(|error| format!("tls: {error}"))?;
        let state = session
            .process_new_packets()
            .map_err(|error| format!("tls: {error}"))?;
        let pending = state.plaintext_bytes_to_read();
        if pending > 0 {
            let start = plain.len();
            plain.resize(start + pending, 0);
            session
                .reader()
                .read_exact(&mut plain[start..])
                .map_err(|error| format!("tls: {error}"))?;
        }
        if state.peer_has_closed() && !ciphertext.is_empty() {
            return Err("data after close_notify".to_owned());
        }
    }
    Ok(())
}
