import FlowdirServer
import Testing

@Suite struct WebhookSignatureTests {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    let body = Array(#"{"id":"p1","status":"succeeded"}"#.utf8)

    @Test func aSignedBodyIsBelievedWithinFiveMinutes() {
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        #expect(h.signature.hasPrefix("v1,"))
        let ok = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: h.signature, secret: secret, now: 1_800_000_250)
        #expect((try? ok.get()) != nil)
        // Several signatures, one of them right (a secret being rotated).
        let both = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: "v1,AAAA " + h.signature,
                                           secret: secret, now: 1_800_000_000)
        #expect((try? both.get()) != nil)
    }

    /// The Standard Webhooks specification's own example, as Replicate signs.
    @Test func theSpecificationsExampleSignsTheSame() {
        let h = WebhookSignature.sign(body: Array(#"{"test": 2432232314}"#.utf8), id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
                                      now: 1_614_265_330, secret: secret)
        #expect(h.signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func anythingElseIsNot() {
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        func check(_ b: [UInt8] = Array(#"{"id":"p1","status":"succeeded"}"#.utf8), id: String? = "msg_1", timestamp: String? = "1800000000",
                   signature: String? = nil, secret s: String? = nil, now: Double = 1_800_000_000) -> WebhookSignature.Rejection? {
            if case .failure(let r) = WebhookSignature.verify(body: b, id: id, timestamp: timestamp, signature: signature ?? h.signature,
                                                              secret: s ?? secret, now: now) { return r }
            return nil
        }
        #expect(check() == nil)
        #expect(check(Array(#"{"id":"p1","status":"failed"}"#.utf8)) == .noMatch)
        #expect(check(id: "msg_2") == .noMatch)
        #expect(check(secret: "whsec_b3RoZXI=") == .noMatch)
        #expect(check(now: 1_800_000_301) == .stale(seconds: 301))
        #expect(check(id: nil) == .missingHeaders)
        #expect(check(signature: "v2," + h.signature.dropFirst(3)) == .noMatch)
    }
}
