//! The v3 protobuf protocol end to end: prost-encoded requests over TCP against a real
//! `ringlog serve`, every response decoded with prost (protocol §3, §5).

use crate::support::{body, uring_available, Reply, Server, TestDir, KEY};
use prost::Message;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use wire::client::DecodedResponse;
use wire::code;
use wire::v3::{self, proto, Operation, Status};

const KEY_OTHER: wire::MasterKey = wire::MASTER_KEY_EMPTY_PASSWORD;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A reply in either protocol.
#[derive(Debug)]
enum AnyReply {
    V2(Reply),
    V3(Box<proto::Response>),
}

/// A blocking client that sends v3 (and v2) frames on one connection.
struct V3Client {
    stream: TcpStream,
    received: Vec<u8>,
    txn_id: u64,
}

impl V3Client {
    fn connect(address: SocketAddr) -> V3Client {
        let stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        V3Client {
            stream,
            received: Vec::new(),
            txn_id: 1000,
        }
    }

    /// A request with a fresh txnId for `operation`.
    fn request(&mut self, operation: Operation) -> proto::Request {
        self.txn_id += 1;
        proto::Request {
            header: proto::BkPacketHeader {
                version: v3::PROTOCOL_VERSION_THREE,
                operation: operation as i32,
                txn_id: self.txn_id,
                priority: None,
            },
            ..Default::default()
        }
    }

