//! `AuthMessage { authPluginName, payload }`, the protobuf an AUTH request and its response
//! carry in either protocol. Auth is disabled: a bookie answers with the plugin name below.

use crate::v3::to_u64;
use prost::encoding::encode_varint;

/// `AuthProviderFactoryFactory.AUTHENTICATION_DISABLED_PLUGIN_NAME`.
pub const AUTH_DISABLED_PLUGIN_NAME: &str = "AuthDisabledPlugin";

/// `AuthMessage` field tags: 1 `authPluginName` and 2 `payload`, both wire type 2.
const PROTOBUF_TAG_AUTH_PLUGIN_NAME: u8 = 0x0A;
const PROTOBUF_TAG_AUTH_PAYLOAD: u8 = 0x12;

/// Appends `AuthMessage{ authPluginName, payload }` in protobuf encoding.
pub(crate) fn encode_auth_message(out: &mut Vec<u8>, plugin_name: &str, payload: &[u8]) {
    out.push(PROTOBUF_TAG_AUTH_PLUGIN_NAME);
    encode_varint(to_u64(plugin_name.len()), out);
    out.extend_from_slice(plugin_name.as_bytes());
    out.push(PROTOBUF_TAG_AUTH_PAYLOAD);
    encode_varint(to_u64(payload.len()), out);
    out.extend_from_slice(payload);
}
