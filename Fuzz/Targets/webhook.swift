// The webhook verifier (Standard Webhooks, as Replicate signs): a delivery's headers and body
// from anyone who can reach the port. Input lines: webhook-id, webhook-timestamp,
// webhook-signature, then the body. Compiled from the server's own source file, as it is, with
// a local HMAC-SHA256 for libcrypto's (Fuzz/Shims/HMACSHA256.swift, checked here against the
// specification's example first).
// fuzz-sources: Sources/FlowdirIO/Backends/JobAPI/WebhookSignature.swift Fuzz/Shims/HMACSHA256.swift
// fuzz-dict: webhook

let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
let now = 1_614_265_330.0

/// The Standard Webhooks specification's example (WebhookSignatureTests) signs the same with the shim.
let shimAgreesWithTheSpecification: Bool = {
    let h = WebhookSignature.sign(body: Array(#"{"test": 2432232314}"#.utf8), id: "msg_p5jXN8AQM9LWM0D4loKWxJek", now: now, secret: secret)
    return h.signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    require(shimAgreesWithTheSpecification, "the HMAC shim does not sign the specification's example as it does")
    let fields = fuzzFields(fuzzBytes(data, size), count: 4)
    let id = String(decoding: fields[0], as: UTF8.self)
    let timestamp = String(decoding: fields[1], as: UTF8.self)
    let signature = String(decoding: fields[2], as: UTF8.self)
    let body = fields[3]
    _ = WebhookSignature.verify(body: body, id: id, timestamp: timestamp, signature: signature, secret: secret, now: now)
    _ = WebhookSignature.verify(body: body, id: id, timestamp: timestamp, signature: signature, secret: id, now: now)
    // What flowdir signs (its job server's deliveries, with ids it makes: printable, bounded),
    // it believes: alone, and first among others (a secret being rotated) while the header's
    // length stays within the verifier's bound.
    let validID = !id.isEmpty && id.utf8.count <= WebhookSignature.longestID
        && id.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F }
    guard validID else { return 0 }
    let h = WebhookSignature.sign(body: body, id: id, now: now, secret: secret)
    let alone = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: h.signature, secret: secret, now: now)
    require((try? alone.get()) != nil, "a delivery flowdir signed is refused")
    let both = h.signature + " " + signature
    if both.utf8.count <= WebhookSignature.longestSignatureHeader {
        let ok = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: both, secret: secret, now: now)
        require((try? ok.get()) != nil, "a delivery flowdir signed is refused beside another signature")
    }
    return 0
}