    fn send(&mut self, request: &proto::Request) {
        let message = request.encode_to_vec();
        let mut frame = u32::try_from(message.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&message);
        self.stream.write_all(&frame).unwrap();
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// The next reply in whichever protocol it came; `None` on timeout or close.
    fn try_recv_any(&mut self) -> Option<AnyReply> {
        loop {
            if let Some((prefix, rest)) = self.received.split_first_chunk::<4>() {
                let length = u32::from_be_bytes(*prefix) as usize;
                if rest.first() == Some(&0x0A) && rest.len() >= length {
                    let response = proto::Response::decode(&rest[..length]).unwrap();
                    self.received.drain(..4 + length);
                    return Some(AnyReply::V3(Box::new(response)));
                }
                if rest.first().is_some_and(|&byte| byte != 0x0A) {
                    let decoded = wire::client::decode_response(&self.received, u32::MAX).unwrap();
                    if let DecodedResponse::Frame {
                        response,
                        frame_size,
                    } = decoded
                    {
                        let reply = crate::support::reply_owned(response);
                        self.received.drain(..frame_size);
                        return Some(AnyReply::V2(reply));
                    }
                }
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                // Never restarted after a signal: EINTR is not the server's answer.
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => return None,
                Ok(count) => self.received.extend_from_slice(&chunk[..count]),
            }
        }
    }

    fn recv(&mut self) -> proto::Response {
        match self.try_recv_any() {
            Some(AnyReply::V3(response)) => *response,
            other => panic!("expected a v3 response, got {other:?}"),
        }
    }

    /// Sends and waits for the reply, checking the header echo.
    fn call(&mut self, request: &proto::Request) -> proto::Response {
        self.send(request);
        let response = self.recv();
        check_header(request, &response);
        response
    }

    fn add_request(
        &mut self,
        ledger: i64,
        entry: i64,
        key: &[u8],
        flag: Option<i32>,
    ) -> proto::Request {
        let mut request = self.request(Operation::AddEntry);
        request.add_request = Some(proto::AddRequest {
            flag,
            ledger_id: ledger,
            entry_id: entry,
            master_key: key.to_vec(),
            body: body(ledger, entry),
            write_flags: None,
        });
        request
    }

    /// An add; returns (top-level status, addResponse status).
    fn add(&mut self, ledger: i64, entry: i64, key: &[u8], flag: Option<i32>) -> i32 {
        let request = self.add_request(ledger, entry, key, flag);
        let response = self.call(&request);
        let add = response.add_response.expect("addResponse");
        assert_eq!((add.ledger_id, add.entry_id), (ledger, entry));
        assert_eq!(add.status, response.status, "status at both levels");
        add.status
    }

    fn read_request(&mut self, ledger: i64, entry: i64) -> proto::Request {
        let mut request = self.request(Operation::ReadEntry);
        request.read_request = Some(proto::ReadRequest {
            ledger_id: ledger,
            entry_id: entry,
            ..Default::default()
        });
        request
    }

    fn read(&mut self, request: &proto::Request) -> proto::ReadResponse {
        let response = self.call(request);
        let read = response.read_response.expect("readResponse");
        assert_eq!(read.status, response.status, "status at both levels");
        read
    }
}

fn check_header(request: &proto::Request, response: &proto::Response) {
    assert_eq!(response.header.version, v3::PROTOCOL_VERSION_THREE);
    assert_eq!(response.header.operation, request.header.operation);
    assert_eq!(response.header.txn_id, request.header.txn_id);
}

fn start(name: &str, shards: usize) -> Option<(TestDir, Server)> {
    if !uring_available() {
        return None;
    }
    let dir = TestDir::new(name);
    let server = Server::start(&dir.0, shards, &[]);
    Some((dir, server))
}

const OK: i32 = Status::Eok as i32;

#[test]
fn v3_add_read_fence_and_recovery() {
    let Some((_dir, server)) = start("v3-add-read", 1) else {
        return;
    };
    let mut client = V3Client::connect(server.address);
    let ledger = 7001;
    // Reads of an unknown ledger.
    let request = client.read_request(ledger, 0);
    assert_eq!(client.read(&request).status, Status::Enoledger as i32);
    for entry in 0..3 {
        assert_eq!(client.add(ledger, entry, &KEY, None), OK);
    }
    for entry in 0..3 {
        let request = client.read_request(ledger, entry);
        let read = client.read(&request);
        assert_eq!((read.status, read.entry_id), (OK, entry));
        assert_eq!(read.body.as_deref(), Some(&body(ledger, entry)[..]));
        // body LAC is entry - 1: the bookie's LAC after entry 2 is 1.
        assert_eq!(read.max_lac, Some(1));
    }
    // Entry -1 is the last entry; -1 is echoed.
    let request = client.read_request(ledger, -1);
    let read = client.read(&request);
    assert_eq!((read.status, read.entry_id), (OK, -1));
    assert_eq!(read.body.as_deref(), Some(&body(ledger, 2)[..]));
    let request = client.read_request(ledger, 9);
    let read = client.read(&request);
    assert_eq!((read.status, read.body), (Status::Enoentry as i32, None));
    // Wrong key on an add: EUA.
    assert_eq!(client.add(ledger, 3, &KEY_OTHER, None), Status::Eua as i32);
    // A fence without a key is EUA; with the key it fences and returns the last entry.
    let mut fence = client.read_request(ledger, -1);
    fence.read_request.as_mut().unwrap().flag = Some(v3::READ_FLAG_FENCE_LEDGER);
    assert_eq!(client.read(&fence).status, Status::Eua as i32);
    fence.read_request.as_mut().unwrap().master_key = Some(KEY.to_vec());
    let read = client.read(&fence);
    assert_eq!((read.status, read.entry_id), (OK, -1));
    assert_eq!(read.body.as_deref(), Some(&body(ledger, 2)[..]));
    assert_eq!(client.add(ledger, 3, &KEY, None), Status::Efenced as i32);
    let recovery = Some(v3::ADD_FLAG_RECOVERY_ADD);
    assert_eq!(client.add(ledger, 3, &KEY, recovery), OK);
    assert_eq!(
        client.add(ledger, 4, &KEY_OTHER, recovery),
        Status::Eua as i32
    );
    let request = client.read_request(ledger, 3);
    assert_eq!(
        client.read(&request).body.as_deref(),
        Some(&body(ledger, 3)[..])
    );
    // A fence of an unknown ledger creates it: the read answers ENOENTRY after the fence.
    let mut fence = client.read_request(ledger + 1, -1);
    let read_request = fence.read_request.as_mut().unwrap();
    read_request.flag = Some(v3::READ_FLAG_FENCE_LEDGER);
    read_request.master_key = Some(KEY.to_vec());
    assert_eq!(client.read(&fence).status, Status::Enoentry as i32);
    assert_eq!(
        client.add(ledger + 1, 0, &KEY, None),
        Status::Efenced as i32
    );
    // A body whose ids differ from the request's is EBADREQ.
    let mut mismatch = client.add_request(ledger + 2, 0, &KEY, None);
    mismatch.add_request.as_mut().unwrap().body = body(ledger + 2, 5);
    let response = client.call(&mismatch);
    assert_eq!(response.status, Status::Ebadreq as i32);
}

#[test]
fn v3_deferred_add_and_force_ledger() {
    let Some((_dir, server)) = start("v3-deferred", 1) else {
        return;
    };
    let mut client = V3Client::connect(server.address);
    let ledger = 7101;
    // FORCE_LEDGER of a ledger with nothing written: EOK at once.
    let mut force = client.request(Operation::ForceLedger);
    force.force_ledger_request = Some(proto::ForceLedgerRequest { ledger_id: ledger });
    let response = client.call(&force);
    assert_eq!(response.status, OK);
    // Deferred adds, pipelined, then a force that covers them.
    let mut requests = Vec::new();
    for entry in 0..5 {
        let mut request = client.add_request(ledger, entry, &KEY, None);
        request.add_request.as_mut().unwrap().write_flags = Some(v3::WRITE_FLAG_DEFERRED_SYNC);
        client.send(&request);
        requests.push(request);
    }
    for request in &requests {
        let response = client.recv();
        check_header(request, &response);
        let add = response.add_response.unwrap();
        assert_eq!(add.status, OK);
    }
    let mut force = client.request(Operation::ForceLedger);
    force.force_ledger_request = Some(proto::ForceLedgerRequest { ledger_id: ledger });
    let response = client.call(&force);
    assert_eq!(response.status, OK);
    let forced = response.force_ledger_response.unwrap();
    assert_eq!((forced.status, forced.ledger_id), (OK, ledger));
    // After the force every entry is durable, hence readable.
    for entry in 0..5 {
        let request = client.read_request(ledger, entry);
        assert_eq!(
            client.read(&request).body.as_deref(),
            Some(&body(ledger, entry)[..])
        );
    }
    // The deferred entries survive a restart after the force.
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0));
}

