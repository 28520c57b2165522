//! The authentication plugins' answers to the server's scramble.

use sha1::Sha1;
use sha2::{Digest, Sha256};

pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";
pub const CLEAR_PASSWORD: &str = "mysql_clear_password";
/// MariaDB's ed25519 plugin, as the client side is named.
pub const ED25519: &str = "client_ed25519";
/// The length of the ed25519 plugin's nonce.
pub const ED25519_NONCE: usize = 32;

/// The plugins this client answers; any other is refused by name.
pub const SUPPORTED: [&str; 4] = [NATIVE_PASSWORD, CACHING_SHA2, CLEAR_PASSWORD, ED25519];

/// What a plugin sends first for `password` and the server's 20-byte `scramble`.
pub fn first_response(plugin: &str, password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() && plugin != CLEAR_PASSWORD {
        return Vec::new();
    }
    match plugin {
        NATIVE_PASSWORD => native_password(password.as_bytes(), scramble),
        CACHING_SHA2 => caching_sha2(password.as_bytes(), scramble),
        ED25519 => ed25519(password.as_bytes(), scramble),
        _ => clear_password(password),
    }
}

/// The password itself, NUL-terminated: only ever sent over a Unix socket.
pub fn clear_password(password: &str) -> Vec<u8> {
    let mut bytes = password.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))).
fn native_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut hasher = Sha1::new();
    hasher.update(&scramble[..scramble.len().min(20)]);
    hasher.update(stage2);
    let mask = hasher.finalize();
    stage1.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
}

/// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble).
fn caching_sha2(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    let stage1 = Sha256::digest(password);
    let stage2 = Sha256::digest(stage1);
    let mut hasher = Sha256::new();
    hasher.update(stage2);
    hasher.update(&scramble[..scramble.len().min(20)]);
    let mask = hasher.finalize();
    stage1.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
}

/// MariaDB's ed25519: the nonce signed with Ed25519, the secret key expanded from
/// SHA512(password) (where standard Ed25519 expands a 32-byte seed); the server keeps the public
/// key. Only the signature is sent.
fn ed25519(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    use ed25519_dalek::hazmat::{raw_sign, ExpandedSecretKey};
    let expanded: [u8; 64] = sha2::Sha512::digest(password).into();
    let secret = ExpandedSecretKey::from_bytes(&expanded);
    let public = ed25519_dalek::VerifyingKey::from(&secret);
    raw_sign::<sha2::Sha512>(&secret, nonce, &public)
        .to_bytes()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The server keeps SHA1(SHA1(password)) (`PASSWORD('secret')` without its '*'); it checks
    /// the answer by unmasking it with SHA1(scramble + that) and hashing the result once more.
    #[test]
    fn native_password_answer_unmasks_to_the_stored_hash() {
        let scramble = b"abcdefghijklmnopqrst";
        let answer = native_password(b"secret", scramble);
        let stored = Sha1::digest(Sha1::digest(b"secret"));
        assert_eq!(
            hex(&stored).to_uppercase(),
            "14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
        );
        let mut hasher = Sha1::new();
        hasher.update(scramble);
        hasher.update(stored);
        let mask = hasher.finalize();
        let stage1: Vec<u8> = answer.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
        assert_eq!(Sha1::digest(&stage1).as_slice(), stored.as_slice());
    }

    /// The signature verifies under the public key MariaDB stores for the password
    /// (`SELECT ed25519_password('secret')` is its base64).
    #[test]
    fn ed25519_signs_the_nonce_with_the_password_key() {
        use ed25519_dalek::hazmat::ExpandedSecretKey;
        let nonce = [9u8; ED25519_NONCE];
        let signature = ed25519(b"secret", &nonce);
        assert_eq!(signature.len(), 64);
        let expanded: [u8; 64] = sha2::Sha512::digest(b"secret").into();
        let public = ed25519_dalek::VerifyingKey::from(&ExpandedSecretKey::from_bytes(&expanded));
        let signature = ed25519_dalek::Signature::from_slice(&signature).unwrap();
        assert!(public.verify_strict(&nonce, &signature).is_ok());
        assert!(public.verify_strict(&[8u8; 32], &signature).is_err());
    }

    #[test]
    fn an_empty_password_sends_nothing_but_in_clear() {
        assert!(first_response(NATIVE_PASSWORD, "", b"x").is_empty());
        assert!(first_response(CACHING_SHA2, "", b"x").is_empty());
        assert_eq!(first_response(CLEAR_PASSWORD, "", b"x"), vec![0]);
        assert_eq!(first_response(CACHING_SHA2, "pw", &[7; 20]).len(), 32);
    }
}