#[test]
fn v3_write_lac_and_read_lac() {
    let Some((_dir, server)) = start("v3-lac", 1) else {
        return;
    };
    let mut client = V3Client::connect(server.address);
    let ledger = 7201;
    let mut read_lac = client.request(Operation::ReadLac);
    read_lac.read_lac_request = Some(proto::ReadLacRequest { ledger_id: ledger });
    assert_eq!(client.call(&read_lac).status, Status::Enoledger as i32);
    // WRITE_LAC on an unknown ledger creates it; READ_LAC then has the LAC body only.
    let lac_body = [ledger.to_be_bytes(), 5i64.to_be_bytes()].concat();
    let mut write = client.request(Operation::WriteLac);
    write.write_lac_request = Some(proto::WriteLacRequest {
        ledger_id: ledger,
        lac: 5,
        master_key: KEY.to_vec(),
        body: lac_body.clone(),
    });
    let response = client.call(&write);
    assert_eq!(response.status, OK);
    assert_eq!(response.write_lac_response.unwrap().ledger_id, ledger);
    read_lac.header.txn_id += 100;
    let response = client.call(&read_lac);
    assert_eq!(response.status, OK);
    let lac = response.read_lac_response.unwrap();
    assert_eq!(lac.lac_body.as_deref(), Some(&lac_body[..]));
    assert_eq!(lac.last_entry_body, None);
    // With entries, lastEntryBody is entry -1's body.
    for entry in 0..2 {
        assert_eq!(client.add(ledger, entry, &KEY, None), OK);
    }
    read_lac.header.txn_id += 1;
    let lac = client.call(&read_lac).read_lac_response.unwrap();
    assert_eq!(lac.status, OK);
    assert_eq!(lac.lac_body.as_deref(), Some(&lac_body[..]));
    assert_eq!(lac.last_entry_body.as_deref(), Some(&body(ledger, 1)[..]));
    // A ledger with neither: ENOENTRY (a fence creates it empty).
    let mut fence = client.read_request(ledger + 1, -1);
    let read_request = fence.read_request.as_mut().unwrap();
    read_request.flag = Some(v3::READ_FLAG_FENCE_LEDGER);
    read_request.master_key = Some(KEY.to_vec());
    client.read(&fence);
    let mut read_lac = client.request(Operation::ReadLac);
    read_lac.read_lac_request = Some(proto::ReadLacRequest {
        ledger_id: ledger + 1,
    });
    assert_eq!(client.call(&read_lac).status, Status::Enoentry as i32);
    // Wrong key: EUA.
    write.header.txn_id += 100;
    write.write_lac_request.as_mut().unwrap().master_key = KEY_OTHER.to_vec();
    assert_eq!(client.call(&write).status, Status::Eua as i32);
}

#[test]
fn v3_long_poll_and_piggyback() {
    let Some((_dir, server)) = start("v3-long-poll", 1) else {
        return;
    };
    let mut client = V3Client::connect(server.address);
    let mut writer = V3Client::connect(server.address);
    let ledger = 7301;
    for entry in 0..3 {
        assert_eq!(writer.add(ledger, entry, &KEY, None), OK);
    }
    // LAC is 1 (entry 2's body says 1). A long poll on previousLAC 1 times out, then is
    // served as a normal read.
    let mut poll = client.read_request(ledger, -1);
    let read_request = poll.read_request.as_mut().unwrap();
    read_request.previous_lac = Some(1);
    read_request.time_out = Some(300);
    let started = Instant::now();
    let read = client.read(&poll);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(290),
        "answered after {waited:?}"
    );
    // Woken for its deadline, not on the next 100 ms tick.
    assert!(
        waited < Duration::from_millis(390),
        "answered after {waited:?}"
    );
    assert_eq!((read.status, read.max_lac), (OK, Some(1)));
    // Woken by an add that moves the LAC: parked first, then answered well before the timeout.
    poll.header.txn_id += 100;
    poll.read_request.as_mut().unwrap().time_out = Some(10_000);
    client.send(&poll);
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    assert_eq!(writer.add(ledger, 3, &KEY, None), OK);
    let response = client.recv();
    check_header(&poll, &response);
    assert!(started.elapsed() < Duration::from_secs(5));
    let read = response.read_response.unwrap();
    assert_eq!((read.status, read.max_lac), (OK, Some(2)));
    assert_eq!(read.body.as_deref(), Some(&body(ledger, 3)[..]));
    // A long poll whose LAC already passed is answered at once; unknown ledger: ENOLEDGER.
    poll.header.txn_id += 1;
    poll.read_request.as_mut().unwrap().previous_lac = Some(0);
    assert_eq!(client.read(&poll).status, OK);
    let mut unknown = poll.clone();
    unknown.header.txn_id += 1;
    unknown.read_request.as_mut().unwrap().ledger_id = ledger + 50;
    assert_eq!(client.read(&unknown).status, Status::Enoledger as i32);
    // Piggyback (LAC is 2): previousLAC 0 reads entry 1 with its body and timestamp.
    let mut piggyback = client.read_request(ledger, -1);
    let read_request = piggyback.read_request.as_mut().unwrap();
    read_request.flag = Some(v3::READ_FLAG_ENTRY_PIGGYBACK);
    read_request.previous_lac = Some(0);
    let read = client.read(&piggyback);
    assert_eq!((read.status, read.entry_id, read.max_lac), (OK, 1, Some(2)));
    assert_eq!(read.body.as_deref(), Some(&body(ledger, 1)[..]));
    assert!(read.lac_update_timestamp.is_some());
    // previousLAC == LAC: EOK with only maxLAC.
    piggyback.header.txn_id += 1;
    piggyback.read_request.as_mut().unwrap().previous_lac = Some(2);
    let read = client.read(&piggyback);
    assert_eq!((read.status, read.max_lac, read.body), (OK, Some(2), None));
    // Piggyback + long poll, woken by a fence (counts as LAC = MAX): EOK, only maxLAC.
    piggyback.header.txn_id += 1;
    piggyback.read_request.as_mut().unwrap().time_out = Some(10_000);
    client.send(&piggyback);
    std::thread::sleep(Duration::from_millis(200));
    let mut fence = writer.read_request(ledger, -1);
    let read_request = fence.read_request.as_mut().unwrap();
    read_request.flag = Some(v3::READ_FLAG_FENCE_LEDGER);
    read_request.master_key = Some(KEY.to_vec());
    assert_eq!(writer.read(&fence).status, OK);
    let response = client.recv();
    check_header(&piggyback, &response);
    assert_eq!(response.read_response.unwrap().max_lac, Some(2));
    // Piggyback needs entry -1 and previousLAC.
    piggyback.header.txn_id += 1;
    let read_request = piggyback.read_request.as_mut().unwrap();
    read_request.entry_id = 0;
    read_request.time_out = None;
    let response = client.call(&piggyback);
    assert_eq!(response.status, Status::Ebadreq as i32);
}

#[test]
fn v3_bookie_info_list_auth_and_errors() {
    let Some((_dir, server)) = start("v3-misc", 1) else {
        return;
    };
    let mut client = V3Client::connect(server.address);
    let ledger = 7401;
    // GET_BOOKIE_INFO: each requested field, in bytes.
    for (requested, total, free) in [(1, true, false), (2, false, true), (3, true, true)] {
        let mut info = client.request(Operation::GetBookieInfo);
        info.get_bookie_info_request = Some(proto::GetBookieInfoRequest {
            requested: Some(requested),
        });
        let response = client.call(&info);
        assert_eq!(response.status, OK);
        let info = response.get_bookie_info_response.unwrap();
        assert_eq!(info.total_disk_capacity.is_some(), total);
        assert_eq!(info.free_disk_space.is_some(), free);
        if let (Some(total), Some(free)) = (info.total_disk_capacity, info.free_disk_space) {
            assert!(total > 0 && free <= total, "total {total} free {free}");
        }
    }
    // GET_LIST_OF_ENTRIES_OF_LEDGER: unknown ledger, then entries 0, 1, 2, 5.
    let mut list = client.request(Operation::GetListOfEntriesOfLedger);
    list.get_list_of_entries_of_ledger_request =
        Some(proto::GetListOfEntriesOfLedgerRequest { ledger_id: ledger });
    assert_eq!(client.call(&list).status, Status::Enoledger as i32);
    for entry in [0, 1, 2, 5] {
        assert_eq!(client.add(ledger, entry, &KEY, None), OK);
    }
    list.header.txn_id += 100;
    let response = client
        .call(&list)
        .get_list_of_entries_of_ledger_response
        .unwrap();
    assert_eq!((response.status, response.ledger_id), (OK, ledger));
    let expected = v3::availability_of_entries([0, 1, 2, 5].into_iter());
    assert_eq!(response.availability_of_entries_of_ledger, Some(expected));
    // AUTH: AuthDisabledPlugin with an empty payload.
    let mut auth = client.request(Operation::Auth);
    auth.auth_request = Some(proto::AuthMessage {
        auth_plugin_name: "SASL".into(),
        payload: vec![1, 2],
    });
    let response = client.call(&auth);
    assert_eq!(response.status, OK);
    let message = response.auth_response.unwrap();
    assert_eq!(message.auth_plugin_name, wire::AUTH_DISABLED_PLUGIN_NAME);
    assert!(message.payload.is_empty());
    // START_TLS without TLS configured, unsupported operations and a missing sub-request:
    // EBADREQ with no sub-response.
    let tls = client.request(Operation::StartTls);
    assert_eq!(client.call(&tls).status, Status::Ebadreq as i32);
    for operation in [
        Operation::RangeReadEntry,
        Operation::BatchReadEntry,
        Operation::AddEntry,
    ] {
        let request = client.request(operation);
        let response = client.call(&request);
        assert_eq!(response.status, Status::Ebadreq as i32);
        assert!(response.add_response.is_none() && response.read_response.is_none());
    }
    // Version 2 in a v3 header: EBADVERSION, and nothing is stored.
    let mut old = client.add_request(ledger + 1, 0, &KEY, None);
    old.header.version = proto::ProtocolVersion::VersionTwo as i32;
    let response = client.call(&old);
    assert_eq!(response.status, Status::Ebadversion as i32);
    let request = client.read_request(ledger + 1, 0);
    assert_eq!(client.read(&request).status, Status::Enoledger as i32);
    // Unknown fields (here a varint field 90 after the sub-request) are skipped.
    let add = client.add_request(ledger, 6, &KEY, None);
    let mut message = add.encode_to_vec();
    message.extend_from_slice(&[0xD0, 0x05, 0x2A]);
    let mut frame = u32::try_from(message.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&message);
    client.send_raw(&frame);
    let response = client.recv();
    check_header(&add, &response);
    assert_eq!(response.status, OK);
    // A malformed v3 frame closes the connection, as a failed parse does in Java.
    client.send_raw(&[0, 0, 0, 3, 0x0A, 0x05, 0x08]);
    assert!(client.try_recv_any().is_none());
    // So does a v3 frame over the frame limit, on its length prefix alone.
    let mut client = V3Client::connect(server.address);
    client.send_raw(&[0x7F, 0xFF, 0xFF, 0xFF, 0x0A]);
    assert!(client.try_recv_any().is_none());
}

#[test]
fn v3_and_v2_frames_mix_on_one_connection() {
    let Some((_dir, server)) = start("v3-mixed", 1) else {
        return;
    };
    let mut client = V3Client::connect(server.address);
    let ledger = 7501;
    // Pipelined: v2 add, v3 add, v2 read, v3 read; each answered in its own protocol.
    let mut frame = Vec::new();
    wire::client::encode_add_request(&mut frame, 0, &KEY, &body(ledger, 0));
    client.send_raw(&frame);
    let add = client.add_request(ledger, 1, &KEY, None);
    client.send(&add);
    let mut frame = Vec::new();
    wire::client::encode_read_request(&mut frame, 0, ledger, 1, None);
    let read = client.read_request(ledger, 0);
    let mut replies = Vec::new();
    for _ in 0..2 {
        replies.push(client.try_recv_any().unwrap());
    }
    client.send_raw(&frame);
    client.send(&read);
    for _ in 0..2 {
        replies.push(client.try_recv_any().unwrap());
    }
    let mut v2_add = false;
    let mut v3_add = false;
    let mut v2_read = false;
    let mut v3_read = false;
    for reply in replies {
        match reply {
            AnyReply::V2(Reply::Add {
                code: status,
                entry: 0,
                ..
            }) => {
                assert_eq!(status, code::EOK);
                v2_add = true;
            }
            AnyReply::V2(Reply::Read {
                code: status,
                body: read,
                ..
            }) => {
                assert_eq!((status, read), (code::EOK, body(ledger, 1)));
                v2_read = true;
            }
            AnyReply::V3(response) if response.add_response.is_some() => {
                check_header(&add, &response);
                assert_eq!(response.status, OK);
                v3_add = true;
            }
            AnyReply::V3(response) => {
                check_header(&read, &response);
                let read = response.read_response.unwrap();
                assert_eq!(read.body.as_deref(), Some(&body(ledger, 0)[..]));
                v3_read = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(v2_add && v3_add && v2_read && v3_read);
}

#[test]
fn v3_requests_for_other_shards_ledgers() {
    let Some((_dir, server)) = start("v3-cross-shard", 2) else {
        return;
    };
    let mut clients: Vec<V3Client> = (0..8).map(|_| V3Client::connect(server.address)).collect();
    let ledger = 7601;
    assert_eq!(clients[0].add(ledger, 0, &KEY, None), OK);
    for (entry, client) in (1..).zip(clients.iter_mut()) {
        let mut request = client.add_request(ledger, entry, &KEY, None);
        if entry % 2 == 0 {
            request.add_request.as_mut().unwrap().write_flags = Some(v3::WRITE_FLAG_DEFERRED_SYNC);
        }
        assert_eq!(client.call(&request).status, OK);
        let mut force = client.request(Operation::ForceLedger);
        force.force_ledger_request = Some(proto::ForceLedgerRequest { ledger_id: ledger });
        assert_eq!(client.call(&force).status, OK);
    }
    for client in &mut clients {
        for entry in 0..=8 {
            let request = client.read_request(ledger, entry);
            let read = client.read(&request);
            assert_eq!(read.body.as_deref(), Some(&body(ledger, entry)[..]));
        }
        let mut read_lac = client.request(Operation::ReadLac);
        read_lac.read_lac_request = Some(proto::ReadLacRequest { ledger_id: ledger });
        let lac = client.call(&read_lac).read_lac_response.unwrap();
        assert_eq!(lac.last_entry_body.as_deref(), Some(&body(ledger, 8)[..]));
    }
    // Long polls from every connection park on the owner shard (forwarded ones on behalf of
    // their origin) and all wake on one add that moves the LAC from 7 to 8.
    let mut polls = Vec::new();
    for client in &mut clients {
        let mut poll = client.read_request(ledger, -1);
        let read_request = poll.read_request.as_mut().unwrap();
        read_request.previous_lac = Some(7);
        read_request.time_out = Some(10_000);
        client.send(&poll);
        polls.push(poll);
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut writer = V3Client::connect(server.address);
    let started = Instant::now();
    assert_eq!(writer.add(ledger, 9, &KEY, None), OK);
    for (client, poll) in clients.iter_mut().zip(&polls) {
        let response = client.recv();
        check_header(poll, &response);
        let read = response.read_response.unwrap();
        assert_eq!((read.status, read.max_lac), (OK, Some(8)));
        assert_eq!(read.body.as_deref(), Some(&body(ledger, 9)[..]));
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut fence = clients[7].read_request(ledger, -1);
    let read_request = fence.read_request.as_mut().unwrap();
    read_request.flag = Some(v3::READ_FLAG_FENCE_LEDGER);
    read_request.master_key = Some(KEY.to_vec());
    assert_eq!(clients[7].read(&fence).status, OK);
    for client in &mut clients {
        assert_eq!(client.add(ledger, 10, &KEY, None), Status::Efenced as i32);
    }
    drop(clients);
    drop(writer);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0));
    assert!(
        exited.summary_total("forwarded") > 0,
        "{:?}",
        exited.summaries()
    );
}
